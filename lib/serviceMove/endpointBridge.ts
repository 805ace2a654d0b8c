import { KubeObject } from "./kubeRest";
import { MANAGED_BY_LABEL } from "./dependents";

/**
 * The endpoint bridge: every re-created Service with a selector gets its old endpoints at once (swap.ts), and the
 * final DNS swap gets the stand-in's. A re-created Service answers only once kube-proxy knows its
 * endpoints, and the endpointslice and endpoints controllers write those for the new Service some time after its
 * create: 0.7 s on an idle test-bed control plane, tens of seconds behind a backlog (measured by
 * bench/services.bench.ts). For the DNS Service that is an outage of every lookup in the cluster. The stand-in
 * that held the final IP until the swap selects the very same pods, so its EndpointSlices and Endpoints are the
 * new Service's, and are copied to it right after the create: kube-proxy merges every slice labelled with the
 * Service's name, whoever manages it. (After mass moves the controller may not have written the stand-in's yet;
 * the old DNS Service's own, read before its delete, serve then: same selector, same ports.)
 *
 * Any other moved Service's endpoints are the old Service's own slices, read just before its delete: same selector,
 * same pods. Without them DNS answers the new ClusterIP at once while kube-proxy has no endpoints for it, and a
 * connection there is refused (about a second per Service on the node lab).
 *
 * Copied after the create, they still leave a window: kube-proxy programs the new Service without endpoints (a
 * REJECT) and, past its minimum sync period, only a second later with them; on the node lab that was about a
 * second of refused connections per Service. So a moved Service's copies are made before its delete, without an
 * owner: kube-proxy merges them with the old Service's own slices (same endpoints), and the new Service has
 * endpoints from its first sync.
 *
 * Those copies are born the endpointslice controller's (`ownSliceCopies`): its managed-by label and the labels it
 * derived from the Service, no owner, and BRIDGE_COPY_LABEL. The controller deletes a slice of its own label that
 * the Service does not own, but only after it has created the Service's own slices (its reconciler creates before
 * it deletes, read in k8s.io/endpointslice v0.37.2 `finalize`), so the copies serve until the controller's replace
 * them and the mover writes nothing more for them. A copy's own add event queues its Service a second later
 * (endpointSliceChangeMinSyncDelay), well after the delete and create that follow it within milliseconds; an
 * interrupted run's copies go the same way once the Service syncs. Handing the copies over (relabel and owner,
 * one write per Service) or waiting for the controller's own slices (kube-controller-manager writes at 20
 * requests/s: 25 s for 500 moved Services) cost the run that much more.
 *
 * The DNS swap's copies (the stand-in's slices) and copies made after a create (the fallback when a copy before the
 * delete failed) are labelled managed-by cidr-migration.io, which the endpointslice controller leaves alone; they are
 * deleted once the controller's own slices exist, or handed to it (finish.ts). The copied Endpoints are the
 * controller's to take over: it rewrites Endpoints of a Service with a selector whoever created them.
 */

export const BRIDGE_MANAGER = "cidr-migration.io";
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** Marks the copies made before a delete (ownSliceCopies), which carry the controller's managed-by label. */
export const BRIDGE_COPY_LABEL = "cidr-migration.io/bridge-copy";

/** The endpointslice controller's value of MANAGED_BY_LABEL: the slices it writes for a Service with a selector. */
export const SLICE_CONTROLLER = "endpointslice-controller.k8s.io";

export interface BridgeTarget {
  namespace: string;
  name: string;
  uid: string;
}

/** The Service the copies are for; without a uid (made before its create) they have no owner yet. */
export type SliceTarget = Omit<BridgeTarget, "uid"> & { uid?: string };

/** The owner reference a bridge slice gets once its Service exists. */
export function bridgeOwner(target: BridgeTarget) {
  return { apiVersion: "v1", kind: "Service", name: target.name, uid: target.uid, blockOwnerDeletion: true };
}

