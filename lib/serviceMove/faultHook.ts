/**
 * Crash injection for the fault tests: `CIDR_MIGRATION_FAULT=<point>[:<namespace>/<name>]` makes this process
 * SIGKILL itself when the move of that Service (any Service when no key is given) reaches <point>. SIGKILL, not
 * an exception: no finally block, no flush, no cleanup runs, exactly as when the machine running `pulumi up` dies.
 * Unset (always, outside tests), every call is one environment lookup.
 */

export const FAULT_ENV = "CIDR_MIGRATION_FAULT";

/** Every point where a move can be cut, in the order a move passes them. */
export const FAULT_POINTS = [
  // services.routeNewIpsFirst: the planned IP is an externalIP of the old Service, nothing journaled yet
  "after-route-ahead",
  "before-journal",
  "after-journal",
  "after-detach-dependents",
  // services.moveInPlace: the stand-ins exist; the Service is ExternalName, naming its stand-in
  "after-hop-stand-ins",
  "after-hop-out",
  "after-delete",
  "after-create-conflict",
  "after-create",
  "after-endpoints-restore",
  "after-dependents-relink",
  "after-verify",
  "after-journal-remove",
  // the kubernetes Service (re-created by the apiserver)
  "after-kubernetes-delete",
  // the DNS stand-in and the final swap
  "after-stand-in-create",
  "after-old-dns-delete",
  "after-vacate",
  "after-dns-bridge",
  // the default ServiceCIDR switch (key "servicecidr/<name>")
  "after-service-cidr-create",
  "after-default-service-cidr-delete",
  "after-temporary-service-cidr-delete",
  // the etcd rewrite (key: the etcd key of the object, e.g. "/registry/services/specs/default/web")
  "rewrite-after-journal",
  "rewrite-after-txn",
  // a control-plane node's etcd member removed and added again at its new peer URL (key: the member's name)
  "member-replace-after-intent",
  "member-replace-after-remove",
  "member-replace-after-add",
] as const;

export type FaultPoint = typeof FAULT_POINTS[number];

export function faultPoint(point: FaultPoint, key: string): void {
  const spec = process.env[FAULT_ENV];
  if (!spec) return;
  const separator = spec.indexOf(":");
  const wantedPoint = separator === -1 ? spec : spec.slice(0, separator);
  const wantedKey = separator === -1 ? undefined : spec.slice(separator + 1);
  if (wantedPoint === point && (wantedKey === undefined || wantedKey === key)) process.kill(process.pid, "SIGKILL");
}
