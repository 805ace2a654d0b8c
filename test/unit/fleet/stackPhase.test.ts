/** A fleet stack's phase from what its backend records (lib/fleet/stackPhase.ts). */
import { strict as assert } from "assert";
import { StackRecord, stackPhase } from "../../../lib/fleet/stackPhase";

const record = (over: Partial<StackRecord>): StackRecord => ({ outputs: {}, resourceCount: 0, pendingOperations: 0, ...over });

describe("fleet stack phase", () => {
  it("not started, failed, running or interrupted, applied but not verified, done", () => {
    assert.deepEqual(stackPhase(record({})), { phase: "not started", detail: "no update in the stack's history" });
    assert.deepEqual(stackPhase(record({ lastUpdate: { kind: "update", result: "failed", endTime: "2026-12-03T04:00:00.000Z" }, resourceCount: 5 })),
      { phase: "failed", detail: "the last update failed at 2026-12-03T04:00:00.000Z; 5 resource(s) in the state; pulumi up resumes it" });
    assert.equal(stackPhase(record({ lastUpdate: { kind: "update", result: "in-progress" } })).phase, "running or interrupted");
    assert.equal(stackPhase(record({ lastUpdate: { kind: "update", result: "succeeded" }, pendingOperations: 1 })).phase, "running or interrupted", "a killed run's pending operations outrank its history");
    assert.deepEqual(stackPhase(record({ lastUpdate: { kind: "update", result: "succeeded" }, outputs: { servicesMoving: 3 } })), { phase: "applied, not verified", detail: "the last up succeeded but did not reach the verify step" });
    assert.deepEqual(stackPhase(record({ lastUpdate: { kind: "refresh", result: "succeeded" }, outputs: { verifyWarnings: 0 } })), { phase: "applied, not verified", detail: "the last operation was a refresh" });
    assert.deepEqual(stackPhase(record({ lastUpdate: { kind: "update", result: "succeeded" }, outputs: { verifyWarnings: 0 } })), { phase: "done", detail: "verified" });
    assert.deepEqual(stackPhase(record({ lastUpdate: { kind: "update", result: "succeeded" }, outputs: { verifyWarnings: 2 } })), { phase: "done", detail: "verified with 2 warning(s)" });
  });
});
