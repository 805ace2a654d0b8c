import { MANAGED_BY_LABEL } from "./dependents";
import { BRIDGE_MANAGER, SERVICE_NAME_LABEL, SLICE_CONTROLLER } from "./endpointBridge";
import { KubeObject, KubeRest } from "./kubeRest";

/**
 * The EndpointSlices a move reads (the endpointslice controller's, and the bridge copies of endpointBridge.ts),
 * mirrored by one list and one watch from the first swap to the end of the bookkeeping. A swap copies its
 * Service's endpoints before the delete, and its bookkeeping looks for copies of ours left to hand over or remove;
 * read from the mirror, neither costs a request, where they cost a list per Service each (bench:services: about a
 * quarter of the swap time on 500 Services, on a control plane the moves already keep busy).
 *
 * The mirror is as fresh as a read: the watch delivers each change within milliseconds, and a list served from
 * the apiserver's watch cache is no fresher. Once the watch has ended (closed by the apiserver, an error),
 * `slicesOf` answers undefined and the caller reads for itself.
 */
export interface SliceMirror {
  /** The mirrored slices labelled with Service `service` in `namespace`, or undefined once the mirror is not kept current. */
  slicesOf(namespace: string, service: string): KubeObject[] | undefined;
  stop(): void;
}

const keyOf = (namespace: string, service: string) => `${namespace}/${service}`;

/** Starts the mirror of `collection` (the cluster-wide EndpointSlice path of the served discovery version). */
export async function mirrorSlices(rest: KubeRest, collection: string): Promise<SliceMirror> {
  const labelSelector = `${MANAGED_BY_LABEL} in (${SLICE_CONTROLLER},${BRIDGE_MANAGER})`;
  const byService = new Map<string, Map<string, KubeObject>>();
  const apply = (type: string, slice: KubeObject) => {
    const service = slice.metadata?.labels?.[SERVICE_NAME_LABEL];
    const name = slice.metadata?.name;
    if (!service || !name) return;
    const key = keyOf(slice.metadata?.namespace ?? "", service);
    const slices = byService.get(key) ?? new Map<string, KubeObject>();
    if (type === "DELETED") slices.delete(name);
    else if (type === "ADDED" || type === "MODIFIED") slices.set(name, slice);
    if (slices.size > 0) byService.set(key, slices);
    else byService.delete(key);
  };
  const { items, resourceVersion } = await rest.listAt(collection, { labelSelector });
  for (const slice of items) apply("ADDED", slice);
  let current = true;
  const stream = rest.watch(collection, { labelSelector, resourceVersion, allowWatchBookmarks: "true" }, apply, () => { current = false; });
  return {
    slicesOf: (namespace, service) => (current ? [...(byService.get(keyOf(namespace, service))?.values() ?? [])] : undefined),
    stop() {
      current = false;
      stream.stop();
    },
  };
}
