import { KubeObject, KubeRest } from "./kubeRest";
import { retryOnConflict } from "./retryOnConflict";
import { inLanes } from "../concurrency/inLanes";
import { externalIpsOf } from "./oldIpBridge";
import { Annotated, annotatedAddresses, annotationOf } from "./annotatedAddresses";

/**
 * The new address routed first (config services.routeNewIpsFirst): before the swaps, each moving Service also
 * answers at its planned ClusterIP, as one more entry in its spec.externalIPs. kube-proxy routes an external IP to
 * the same endpoints, so by the time the re-created Service appears at that address, and DNS starts handing it out,
 * every node already forwards it. Without it, a client that resolves the name right after the move connects to an
 * address kube-proxy has not programmed yet: on the node lab, seconds of timeouts per Service.
 * A dual-stack Service is routed ahead in both families. The annotation says which entries are ours: the re-create
 * body leaves them out, and the sweep removes them from a Service whose move did not happen.
 */
export const AHEAD_ANNOTATION = "cidr-migration.io/new-cluster-ip-ahead";

/**
 * A ClusterIP Service given an externalIP becomes externally accessible, and the apiserver defaults its
 * externalTrafficPolicy ("Cluster"); without externalIPs again it may hold none ("may only be set for
 * externally-accessible services"). So the field goes with our entry when that entry was the only external part.
 */
function dropsTrafficPolicy(service: KubeObject, keptExternalIps: string[]): boolean {
  const type = (service.spec as { type?: string } | undefined)?.type ?? "ClusterIP";
  return keptExternalIps.length === 0 && type === "ClusterIP";
}

/** The planned IPs a Service is routed ahead at, when it is. */
export function routedAheadIpsOf(service: Annotated): string[] | undefined {
  return annotatedAddresses(service, AHEAD_ANNOTATION);
}

/** `service` without our ahead entries and their annotation (the user's own externalIPs stay, in their order). */
export function withoutNewIpAhead(service: KubeObject): KubeObject {
  const ips = routedAheadIpsOf(service);
  if (ips === undefined) return service;
  const plain = structuredClone(service);
  const annotations = { ...plain.metadata?.annotations };
  delete annotations[AHEAD_ANNOTATION];
  plain.metadata = { ...plain.metadata, annotations };
  if (Object.keys(annotations).length === 0) delete plain.metadata.annotations;
  const kept = externalIpsOf(service).filter((e) => !ips.includes(e));
  const spec = { ...(plain.spec as Record<string, unknown>) };
  if (kept.length > 0) spec.externalIPs = kept;
  else delete spec.externalIPs;
  if (dropsTrafficPolicy(service, kept)) delete spec.externalTrafficPolicy;
  plain.spec = spec;
  return plain;
}

/** A Service to route ahead: the live object read for its move, and its planned IPs (one per family it holds). */
export interface AheadTarget {
  live: KubeObject;
  toIPs: string[];
}

const servicePath = (s: KubeObject) =>
  `/api/v1/namespaces/${encodeURIComponent(s.metadata?.namespace ?? "")}/services/${encodeURIComponent(s.metadata?.name ?? "")}`;

/**
 * Routes each target's planned IPs ahead, conditioned on the version read, `lanes` Services at a time, and returns
 * each Service as it now is (the object the move journals), in the targets' order. A Service already routed there,
 * or whose user lists those addresses, is returned as read; one changed meanwhile is read again and retried.
 */
export async function routeNewIpsAhead(rest: KubeRest, targets: readonly AheadTarget[], lanes = 1): Promise<KubeObject[]> {
  const routed: KubeObject[] = new Array(targets.length);
  let failed: unknown;
  await inLanes([...targets.keys()], lanes, async (i) => {
    const { live, toIPs } = targets[i];
    let current = live;
    await retryOnConflict(5, async () => {
      const ours = routedAheadIpsOf(current) ?? [];
      const missing = toIPs.filter((ip) => !ours.includes(ip) && !externalIpsOf(current).includes(ip));
      if (missing.length === 0) return;
      try {
        current = await rest.mergePatch(servicePath(current), {
          metadata: { resourceVersion: current.metadata?.resourceVersion, annotations: { [AHEAD_ANNOTATION]: annotationOf([...ours, ...missing]) } },
          spec: { externalIPs: [...externalIpsOf(current), ...missing] },
        });
      } catch (err) {
        current = (await rest.getOptional(servicePath(current))) ?? current;
        throw err;
      }
    }).catch((err) => { failed ??= err; });
    routed[i] = current;
  }, () => failed !== undefined);
  if (failed !== undefined) throw failed;
  return routed;
}

/**
 * Removes every ahead entry left in the cluster (a Service whose move failed or was undone, or a killed run's), each
 * patch conditioned on the version read. A moved Service has none: its re-create body left it out. Returns
 * "namespace/name ip" per Service.
 */
export async function removeNewIpsAhead(rest: KubeRest): Promise<string[]> {
  const left = (await rest.list("/api/v1/services")).filter((s) => routedAheadIpsOf(s) !== undefined);
  const removed: string[] = [];
  for (const service of left) {
    await retryOnConflict(5, async () => {
      const current = await rest.getOptional(servicePath(service));
      const ips = current ? routedAheadIpsOf(current) : undefined;
      if (!current || ips === undefined) return;
      const kept = externalIpsOf(current).filter((e) => !ips.includes(e));
      await rest.mergePatch(servicePath(current), {
        metadata: { resourceVersion: current.metadata?.resourceVersion, annotations: { [AHEAD_ANNOTATION]: null } },
        spec: { externalIPs: kept.length > 0 ? kept : null, ...(dropsTrafficPolicy(current, kept) ? { externalTrafficPolicy: null } : {}) },
      });
    });
    removed.push(`${service.metadata?.namespace}/${service.metadata?.name} ${annotationOf(routedAheadIpsOf(service)!)}`);
  }
  return removed;
}
