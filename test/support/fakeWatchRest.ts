import { KubeObject, KubeRest } from "../../lib/serviceMove/kubeRest";

/**
 * A rest with one list (or one-page read) at resourceVersion 41 and one watch: the test sends the watch's events
 * and ends it, and reads the calls made.
 */
export function fakeWatchRest(items: KubeObject[] = []) {
  const calls: Array<{ method: string; path: string; query?: Record<string, string> }> = [];
  let send: ((type: string, object: KubeObject) => void) | undefined;
  let end: ((err?: Error) => void) | undefined;
  let stopped = false;
  const rest = {
    async listAt(path: string, query: Record<string, string> = {}) {
      calls.push({ method: "list", path, query });
      return { items, resourceVersion: "41" };
    },
    async get(path: string) {
      calls.push({ method: "get", path });
      return { metadata: { resourceVersion: "41" }, items };
    },
    watch(path: string, query: Record<string, string>, onEvent: (type: string, object: KubeObject) => void, onEnd: (err?: Error) => void) {
      calls.push({ method: "watch", path, query });
      send = onEvent;
      end = onEnd;
      return { stop: () => { stopped = true; } };
    },
  } as unknown as KubeRest;
  return { rest, calls, send: (type: string, object: KubeObject) => send!(type, object), end: (err?: Error) => end!(err), stopped: () => stopped };
}
