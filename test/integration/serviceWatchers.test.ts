// The wait before the Service moves (lib/serviceMove/serviceWatchers.ts) against a real kube-apiserver of the
// test-bed version: its /metrics counts the Service watches clients hold open, and the wait ends when enough are.
import { strict as assert } from "assert";
import { Watch } from "@kubernetes/client-node";
import { KubeRest, kubeRest } from "../../lib/serviceMove/kubeRest";
import { readServiceWatchCount, waitForServiceWatchers } from "../../lib/serviceMove/serviceWatchers";
import { useTestCluster } from "../testbed/fixture";

describe("Service watchers on a real apiserver", function () {
  this.timeout(120_000);
  const cluster = useTestCluster({ serviceCidr: "10.96.0.0/16", podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  const open: Array<{ abort: () => void }> = [];

  before(async () => {
    rest = await kubeRest(cluster().kubeConfig());
  });
  after(() => {
    for (const w of open) w.abort();
    rest?.close();
  });

  it("counts the watches clients open on Services; the wait ends once they are there, and warns when they are not", async () => {
    const before = await readServiceWatchCount(rest);
    assert.equal(typeof before, "number", "kube-apiserver exposes apiserver_longrunning_requests");
    const watch = new Watch(cluster().kubeConfig());
    for (const path of ["/api/v1/services", "/api/v1/namespaces/default/services"]) {
      open.push(await watch.watch(path, {}, () => undefined, () => undefined));
    }
    const wait = await waitForServiceWatchers(rest, before! + 2, 30_000);
    assert.equal(wait.warning, undefined);
    assert.ok(wait.watchers! >= before! + 2, `${wait.watchers} watches, ${before} before`);

    // The apiserver counts a closed watch only once it notices the close, and the control plane's own informers
    // re-open theirs on their own schedule: wait for the count to drop, then ask for more than it shows
    // (two more, so that one informer re-opening meanwhile cannot end the wait).
    const bothOpen = (await readServiceWatchCount(rest))!;
    open.pop()!.abort();
    let after = await readServiceWatchCount(rest);
    for (const deadline = Date.now() + 30_000; after! >= bothOpen && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 200));
      after = await readServiceWatchCount(rest);
    }
    assert.ok(after! < bothOpen, `the closed watch is counted: ${after} watches, ${bothOpen} with both open`);
    const wanted = after! + 2;
    const short = await waitForServiceWatchers(rest, wanted, 1500);
    const warned = new RegExp(`serves (\\d+) Service watch\\(es\\), ${wanted} before`).exec(short.warning ?? "");
    assert.ok(warned, `a wait that ends short warns with the count it saw: ${JSON.stringify(short)}`);
    assert.ok(Number(warned[1]) < wanted);
  });
});
