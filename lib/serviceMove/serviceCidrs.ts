import { cidrContains, familyOf, normalizeCidr } from "../net/cidr";
import { faultPoint } from "./faultHook";
import { isStatus, KubeObject, KubeRest } from "./kubeRest";
import { sleep } from "../concurrency/sleep";

/**
 * The default Service range on the ServiceCIDR API (networking.k8s.io/v1, 1.33+), following the upstream procedure
 * (Kubernetes docs "Reconfigure default Service IP ranges"; test/integration/servicecidr TestMigrateServiceCIDR):
 *
 * open, before the first Service moves:
 *   1. a ServiceCIDR for the new range exists and is Ready, so creates at planned IPs in it are allowed;
 *   2. the default ServiceCIDR `kubernetes` (made from the old flag, never updated by the apiserver) is deleted.
 *      It stays Terminating under its finalizer while IPAddress objects remain in it, and allocates nothing new.
 * close, after every Service (default/kubernetes and the DNS Service last) left the old range:
 *   3. the old default is gone, and the apiserver, now on the new flag, has re-created `kubernetes` from it;
 *   4. the temporary ServiceCIDR is deleted: the new default covers all its addresses.
 *
 * Each step reads what the cluster holds and does only what is missing, so a re-run after a crash anywhere
 * converges. An expansion (new range containing the old) follows the same steps and moves no Service: the old
 * default's addresses are all covered by the temporary one, so its finalizer goes at once.
 */

export const DEFAULT_SERVICE_CIDR = "kubernetes";
export const SERVICE_CIDR_FINALIZER = "networking.k8s.io/service-cidr-finalizer";
const SERVICE_CIDRS = "/apis/networking.k8s.io/v1/servicecidrs";
const IP_ADDRESSES = "/apis/networking.k8s.io/v1/ipaddresses";

export interface ServiceCidrSwitchPlan {
  /** the ServiceCIDR the run creates for the new range, and deletes at the end */
  temporary: { name: string; cidrs: string[] };
  /** the default ServiceCIDR: its range before and after */
  default: { name: string; from: string[]; to: string[] };
  /** the new range contains the old: no Service moves */
  expansion: boolean;
}

/** A DNS-1123 name for the temporary ServiceCIDR of a range: "10.100.0.0/16" → "cidr-migration-10-100-0-0-16". */
export function temporaryServiceCidrName(cidr: string): string {
  return `cidr-migration-${normalizeCidr(cidr).toLowerCase().replace(/[.:/]/g, "-")}`;
}

/**
 * `from` and `to` are ranges as --service-cluster-ip-range lists them: one, or a dual-stack pair comma-separated,
 * primary first (issue 17). The temporary ServiceCIDR holds every new range. Adding a family (one range to a pair)
 * takes the same steps: the temporary one covers the kept family's addresses, so the old default goes at once, and
 * the apiserver re-creates it from the new pair.
 */
export function planServiceCidrSwitch(from: string, to: string): ServiceCidrSwitchPlan {
  const oldRanges = from.split(",").map(normalizeCidr);
  const newRanges = to.split(",").map(normalizeCidr);
  const covered = (range: string) => newRanges.some((r) => familyOf(r) === familyOf(range) && cidrContains(r, range));
  return {
    temporary: { name: temporaryServiceCidrName(newRanges[0]), cidrs: newRanges },
    default: { name: DEFAULT_SERVICE_CIDR, from: oldRanges, to: newRanges },
    expansion: oldRanges.every(covered),
  };
}

export interface ServiceCidrView {
  name: string;
  uid?: string;
  cidrs: string[];
  terminating: boolean;
  ready: boolean;
}

export interface IpAddressView {
  ip: string;
  /** "Service namespace/name", from parentRef */
  holder: string;
}

function cidrsOf(object: KubeObject): string[] {
  const spec = object.spec as { cidrs?: string[] } | undefined;
  return (spec?.cidrs ?? []).map(normalizeCidr);
}

