import * as assert from "assert";
import { adaptiveLimit, inAdaptiveLanes } from "../../../lib/serviceMove/adaptiveLanes";

describe("adaptive swap lanes (pure)", () => {
  it("starts at 2, grows by one under 40% of the target, halves over 80% of it, stays within 1..bound", () => {
    const limit = adaptiveLimit(8, 100);
    assert.equal(limit.current(), 2, "a slow start: no first burst at the full bound");
    for (let i = 0; i < 20; i++) limit.record(10);
    assert.equal(limit.current(), 8, "grows to the bound and no further");
    limit.record(85);
    assert.equal(limit.current(), 4, "cut before gaps cross the target");
    limit.record(60);
    assert.equal(limit.current(), 4, "between 40% and 80% of the target it holds");
    limit.record(250);
    limit.record(250);
    assert.equal(limit.current(), 1);
    limit.record(250);
    assert.equal(limit.current(), 1, "never below 1");
    assert.deepEqual(limit.range(), { min: 1, max: 8 });
    assert.deepEqual(adaptiveLimit(1, 100).range(), { min: 1, max: 1 }, "a bound under the start is the start");
  });

  it("cuts once per stall: a swap started before the last cut does not cut again", () => {
    const limit = adaptiveLimit(8, 100);
    for (let i = 0; i < 10; i++) limit.record(10);
    const startedBefore = limit.cuts();
    limit.record(300, startedBefore);
    assert.equal(limit.current(), 4);
    // the other swaps in flight during the same stall report it too
    for (let i = 0; i < 5; i++) limit.record(300, startedBefore);
    assert.equal(limit.current(), 4, "the same stall is not counted again");
    // a swap started after the cut that still sees a slow gap cuts again
    limit.record(300, limit.cuts());
    assert.equal(limit.current(), 2);
    assert.equal(limit.cuts(), 2);
  });

  it("never runs more at once than the limit allows, and runs every item", async () => {
    const limit = adaptiveLimit(4, 100);
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    await inAdaptiveLanes([...Array(30).keys()], limit, async (i) => {
      const cutsAtStart = limit.cuts();
      active++;
      peak = Math.max(peak, active);
      assert.ok(active <= limit.current() + 1, "no start above the limit in force when it started");
      await new Promise((r) => setTimeout(r, 2));
      limit.record(i < 10 ? 500 : 10, cutsAtStart);
      active--;
      done.push(i);
    }, () => false);
    assert.equal(done.length, 30);
    assert.ok(peak <= 4);
  });
});
