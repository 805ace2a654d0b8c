import { strict as assert } from "assert";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";
import { fakeWatchRest } from "../../support/fakeWatchRest";
import { watchDeletions } from "../../../lib/serviceMove/deletionWatch";

const service = (uid: string): KubeObject => ({ metadata: { name: "web", namespace: "shop", uid } });
/** Whether `promise` has settled once pending callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => { done = true; });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe("the deletion watch (deletionWatch.ts)", () => {
  it("reads one item for the collection's resourceVersion, watches from there, and resolves a uid's wait on its DELETED event only", async () => {
    const fake = fakeWatchRest();
    const watch = await watchDeletions(fake.rest);
    assert.deepEqual(fake.calls, [
      { method: "get", path: "/api/v1/services?limit=1" },
      { method: "watch", path: "/api/v1/services", query: { resourceVersion: "41", allowWatchBookmarks: "true" } },
    ]);
    const web = watch.deleted("uid-web");
    const db = watch.deleted("uid-db");
    fake.send("MODIFIED", service("uid-web"));
    fake.send("ADDED", service("uid-web-2"));
    fake.send("BOOKMARK", { metadata: { resourceVersion: "57" } });
    fake.send("DELETED", service("uid-other"));
    assert.equal(await settled(web), false, "only a DELETED event of that uid");
    fake.send("DELETED", service("uid-web"));
    assert.equal(await settled(web), true);
    assert.equal(await settled(db), false);
    watch.stop();
    assert.ok(fake.stopped(), "stop ends the watch");
  });

  it("never resolves a wait once the watch has ended: the caller's delete answer decides", async () => {
    const fake = fakeWatchRest();
    const watch = await watchDeletions(fake.rest);
    const web = watch.deleted("uid-web");
    fake.end(new Error("watch /api/v1/services: too old resource version"));
    assert.equal(await settled(web), false);
    assert.equal(watch.ahead, 0);
  });
});