function viewOf(object: KubeObject): ServiceCidrView {
  const conditions = ((object.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions) ?? [];
  return {
    name: object.metadata?.name ?? "",
    uid: object.metadata?.uid,
    cidrs: cidrsOf(object),
    terminating: object.metadata?.deletionTimestamp !== undefined,
    ready: conditions.some((c) => c.type === "Ready" && c.status === "True"),
  };
}

export async function listServiceCidrs(rest: KubeRest): Promise<ServiceCidrView[]> {
  return (await rest.list(SERVICE_CIDRS)).map(viewOf);
}

export async function readServiceCidr(rest: KubeRest, name: string): Promise<ServiceCidrView | undefined> {
  const object = await rest.getOptional(`${SERVICE_CIDRS}/${name}`);
  return object ? viewOf(object) : undefined;
}

/** IPAddress objects whose address lies in one of `cidrs`, with the Service each belongs to. */
export async function ipAddressesIn(rest: KubeRest, cidrs: string[]): Promise<IpAddressView[]> {
  const items = await rest.list(IP_ADDRESSES);
  return items.flatMap((item) => {
    const ip = item.metadata?.name ?? "";
    if (!cidrs.some((cidr) => safeContains(cidr, ip))) return [];
    const parent = (item.spec as { parentRef?: { resource?: string; namespace?: string; name?: string } } | undefined)?.parentRef;
    const holder = parent ? `${parent.resource === "services" ? "Service" : parent.resource ?? "?"} ${parent.namespace ? `${parent.namespace}/` : ""}${parent.name ?? "?"}` : "no parentRef";
    return [{ ip, holder }];
  }).sort((a, b) => a.ip.localeCompare(b.ip));
}

function safeContains(cidr: string, ip: string): boolean {
  try {
    return cidrContains(cidr, ip);
  } catch {
    return false;
  }
}

const sameCidrs = (a: string[], b: string[]) => a.length === b.length && a.every((c, i) => c === b[i]);

/** How long a ServiceCIDR gets to become Ready or to go, by default (the ServiceCidrSwitch resource's too). */
export const SERVICE_CIDR_SWITCH_TIMEOUT_MS = 120_000;

async function waitFor<T>(what: () => Promise<T | undefined>, timeoutMs: number, pollMs = 250): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await what();
    if (found !== undefined || Date.now() >= deadline) return found;
    await sleep(pollMs);
  }
}

export interface SwitchStepReport {
  /** what this run did, in order, e.g. "created ServiceCIDR cidr-migration-10-100-0-0-16 [10.100.0.0/16]" */
  actions: string[];
}

/** Steps 1 and 2. Safe to repeat: after a finished run (default already on the new range) it does nothing. */
export async function openServiceCidrs(rest: KubeRest, plan: ServiceCidrSwitchPlan, timeoutMs = SERVICE_CIDR_SWITCH_TIMEOUT_MS): Promise<SwitchStepReport> {
  const actions: string[] = [];
  const current = await readServiceCidr(rest, plan.default.name);
  if (current && !current.terminating && sameCidrs(current.cidrs, plan.default.to)) return { actions };
  if (current && !current.terminating && !sameCidrs(current.cidrs, plan.default.from)) {
    throw new Error(`ServiceCIDR ${plan.default.name} holds ${current.cidrs.join(",")}, neither the old range ${plan.default.from.join(",")} nor the new ${plan.default.to.join(",")}: check cidr-migration:serviceCidr.from against the cluster (kubectl get servicecidr ${plan.default.name} -o yaml)`);
  }

  let temporary = await readServiceCidr(rest, plan.temporary.name);
  if (temporary?.terminating) {
    // an earlier run's close was cut off after its delete: let it go, then create it again
    await waitFor(async () => ((await readServiceCidr(rest, plan.temporary.name)) ? undefined : true), timeoutMs);
    temporary = await readServiceCidr(rest, plan.temporary.name);
  }
  if (!temporary) {
    try {
      await rest.create(SERVICE_CIDRS, {
        apiVersion: "networking.k8s.io/v1", kind: "ServiceCIDR",
        metadata: { name: plan.temporary.name, labels: { "app.kubernetes.io/managed-by": "cidr-migration" } },
        spec: { cidrs: plan.temporary.cidrs },
      });
      actions.push(`created ServiceCIDR ${plan.temporary.name} [${plan.temporary.cidrs.join(", ")}]`);
      faultPoint("after-service-cidr-create", `servicecidr/${plan.temporary.name}`);
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }
  } else if (!sameCidrs(temporary.cidrs, plan.temporary.cidrs)) {
    throw new Error(`ServiceCIDR ${plan.temporary.name} exists with ${temporary.cidrs.join(",")}, not ${plan.temporary.cidrs.join(",")}: delete it (kubectl delete servicecidr ${plan.temporary.name}) and run again`);
  }
  // KCM's servicecidrs controller marks it Ready; before that the apiserver allocates nothing from it
  const ready = await waitFor(async () => ((await readServiceCidr(rest, plan.temporary.name))?.ready ? true : undefined), timeoutMs);
  if (!ready) {
    throw new Error(`ServiceCIDR ${plan.temporary.name} did not become Ready within ${Math.round(timeoutMs / 1000)} s: check that kube-controller-manager runs its service-cidr controller; nothing has moved yet, run again`);
  }

  if (current && !current.terminating) {
    await rest.delete(`${SERVICE_CIDRS}/${plan.default.name}`, { preconditions: { uid: current.uid } });
    actions.push(`deleted ServiceCIDR ${plan.default.name} [${plan.default.from.join(", ")}] (Terminating while addresses remain in it)`);
    faultPoint("after-default-service-cidr-delete", `servicecidr/${plan.default.name}`);
  }
  return { actions };
}

