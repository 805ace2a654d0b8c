import * as assert from "assert";
import { adaptiveLimit, inAdaptiveLanes } from "../../../lib/serviceMove/adaptiveLanes";

describe("adaptive swap lanes (pure)", () => {
  it("halves on a gap over the target, grows by one under half of it, stays within 1..bound", () => {
    const limit = adaptiveLimit(8, 100);
    limit.record(250);
    assert.equal(limit.current(), 4);
    limit.record(250);
    limit.record(250);
    limit.record(250);
    assert.equal(limit.current(), 1);
    limit.record(70);
    assert.equal(limit.current(), 1, "between half the target and the target it holds");
    for (let i = 0; i < 20; i++) limit.record(10);
    assert.equal(limit.current(), 8);
    assert.deepEqual(limit.range(), { min: 1, max: 8 });
  });

  it("never runs more at once than the limit allows, and runs every item", async () => {
    const limit = adaptiveLimit(4, 100);
    let active = 0;
    let peak = 0;
    const done: number[] = [];
    await inAdaptiveLanes([...Array(30).keys()], limit, async (i) => {
      active++;
      peak = Math.max(peak, active);
      assert.ok(active <= limit.current() + 1, "no start above the limit in force when it started");
      await new Promise((r) => setTimeout(r, 2));
      limit.record(i < 10 ? 500 : 10);
      active--;
      done.push(i);
    }, () => false);
    assert.equal(done.length, 30);
    assert.ok(peak <= 4);
  });
});
