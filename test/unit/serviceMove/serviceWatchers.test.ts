import { strict as assert } from "assert";
import { KubeRest } from "../../../lib/serviceMove/kubeRest";
import { serviceWatchCount, waitForServiceWatchers } from "../../../lib/serviceMove/serviceWatchers";

const metrics = (services: number, namespaced = 0) => [
  "# HELP apiserver_longrunning_requests [ALPHA] Gauge of all active long-running apiserver requests",
  "# TYPE apiserver_longrunning_requests gauge",
  `apiserver_longrunning_requests{component="apiserver",group="",resource="services",scope="cluster",subresource="",verb="WATCH",version="v1"} ${services}`,
  `apiserver_longrunning_requests{component="apiserver",group="",resource="services",scope="namespace",subresource="",verb="WATCH",version="v1"} ${namespaced}`,
  'apiserver_longrunning_requests{component="apiserver",group="discovery.k8s.io",resource="endpointslices",scope="cluster",subresource="",verb="WATCH",version="v1"} 7',
  'apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="log",verb="CONNECT",version="v1"} 2',
  'apiserver_longrunning_requests{component="apiserver",group="",resource="services",scope="cluster",subresource="proxy",verb="CONNECT",version="v1"} 1',
  "apiserver_request_total 5",
].join("\n");

/** A KubeRest whose /metrics answers from `counts` in turn (the last one repeats). */
function restAnswering(counts: number[]): KubeRest & { reads: number } {
  const fake = { reads: 0, getText: async () => metrics(counts[Math.min(fake.reads++, counts.length - 1)]) };
  return fake as unknown as KubeRest & { reads: number };
}

describe("Service watchers before the moves", () => {
  it("counts the core Service WATCH requests of every scope, nothing else", () => {
    assert.equal(serviceWatchCount(metrics(11)), 11);
    assert.equal(serviceWatchCount(metrics(8, 3)), 11);
    assert.equal(serviceWatchCount(metrics(0)), 0);
    assert.equal(serviceWatchCount("apiserver_request_total 5\n"), undefined, "an apiserver without the metric tells nothing");
  });

  it("waits until the count is back, then lets the moves go", async () => {
    const rest = restAnswering([4, 7, 11]);
    const wait = await waitForServiceWatchers(rest, 11, 10_000);
    assert.equal(wait.watchers, 11);
    assert.equal(wait.warning, undefined);
    assert.equal(rest.reads, 3);
  });

  it("gives up after its timeout with a warning naming both counts, rather than failing the run", async () => {
    const wait = await waitForServiceWatchers(restAnswering([9]), 11, 600);
    assert.equal(wait.watchers, 9);
    assert.match(wait.warning ?? "", /serves 9 Service watch\(es\), 11 before the control-plane restart; after 1 s the moves went ahead/);
  });

  it("skips the wait where /metrics cannot be read", async () => {
    const rest = { getText: async () => { throw Object.assign(new Error("forbidden"), { statusCode: 403 }); } } as unknown as KubeRest;
    assert.deepEqual({ ...(await waitForServiceWatchers(rest, 11, 10_000)), waitedMillis: 0 }, { waitedMillis: 0, watchers: undefined });
  });
});
