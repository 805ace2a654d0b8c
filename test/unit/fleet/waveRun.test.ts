/**
 * `fleet up`'s order and stopping rules (lib/fleet/waveRun), with the engine work replaced by recorded fakes: this
 * checks only the order; test/e2e/fleet.test.ts runs it on real stacks.
 */
import { strict as assert } from "assert";
import { FleetFile, FleetStack } from "../../../lib/fleet/fleetFile";
import { runWaves, WaveActions, wavesOf } from "../../../lib/fleet/waveRun";

const stack = (name: string, wave: number): FleetStack => ({ name, wave, backend: "file:///state", config: {} });
const fleetOf = (concurrency: number, ...stacks: FleetStack[]): FleetFile => ({ projectDir: "/p", concurrency, routableTogether: false, stacks });

interface Script {
  done?: string[];
  refuse?: Record<string, string>;
  fail?: string[];
  /** ms each up takes */
  upMs?: Record<string, number>;
  cancelAfterUpOf?: string;
  /** ms each check takes */
  checkMs?: number;
}

function recorder(script: Script) {
  const events: string[] = [];
  let running = 0;
  let maxRunning = 0;
  let checking = 0;
  let maxChecking = 0;
  let cancelled = false;
  const actions: WaveActions = {
    isDone: async (s) => (script.done ?? []).includes(s.name),
    refusal: async (s) => {
      events.push(`check ${s.name}`);
      checking++;
      maxChecking = Math.max(maxChecking, checking);
      await new Promise((r) => setTimeout(r, script.checkMs ?? 0));
      checking--;
      return script.refuse?.[s.name];
    },
    up: async (s) => {
      events.push(`up ${s.name}`);
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, script.upMs?.[s.name] ?? 5));
      running--;
      if (script.cancelAfterUpOf === s.name) cancelled = true;
      if ((script.fail ?? []).includes(s.name)) throw new Error(`  step X failed on ${s.name}\n`);
    },
    cancelled: () => cancelled,
    log: () => undefined,
  };
  return { actions, events, maxRunning: () => maxRunning, maxChecking: () => maxChecking };
}

const results = (outcomes: Awaited<ReturnType<typeof runWaves>>) => outcomes.map((o) => `${o.stack.name}: ${o.result}${"reason" in o ? ` (${o.reason})` : ""}`);

describe("fleet: waves", () => {
  it("groups stacks by wave in wave order, keeping the file's order within a wave", () => {
    const waves = wavesOf(fleetOf(1, stack("prod", 3), stack("dev-a", 1), stack("stage", 2), stack("dev-b", 1)));
    assert.deepEqual(waves.map((w) => w.map((s) => s.name)), [["dev-a", "dev-b"], ["stage"], ["prod"]]);
  });

  it("checks every stack of a wave before any of them runs, then runs the waves in order", async () => {
    const r = recorder({});
    const outcomes = await runWaves(fleetOf(1, stack("dev-a", 1), stack("dev-b", 1), stack("prod", 2)), r.actions);
    assert.deepEqual(r.events, ["check dev-a", "check dev-b", "up dev-a", "up dev-b", "check prod", "up prod"]);
    assert.deepEqual(results(outcomes), ["dev-a: succeeded", "dev-b: succeeded", "prod: succeeded"]);
  });

  it("runs at most `concurrency` stacks of a wave at once, and checks them as many at once", async () => {
    const r = recorder({ upMs: { a: 30, b: 30, c: 30, d: 30 }, checkMs: 30 });
    await runWaves(fleetOf(2, stack("a", 1), stack("b", 1), stack("c", 1), stack("d", 1)), r.actions);
    assert.equal(r.maxRunning(), 2);
    assert.equal(r.maxChecking(), 2);
  });

  it("a failure: no other stack of the wave starts, the running one finishes, the next wave never starts", async () => {
    const r = recorder({ fail: ["a"], upMs: { a: 5, b: 40 } });
    const outcomes = await runWaves(fleetOf(2, stack("a", 1), stack("b", 1), stack("c", 1), stack("prod", 2)), r.actions);
    assert.deepEqual(r.events, ["check a", "check b", "check c", "up a", "up b"]);
    assert.deepEqual(results(outcomes), [
      "a: failed (step X failed on a)",
      "b: succeeded",
      "c: not started (a failed in wave 1)",
      "prod: not started (a failed in wave 1)",
    ]);
  });

  it("a refusal stops the fleet before its wave changes anything", async () => {
    const r = recorder({ refuse: { b: "its preview changed since the review" } });
    const outcomes = await runWaves(fleetOf(2, stack("dev", 1), stack("a", 2), stack("b", 2), stack("prod", 3)), r.actions);
    assert.deepEqual(r.events, ["check dev", "up dev", "check a", "check b"]);
    assert.deepEqual(results(outcomes), [
      "dev: succeeded",
      "a: not started (wave 2 was refused before it started)",
      "b: refused (its preview changed since the review)",
      "prod: not started (wave 2 was refused before it started)",
    ]);
  });

  it("a second run skips the stacks that are done and goes on", async () => {
    const r = recorder({ done: ["a", "b"] });
    const outcomes = await runWaves(fleetOf(1, stack("a", 1), stack("b", 1), stack("prod", 2)), r.actions);
    assert.deepEqual(r.events, ["check prod", "up prod"]);
    assert.deepEqual(results(outcomes), ["a: done before", "b: done before", "prod: succeeded"]);
  });

  it("a cancel: nothing new starts, in this wave or the next, even when the cancelled up failed", async () => {
    const r = recorder({ cancelAfterUpOf: "a", fail: ["a"] });
    const outcomes = await runWaves(fleetOf(1, stack("a", 1), stack("b", 1), stack("prod", 2)), r.actions);
    assert.deepEqual(r.events, ["check a", "check b", "up a"]);
    assert.deepEqual(results(outcomes), ["a: failed (step X failed on a)", "b: not started (cancelled)", "prod: not started (cancelled)"]);
  });
});
