import { strict as assert } from "assert";
import { KubeObject, KubeRest } from "../../../lib/serviceMove/kubeRest";
import { watchDeletions } from "../../../lib/serviceMove/deletionWatch";

/** A rest with one read and one watch: the test sends the watch's events and ends it. */
function fakeRest() {
  const calls: Array<{ method: string; path: string; query?: Record<string, string> }> = [];
  let send: ((type: string, object: KubeObject) => void) | undefined;
  let end: ((err?: Error) => void) | undefined;
  let stopped = false;
  const rest = {
    async get(path: string) {
      calls.push({ method: "get", path });
      return { metadata: { resourceVersion: "41" }, items: [] };
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
    const fake = fakeRest();
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
    const fake = fakeRest();
    const watch = await watchDeletions(fake.rest);
    const web = watch.deleted("uid-web");
    fake.end(new Error("watch /api/v1/services: too old resource version"));
    assert.equal(await settled(web), false);
    assert.equal(watch.ahead, 0);
  });
});
