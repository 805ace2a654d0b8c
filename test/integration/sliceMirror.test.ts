// The slice mirror (lib/serviceMove/sliceMirror.ts) and kubeRest's listAt/watch under it, against a real
// kube-apiserver and kube-controller-manager of the test-bed version: the mirror shows what the endpointslice
// controller writes as it writes it, follows a hand-over and a delete, and vouches for nothing once stopped.
import { strict as assert } from "assert";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { mirrorSlices, SliceMirror } from "../../lib/serviceMove/sliceMirror";
import { bridgeSlices, handOverPatch } from "../../lib/serviceMove/endpointBridge";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";
import { runReadyPod } from "../support/serviceShapes";

const NS = "mirror";
const SLICES = `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`;

async function until<T>(what: string, read: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; ) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const addressesOf = (slices: KubeObject[]) => slices.flatMap((s) => ((s.endpoints ?? []) as Array<{ addresses: string[] }>).flatMap((e) => e.addresses)).sort();

describe("the slice mirror on a real apiserver", function () {
  this.timeout(120_000);
  const cluster = useTestCluster({ serviceCidr: "10.96.0.0/16", podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  let mirror: SliceMirror | undefined;

  before(async () => {
    rest = await kubeRest(cluster().kubeConfig());
    await rest.create("/api/v1/namespaces", { metadata: { name: NS } });
    await registerNode(cluster().kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
    await runReadyPod(rest, NS, "web-1", { app: "web" }, "node-1", "10.244.7.5");
  });
  after(() => {
    mirror?.stop();
    rest?.close();
  });

  it("lists, then follows the controller's writes, a hand-over and a delete; a stopped mirror answers nothing", async () => {
    const web = await rest.create(paths.services(NS), { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } });
    // the controller's slice for web, before the mirror starts: the list brings it
    for (const deadline = Date.now() + 30_000; ; ) {
      const slices = await rest.list(SLICES, { labelSelector: "kubernetes.io/service-name=web" });
      if (addressesOf(slices).includes("10.244.7.5")) break;
      if (Date.now() > deadline) throw new Error("no slice for web");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    mirror = await mirrorSlices(rest, "/apis/discovery.k8s.io/v1/endpointslices");
    assert.deepEqual(addressesOf(mirror.slicesOf(NS, "web")!), ["10.244.7.5"], "the list");

    // a Service made after the mirror started: the watch brings its slice
    await rest.create(paths.services(NS), { metadata: { name: "api" }, spec: { selector: { app: "web" }, ports: [{ port: 8080 }] } });
    await until("api's slice in the mirror", () => (addressesOf(mirror!.slicesOf(NS, "api") ?? []).includes("10.244.7.5") ? true : undefined));

    // a bridge copy, made and handed over: the mirror shows it under either manager
    const [copy] = bridgeSlices(mirror.slicesOf(NS, "web")!, { namespace: NS, name: "web" }, true);
    await rest.create(SLICES, copy);
    await until("the copy in the mirror", () => (mirror!.slicesOf(NS, "web")!.some((s) => s.metadata?.name === copy.metadata!.name) ? true : undefined));
    await rest.mergePatch(`${SLICES}/${copy.metadata!.name}`, handOverPatch({ namespace: NS, name: "web", uid: web.metadata!.uid! }));
    await until("the handed-over copy as the controller's", () => (mirror!.slicesOf(NS, "web")!.some((s) => s.metadata?.name === copy.metadata!.name && s.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === "endpointslice-controller.k8s.io") ? true : undefined));

    // web deleted: the garbage collector takes its slices, the handed-over copy too (web owns it), and the mirror follows
    await rest.delete(paths.service(NS, "web"));
    await until("web's slices gone from the mirror", () => (mirror!.slicesOf(NS, "web")!.length === 0 ? true : undefined));
    assert.deepEqual(addressesOf(mirror.slicesOf(NS, "api")!), ["10.244.7.5"], "api's untouched");

    mirror.stop();
    assert.equal(mirror.slicesOf(NS, "api"), undefined);
  });
});
