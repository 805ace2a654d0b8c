import { strict as assert } from "assert";
import { KubeObject, KubeRest } from "../../../lib/serviceMove/kubeRest";
import { mirrorSlices } from "../../../lib/serviceMove/sliceMirror";

const slice = (namespace: string, service: string, name: string, manager = "endpointslice-controller.k8s.io"): KubeObject => ({
  metadata: { name, namespace, labels: { "kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": manager } },
});

/** A rest with one list and one watch: the test sends the watch's events and ends it. */
function fakeRest(items: KubeObject[]) {
  const calls: Array<{ method: string; path: string; query: Record<string, string> }> = [];
  let send: ((type: string, object: KubeObject) => void) | undefined;
  let end: ((err?: Error) => void) | undefined;
  let stopped = false;
  const rest = {
    async listAt(path: string, query: Record<string, string> = {}) {
      calls.push({ method: "list", path, query });
      return { items, resourceVersion: "41" };
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

describe("the slice mirror (sliceMirror.ts)", () => {
  const names = (slices: KubeObject[] | undefined) => slices?.map((s) => s.metadata?.name).sort();

  it("lists the controller's and the bridge's slices once, then follows the watch from the list's resourceVersion", async () => {
    const fake = fakeRest([slice("shop", "web", "web-1"), slice("shop", "db", "db-1"), slice("ops", "web", "web-9")]);
    const mirror = await mirrorSlices(fake.rest, "/apis/discovery.k8s.io/v1/endpointslices");
    const selector = "endpointslice.kubernetes.io/managed-by in (endpointslice-controller.k8s.io,cidr-migration.io)";
    assert.deepEqual(fake.calls, [
      { method: "list", path: "/apis/discovery.k8s.io/v1/endpointslices", query: { labelSelector: selector } },
      { method: "watch", path: "/apis/discovery.k8s.io/v1/endpointslices", query: { labelSelector: selector, resourceVersion: "41", allowWatchBookmarks: "true" } },
    ]);
    assert.deepEqual(names(mirror.slicesOf("shop", "web")), ["web-1"], "per namespace and Service");
    assert.deepEqual(names(mirror.slicesOf("shop", "cart")), []);

    fake.send("ADDED", slice("shop", "web", "web-cidr-migration-bridge-0", "cidr-migration.io"));
    fake.send("MODIFIED", { ...slice("shop", "web", "web-1"), endpoints: [{ addresses: ["10.244.1.7"] }] });
    fake.send("DELETED", slice("shop", "db", "db-1"));
    fake.send("BOOKMARK", { metadata: { resourceVersion: "57" } });
    assert.deepEqual(names(mirror.slicesOf("shop", "web")), ["web-1", "web-cidr-migration-bridge-0"]);
    assert.deepEqual(mirror.slicesOf("shop", "web")!.find((s) => s.metadata?.name === "web-1")!.endpoints, [{ addresses: ["10.244.1.7"] }], "the latest version");
    assert.deepEqual(names(mirror.slicesOf("shop", "db")), []);
    mirror.stop();
    assert.ok(fake.stopped(), "stop ends the watch");
    assert.equal(mirror.slicesOf("shop", "web"), undefined, "a stopped mirror vouches for nothing");
  });

  it("answers nothing once the watch has ended, so callers read for themselves", async () => {
    const fake = fakeRest([slice("shop", "web", "web-1")]);
    const mirror = await mirrorSlices(fake.rest, "/apis/discovery.k8s.io/v1/endpointslices");
    fake.end(new Error("watch /apis/discovery.k8s.io/v1/endpointslices: too old resource version"));
    assert.equal(mirror.slicesOf("shop", "web"), undefined);
  });
});
