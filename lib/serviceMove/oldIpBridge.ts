import { KubeObject, KubeRest } from "./kubeRest";
import { retryOnConflict } from "./retryOnConflict";
import { BRIDGE_ANNOTATION } from "./ipAnnotations";
import { Annotated, annotatedAddresses, annotationOf } from "./annotatedAddresses";

/**
 * The old-ClusterIP bridge (config services.bridgeOldIps): a moved Service keeps answering at its old ClusterIP,
 * as one more entry in its spec.externalIPs (kube-proxy routes an external IP to the same endpoints, for pods as for
 * anyone), until every pod has been re-created and can no longer hold the old address from before the move. A
 * dual-stack Service is bridged in both families. The annotation says which entries are ours, so the removal at the
 * end takes those and nothing the user wrote.
 */

export { BRIDGE_ANNOTATION };

/** A Service's spec.externalIPs, or none. */
export function externalIpsOf(service: KubeObject): string[] {
  const ips = (service.spec as { externalIPs?: unknown } | undefined)?.externalIPs;
  return Array.isArray(ips) ? ips.filter((ip): ip is string => typeof ip === "string") : [];
}

/**
 * The body with its old ClusterIPs bridged: appended to spec.externalIPs and named in the annotation. An address the
 * user already lists answers there anyway: it is left out of ours, and the removal will not touch it.
 */
export function withOldIpBridge(body: KubeObject, oldIps: readonly string[]): KubeObject {
  const existing = externalIpsOf(body);
  const ours = oldIps.filter((ip) => !existing.includes(ip));
  if (ours.length === 0) return body;
  const bridged = structuredClone(body);
  bridged.spec = { ...(bridged.spec as Record<string, unknown> | undefined), externalIPs: [...existing, ...ours] };
  bridged.metadata = { ...bridged.metadata, annotations: { ...bridged.metadata?.annotations, [BRIDGE_ANNOTATION]: annotationOf(ours) } };
  return bridged;
}

/** The old IPs a Service is bridged at, when it is. */
export function bridgedIpsOf(service: Annotated): string[] | undefined {
  return annotatedAddresses(service, BRIDGE_ANNOTATION);
}

/**
 * The merge patch that ends a Service's bridge: its externalIPs as they were before (the field gone when the user
 * had none) and the annotation gone, conditioned on the resourceVersion read. Undefined: no bridge on it.
 */
export function bridgeRemovalPatch(service: KubeObject): Record<string, unknown> | undefined {
  const ips = bridgedIpsOf(service);
  if (ips === undefined) return undefined;
  const kept = externalIpsOf(service).filter((e) => !ips.includes(e));
  return {
    metadata: { resourceVersion: service.metadata?.resourceVersion, annotations: { [BRIDGE_ANNOTATION]: null } },
    spec: { externalIPs: kept.length > 0 ? kept : null },
  };
}

/**
 * Ends every bridge in the cluster (found by the annotation, so an interrupted earlier run's are ended too), each
 * patch conditioned on the version read and retried on a conflict. Returns "namespace/name old-ip" per Service.
 */
export async function removeOldIpBridges(rest: KubeRest): Promise<string[]> {
  const bridged = (await rest.list("/api/v1/services")).filter((s) => bridgedIpsOf(s) !== undefined);
  const removed: string[] = [];
  for (const service of bridged) {
    const { namespace = "", name = "" } = service.metadata ?? {};
    // spelt out rather than kubeRest's `paths`: the dynamic provider serializes this function, and a captured
    // object whose methods call each other does not survive that
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`;
    const ips = annotationOf(bridgedIpsOf(service)!);
    await retryOnConflict(5, async () => {
      const current = await rest.getOptional(path);
      const patch = current ? bridgeRemovalPatch(current) : undefined;
      if (patch) await rest.mergePatch(path, patch);
    });
    removed.push(`${namespace}/${name} ${ips}`);
  }
  return removed;
}

/** A Service to keep answering at `oldIp` while its ClusterIP moves in place (services.strategy etcd-rewrite). */
export interface BridgeTarget {
  namespace: string;
  name: string;
  oldIp: string;
}

/**
 * Before an etcd rewrite: each target gets its current ClusterIP as an externalIP too, through the API, so
 * kube-proxy already routes the old address as an external one when the rewrite moves the ClusterIP away. A
 * Service already bridged, gone, or no longer at `oldIp` (a re-run after the rewrite) is left alone. Returns
 * "namespace/name old-ip" per Service bridged by this call.
 */
export async function openOldIpBridges(rest: KubeRest, targets: readonly BridgeTarget[]): Promise<string[]> {
  const opened: string[] = [];
  for (const target of targets) {
    // spelt out for the same reason as in removeOldIpBridges
    const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/services/${encodeURIComponent(target.name)}`;
    await retryOnConflict(5, async () => {
      const current = await rest.getOptional(path);
      const clusterIP = (current?.spec as { clusterIP?: string } | undefined)?.clusterIP;
      if (!current || clusterIP !== target.oldIp || bridgedIpsOf(current) !== undefined) return;
      const bridged = withOldIpBridge(current, [target.oldIp]);
      if (bridged === current) return; // the user lists that address already
      await rest.mergePatch(path, {
        metadata: { resourceVersion: current.metadata?.resourceVersion, annotations: { [BRIDGE_ANNOTATION]: target.oldIp } },
        spec: { externalIPs: (bridged.spec as { externalIPs: string[] }).externalIPs },
      });
      opened.push(`${target.namespace}/${target.name} ${target.oldIp}`);
    });
  }
  return opened;
}
