/** Assertions and a reproducible number source shared by the lib/net tests. */
import assert from "node:assert/strict";
import { CidrError, CidrErrorReason } from "../../lib/net/cidr";

/** Asserts `fn` throws a one-line CidrError with `reason` whose message contains every fragment. */
export function assertCidrError(fn: () => unknown, reason: CidrErrorReason, ...fragments: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof CidrError, `expected CidrError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    assert.ok(!error.message.includes("\n"), `message is not one line: ${error.message}`);
    for (const fragment of fragments) assert.ok(error.message.includes(fragment), `"${error.message}" lacks "${fragment}"`);
    return true;
  });
}

/** Deterministic pseudo-random sequence (LCG) so large tests are reproducible. */
export function* lcg(seed: number): Generator<number> {
  let state = seed >>> 0;
  for (;;) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    yield state;
  }
}