/** Steps 3 and 4. Fails, naming every address still held in the old range, when the old default cannot go. */
export async function closeServiceCidrs(rest: KubeRest, plan: ServiceCidrSwitchPlan, timeoutMs = SERVICE_CIDR_SWITCH_TIMEOUT_MS): Promise<SwitchStepReport> {
  const actions: string[] = [];
  const replaced = await waitFor(async () => {
    const current = await readServiceCidr(rest, plan.default.name);
    return current && !current.terminating && sameCidrs(current.cidrs, plan.default.to) ? current : undefined;
  }, timeoutMs, 500);
  if (!replaced) {
    const current = await readServiceCidr(rest, plan.default.name);
    if (current && !current.terminating && sameCidrs(current.cidrs, plan.default.from)) {
      throw new Error(`the apiserver re-created ServiceCIDR ${plan.default.name} with the old range ${plan.default.from.join(",")}: a kube-apiserver still runs with --service-cluster-ip-range=${plan.default.from.join(",")}; finish the control-plane phase on every node, then run again`);
    }
    const held = plan.expansion ? [] : await ipAddressesIn(rest, plan.default.from);
    const heldText = held.length > 0 ? `; ${held.length} address(es) are still held in it: ${held.slice(0, 10).map((a) => `${a.ip} (${a.holder})`).join(", ")}${held.length > 10 ? ", …" : ""}` : "";
    throw new Error(`the old default ServiceCIDR ${plan.default.name} [${plan.default.from.join(",")}] is ${current ? (current.terminating ? "still Terminating" : `on ${current.cidrs.join(",")}`) : "gone but not re-created by the apiserver"} after ${Math.round(timeoutMs / 1000)} s${heldText}; move those Services into ${plan.default.to.join(",")} (or check that kube-apiserver runs on the new range), then run again`);
  }

  const temporary = await readServiceCidr(rest, plan.temporary.name);
  if (temporary && !temporary.terminating) {
    await rest.delete(`${SERVICE_CIDRS}/${plan.temporary.name}`);
    actions.push(`deleted ServiceCIDR ${plan.temporary.name} [${plan.temporary.cidrs.join(", ")}] (covered by the new default)`);
    faultPoint("after-temporary-service-cidr-delete", `servicecidr/${plan.temporary.name}`);
  }
  const gone = await waitFor(async () => ((await readServiceCidr(rest, plan.temporary.name)) ? undefined : true), timeoutMs, 500);
  if (!gone) {
    throw new Error(`ServiceCIDR ${plan.temporary.name} is still Terminating after ${Math.round(timeoutMs / 1000)} s although the default ${plan.default.name} covers it: check kube-controller-manager's service-cidr controller, then run again`);
  }
  return { actions };
}
