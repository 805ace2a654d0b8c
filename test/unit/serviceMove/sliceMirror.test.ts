import { strict as assert } from "assert";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";
import { fakeWatchRest } from "../../support/fakeWatchRest";
import { mirrorSlices } from "../../../lib/serviceMove/sliceMirror";

const slice = (namespace: string, service: string, name: string, manager = "endpointslice-controller.k8s.io"): KubeObject => ({
  metadata: { name, namespace, labels: { "kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": manager } },
});

describe("the slice mirror (sliceMirror.ts)", () => {
  const names = (slices: KubeObject[] | undefined) => slices?.map((s) => s.metadata?.name).sort();

  it("lists the controller's and the bridge's slices once, then follows the watch from the list's resourceVersion", async () => {
    const fake = fakeWatchRest([slice("shop", "web", "web-1"), slice("shop", "db", "db-1"), slice("ops", "web", "web-9")]);
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
    const fake = fakeWatchRest([slice("shop", "web", "web-1")]);
    const mirror = await mirrorSlices(fake.rest, "/apis/discovery.k8s.io/v1/endpointslices");
    fake.end(new Error("watch /apis/discovery.k8s.io/v1/endpointslices: too old resource version"));
    assert.equal(mirror.slicesOf("shop", "web"), undefined);
  });
});
