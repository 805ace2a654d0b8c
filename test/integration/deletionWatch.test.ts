// The deletion watch (lib/serviceMove/deletionWatch.ts) against a real kube-apiserver of the test-bed version: it
// reports every Service delete by uid, and (the reason it exists) it often does so before the apiserver answers
// the delete, which waits for the Endpoints' removal and the ClusterIP's release.
import { strict as assert } from "assert";
import { KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { DeletionWatch, watchDeletions } from "../../lib/serviceMove/deletionWatch";
import { useTestCluster } from "../testbed/fixture";

const NS = "deletions";
const COUNT = 20;

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe("the deletion watch on a real apiserver", function () {
  this.timeout(120_000);
  const cluster = useTestCluster({ serviceCidr: "10.96.0.0/16", podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  let watch: DeletionWatch | undefined;

  before(async () => {
    rest = await kubeRest(cluster().kubeConfig());
    await rest.create("/api/v1/namespaces", { metadata: { name: NS } });
  });
  after(() => {
    watch?.stop();
    rest?.close();
  });

  it(`reports each of ${COUNT} Service deletes by uid, and no Service that was not deleted`, async () => {
    const uids: string[] = [];
    for (let i = 0; i < COUNT; i++) {
      const created = await rest.create(paths.services(NS), { metadata: { name: `web-${i}` }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } });
      uids.push(created.metadata!.uid!);
    }
    watch = await watchDeletions(rest);
    const kept = watch.deleted(uids[COUNT - 1]);
    let keptReported = false;
    void kept.then(() => { keptReported = true; });
    let reportedFirst = 0;
    for (let i = 0; i < COUNT - 1; i++) {
      const reported = watch.deleted(uids[i]).then(() => "watch" as const);
      const answered = rest.delete(paths.service(NS, `web-${i}`)).then(() => "answer" as const);
      if ((await Promise.race([reported, answered])) === "watch") reportedFirst++;
      await within(reported, 10_000, `the DELETED event of web-${i}`);
      await answered;
    }
    assert.equal(keptReported, false, "a Service not deleted is not reported");
    console.log(`      the watch reported ${reportedFirst} of ${COUNT - 1} deletes before the apiserver answered them`);
  });
});
