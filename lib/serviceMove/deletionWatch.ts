import { KubeObject, KubeRest } from "./kubeRest";

/**
 * Service deletions as a watch reports them, for the re-creating swaps (one watch from the first swap to the end of
 * the bookkeeping). kube-apiserver answers a Service delete only after two more writes, while the Service is already
 * gone from etcd and its name from DNS: the Endpoints of the same name, and the ClusterIP's release (an IPAddress
 * object, from 1.33). A swap that creates on the DELETED event, when it comes before the answer, takes those writes
 * out of the gap its clients feel.
 */
export interface DeletionWatch {
  /**
   * Resolves once the Service with `uid` is reported deleted; never, when the watch has ended first, so a caller
   * races it against its own delete's answer. Asked before the delete is sent, so the event cannot come first.
   */
  deleted(uid: string): Promise<void>;
  /** How many re-creates started on this watch's report, before their delete's answer (the swaps count them). */
  ahead: number;
  stop(): void;
}

export const SERVICES_COLLECTION = "/api/v1/services";

/** Starts the watch at the collection's current resourceVersion (one item read, not the whole list). */
export async function watchDeletions(rest: KubeRest): Promise<DeletionWatch> {
  const page = await rest.get(`${SERVICES_COLLECTION}?limit=1`) as KubeObject & { metadata?: { resourceVersion?: string } };
  const waiting = new Map<string, () => void>();
  const onEvent = (type: string, service: KubeObject) => {
    const uid = service.metadata?.uid;
    if (type !== "DELETED" || !uid) return;
    waiting.get(uid)?.();
    waiting.delete(uid);
  };
  const stream = rest.watch(SERVICES_COLLECTION, { resourceVersion: page.metadata?.resourceVersion ?? "", allowWatchBookmarks: "true" }, onEvent, () => waiting.clear());
  return {
    ahead: 0,
    deleted(uid) {
      return new Promise<void>((resolve) => waiting.set(uid, resolve));
    },
    stop() {
      waiting.clear();
      stream.stop();
    },
  };
}
