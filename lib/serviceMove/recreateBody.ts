import { KubeObject, ObjectMeta } from "./kubeRest";
import { correctIpAnnotations } from "./ipAnnotations";
import { FamilyMove } from "./moveTypes";

/**
 * The body that re-creates a Service at its planned ClusterIP, built from the live (journaled) object.
 *
 * Fields are dropped by a deny-list of what the apiserver sets, never copied by an allow-list of what we know:
 * a field this code has never heard of (a newer API's, or a vendor's) is the user's and survives. So every user
 * field stays: labels, annotations, ownerReferences, finalizers, selector, ports (nodePort, name, protocol,
 * targetPort), type, sessionAffinity(+Config), externalTrafficPolicy, healthCheckNodePort, loadBalancerIP,
 * loadBalancerSourceRanges, externalIPs, publishNotReadyAddresses, ipFamilies/ipFamilyPolicy, ...
 * Only spec.clusterIP/clusterIPs change, to the planned IP, and annotations that carried the old IP.
 */

/** Metadata the apiserver sets; a create must not (or cannot) carry them. */
export const SERVER_SET_METADATA = [
  "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink",
  "deletionTimestamp", "deletionGracePeriodSeconds",
] as const;

/** Finalizers the garbage collector adds while it deletes; they belong to the old object's deletion only. */
const DELETION_FINALIZERS = ["orphan", "foregroundDeletion"];

export interface RecreateBody {
  body: KubeObject;
  /** Annotation keys whose value carried the old IP. */
  correctedAnnotations: string[];
  /** The user's last-applied manifest pinned the old IP (their manifest must change too). */
  pinnedInLastApplied: boolean;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** A copy of metadata without server-set fields (name, namespace, labels, annotations, owners, ... stay). */
export function userMetadata(metadata: ObjectMeta | undefined): ObjectMeta {
  const meta: ObjectMeta = clone(metadata ?? {});
  for (const key of SERVER_SET_METADATA) delete meta[key];
  if (meta.finalizers) {
    meta.finalizers = meta.finalizers.filter((f) => !DELETION_FINALIZERS.includes(f));
    if (meta.finalizers.length === 0) delete meta.finalizers;
  }
  return meta;
}

export function spec(service: KubeObject): Record<string, unknown> {
  return (service.spec ?? {}) as Record<string, unknown>;
}

export function clusterIpOf(service: KubeObject): string | undefined {
  const ip = spec(service).clusterIP;
  return typeof ip === "string" ? ip : undefined;
}

/** All ClusterIPs (both families on a dual-stack Service). */
export function clusterIpsOf(service: KubeObject): string[] {
  const s = spec(service);
  if (Array.isArray(s.clusterIPs) && s.clusterIPs.length > 0) return s.clusterIPs as string[];
  return typeof s.clusterIP === "string" && s.clusterIP !== "" ? [s.clusterIP] : [];
}

/** Whether the Service holds every one of `ips` as a ClusterIP. */
export function holdsClusterIps(service: KubeObject, ips: readonly string[]): boolean {
  const held = clusterIpsOf(service);
  return ips.every((ip) => held.includes(ip));
}

/** Headless and ExternalName Services hold no ClusterIP: a CIDR move leaves them untouched. */
export function holdsNoClusterIp(service: KubeObject): boolean {
  const s = spec(service);
  return s.type === "ExternalName" || s.clusterIP === "None";
}

/**
 * `otherFamily`: a dual-stack Service's second ClusterIP moves in the same re-create; without it, a dual-stack
 * Service's other family keeps its address. ipFamilies and ipFamilyPolicy are kept, so the order is too.
 */
export function buildRecreateBody(original: KubeObject, oldIp: string, plannedIp: string, otherFamily?: FamilyMove): RecreateBody {
  const metadata = userMetadata(original.metadata);
  let corrected = correctIpAnnotations(metadata.annotations, oldIp, plannedIp);
  if (otherFamily) {
    const second = correctIpAnnotations(corrected.annotations, otherFamily.fromIP, otherFamily.toIP);
    corrected = { annotations: second.annotations, changed: [...new Set([...corrected.changed, ...second.changed])], pinnedInLastApplied: corrected.pinnedInLastApplied || second.pinnedInLastApplied };
  }
  if (metadata.annotations) metadata.annotations = corrected.annotations;

  const newSpec = clone(spec(original));
  const ips = clusterIpsOf(original);
  const moves = new Map([[oldIp, plannedIp], ...(otherFamily ? [[otherFamily.fromIP, otherFamily.toIP] as const] : [])]);
  const newIps = ips.length === 0 ? [plannedIp] : ips.map((ip) => moves.get(ip) ?? ip);
  for (const [from, to] of moves) {
    if (!newIps.includes(to)) throw new Error(`Service ${metadata.namespace}/${metadata.name} does not hold ${from} (it holds ${ips.join(", ")}); nothing to move`);
  }
  newSpec.clusterIP = newIps[0];
  newSpec.clusterIPs = newIps;

  const body: KubeObject = { apiVersion: "v1", kind: "Service", metadata, spec: newSpec };
  // Anything else at the top level (except status, which the server owns) is carried along.
  for (const [key, value] of Object.entries(original)) {
    if (!(key in body) && key !== "status") body[key] = clone(value);
  }
  return { body, correctedAnnotations: corrected.changed, pinnedInLastApplied: corrected.pinnedInLastApplied };
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** Objects compared regardless of key order (the apiserver re-orders nothing, but a journal round-trip may). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

/**
 * Field paths where the live Service differs from the body it was created from: every spec field and user
 * metadata field of the body must be there unchanged (the server may add defaults the body did not have).
 */
export function differingUserFields(body: KubeObject, live: KubeObject): string[] {
  const differences: string[] = [];
  const wantMeta = body.metadata ?? {};
  const liveMeta = userMetadata(live.metadata);
  for (const key of ["labels", "annotations", "ownerReferences", "finalizers"] as const) {
    if (isEmpty(wantMeta[key]) && isEmpty(liveMeta[key])) continue;
    if (!same(wantMeta[key], liveMeta[key])) differences.push(`metadata.${key}`);
  }
  const liveSpec = spec(live);
  for (const [key, value] of Object.entries(spec(body))) {
    if (!same(value, liveSpec[key])) differences.push(`spec.${key}`);
  }
  return differences;
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && Object.keys(value as object).length === 0;
}