/** What hands a copy to the endpointslice controller: its label and its owner reference, as on the slices it writes. */
export function handOverPatch(target: BridgeTarget) {
  return { metadata: { labels: { [MANAGED_BY_LABEL]: SLICE_CONTROLLER }, ownerReferences: [{ ...bridgeOwner(target), controller: true }] } };
}

/**
 * A move whose bridge copies the Service's own slices: one with a selector and no hand-made Endpoints, other than
 * the DNS swap (which copies the stand-in's).
 */
export function bridgesOwnSlices(entry: { service: KubeObject; endpoints?: KubeObject; vacate?: unknown }): boolean {
  return !entry.vacate && selectsPods(entry.service) && !entry.endpoints;
}

/** A Service whose endpoints the controllers write: it has a selector. */
export function selectsPods(service: KubeObject): boolean {
  const selector = (service.spec as { selector?: Record<string, string> | null } | undefined)?.selector;
  return selector !== undefined && selector !== null && Object.keys(selector).length > 0;
}

export function bridgeSliceName(service: string, index: number): string {
  return `${service}-cidr-migration-bridge-${index}`.slice(0, 253);
}

/**
 * Copies of `sourceSlices` (the stand-in's, or the moved Service's own after its create), for the new Service,
 * labelled managed-by cidr-migration.io. `keepLabels`: the source is the Service's own, whose labels the controller
 * derived from the Service's (kept, so that the controller finds a handed-over copy as it would write it).
 */
export function bridgeSlices(sourceSlices: KubeObject[], target: SliceTarget, keepLabels = false): KubeObject[] {
  return sourceSlices.map((slice, index) => sliceCopy(slice, index, target,
    { ...(keepLabels ? slice.metadata?.labels : {}), [SERVICE_NAME_LABEL]: target.name, [MANAGED_BY_LABEL]: BRIDGE_MANAGER }));
}

/** Copies of a moved Service's own slices, made before its delete: the controller's, for it to replace (see above). */
export function ownSliceCopies(sourceSlices: KubeObject[], target: Omit<SliceTarget, "uid">): KubeObject[] {
  return sourceSlices.map((slice, index) => sliceCopy(slice, index, target,
    { ...slice.metadata?.labels, [SERVICE_NAME_LABEL]: target.name, [MANAGED_BY_LABEL]: SLICE_CONTROLLER, [BRIDGE_COPY_LABEL]: "true" }));
}

function sliceCopy(slice: KubeObject, index: number, target: SliceTarget, labels: Record<string, string>): KubeObject {
  const copy: KubeObject = {
    apiVersion: slice.apiVersion,
    kind: "EndpointSlice",
    metadata: {
      name: bridgeSliceName(target.name, index),
      namespace: target.namespace,
      labels,
      ...(target.uid ? { ownerReferences: [bridgeOwner({ ...target, uid: target.uid })] } : {}),
    },
  };
  for (const key of ["addressType", "endpoints", "ports"]) if (slice[key] !== undefined) copy[key] = structuredClone(slice[key]);
  return copy;
}

/** A copy of the stand-in's Endpoints (its addresses and ports) under the new Service's name. */
export function bridgeEndpoints(standIn: KubeObject | undefined, target: BridgeTarget): KubeObject | undefined {
  if (!standIn || !Array.isArray(standIn.subsets) || standIn.subsets.length === 0) return undefined;
  return { apiVersion: "v1", kind: "Endpoints", metadata: { name: target.name, namespace: target.namespace }, subsets: structuredClone(standIn.subsets) };
}

/** The controller's own slices for the Service `uid`: once one exists, the bridge can go. */
export function controllerSlicesOf(slices: KubeObject[], uid: string): KubeObject[] {
  return slices.filter((s) => s.metadata?.labels?.[MANAGED_BY_LABEL] === SLICE_CONTROLLER
    && (s.metadata?.ownerReferences ?? []).some((ref) => ref.uid === uid));
}
