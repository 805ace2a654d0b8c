import { KubeObject, OwnerReference } from "./kubeRest";
import { userMetadata } from "./recreateBody";

/**
 * What the cluster removes along with a Service, and how each piece comes back. Observed on the v1.20 test bed
 * (test/integration/serviceRecreation.test.ts proves each case):
 *
 * - The Endpoints of the same name go with every Service delete, even when the Service is re-created 4 ms later
 *   (the apiserver's Service delete removes them, and the endpoints controller deletes them again whenever it
 *   syncs while no Service exists). For a Service with a selector the endpoints controller writes them anew. For a
 *   selector-less Service they were hand-made and nothing re-creates them: they are journaled and restored.
 * - EndpointSlices made by the endpointslice controller (owned by the Service) or mirrored from hand-made
 *   Endpoints (owned by the Endpoints) are garbage-collected; their controllers derive them again from the new
 *   Service and the restored Endpoints. They are not restored by us: a copy would duplicate the controllers' own.
 * - Any other object whose ownerReferences name the Service (or those Endpoints) is deleted by the garbage
 *   collector, because the re-created Service has a new uid. Those are detached (the owner reference removed)
 *   before the delete, so they are never deleted, and re-linked to the new uid afterwards. If one was lost anyway
 *   (a crash between an old run's delete and its detach), it is re-created from the journal.
 */

// Arrays, not Sets, here and in everything the provider reaches: the SDK cannot serialize a Set or Map by value.
export const ENDPOINTSLICE_CONTROLLERS = ["endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"];
export const MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";

export function hasSelector(service: KubeObject): boolean {
  const selector = (service.spec as { selector?: Record<string, string> } | undefined)?.selector;
  return selector !== undefined && selector !== null && Object.keys(selector).length > 0;
}

/** An object a Kubernetes controller derives again by itself once the Service (or Endpoints) is back. */
export function isRederivedByController(object: KubeObject): boolean {
  if (object.kind !== "EndpointSlice") return false;
  return ENDPOINTSLICE_CONTROLLERS.includes(object.metadata?.labels?.[MANAGED_BY_LABEL] ?? "");
}

export function ownerUids(object: KubeObject): string[] {
  return (object.metadata?.ownerReferences ?? []).map((ref) => ref.uid);
}

export function isOwnedByAny(object: KubeObject, uids: ReadonlySet<string>): boolean {
  return ownerUids(object).some((uid) => uids.has(uid));
}

/** The object's owner references without those naming one of `uids` (the detach before the delete). */
export function withoutOwners(refs: OwnerReference[] | undefined, uids: ReadonlySet<string>): OwnerReference[] {
  return (refs ?? []).filter((ref) => !uids.has(ref.uid));
}

/**
 * The owner references a dependent must end with: those it had before the move, with the old Service's and old
 * Endpoints' uids replaced by the new ones, plus any reference someone else added meanwhile.
 */
export function relinkedOwners(journaled: OwnerReference[] | undefined, current: OwnerReference[] | undefined, uidMap: ReadonlyMap<string, string>): OwnerReference[] {
  const wanted = (journaled ?? []).map((ref) => (uidMap.has(ref.uid) ? { ...ref, uid: uidMap.get(ref.uid)! } : ref));
  const wantedUids = new Set(wanted.map((ref) => ref.uid));
  const oldUids = new Set(uidMap.keys());
  const extra = (current ?? []).filter((ref) => !wantedUids.has(ref.uid) && !oldUids.has(ref.uid));
  return [...wanted, ...extra];
}

export function sameOwners(a: OwnerReference[] | undefined, b: OwnerReference[] | undefined): boolean {
  const key = (refs: OwnerReference[] | undefined) => JSON.stringify((refs ?? []).map((r) => [r.apiVersion, r.kind, r.name, r.uid, r.controller ?? false, r.blockOwnerDeletion ?? false]).sort());
  return key(a) === key(b);
}

/** A create body for a lost object: its user fields, owners re-linked; status is the server's. */
export function restorableCopy(object: KubeObject, uidMap: ReadonlyMap<string, string>): KubeObject {
  const copy: KubeObject = structuredClone(object);
  delete copy.status;
  copy.metadata = userMetadata(object.metadata);
  if (copy.metadata.ownerReferences) copy.metadata.ownerReferences = relinkedOwners(copy.metadata.ownerReferences, [], uidMap);
  return copy;
}

/** What makes hand-made Endpoints what they are: labels, annotations and subsets. */
export function endpointsContent(endpoints: KubeObject | undefined): unknown {
  if (!endpoints) return undefined;
  const meta = endpoints.metadata ?? {};
  return { labels: meta.labels ?? {}, annotations: meta.annotations ?? {}, subsets: endpoints.subsets ?? [] };
}

export function sameEndpoints(a: KubeObject | undefined, b: KubeObject | undefined): boolean {
  return JSON.stringify(endpointsContent(a)) === JSON.stringify(endpointsContent(b));
}
