/**
 * `fleet up`'s order, as the safe order for upgrades: wave by wave (dev, then stage, then prod), a few clusters at
 * once within a wave, stopping at the first failure. The engine work is injected (engine/fleetWorkspace.ts does it
 * for real), so this file holds only the order and the stopping rules:
 * - a stack whose verify already ran (done) is skipped, so a second `up` resumes where the first stopped;
 * - before a wave starts, every stack left in it is checked (preview and gate again, against the reviewed preview),
 *   `concurrency` at once; one refusal stops the fleet before that wave changes anything;
 * - within a wave, no stack starts after one has failed; the ones already running finish; the next wave never starts;
 * - after a cancel (Ctrl-C), nothing new starts.
 */
import { inLanes } from "../concurrency/inLanes";
import { FleetFile, FleetStack } from "./fleetFile";

export type StackOutcome =
  | { stack: FleetStack; result: "done before" }
  | { stack: FleetStack; result: "refused"; reason: string }
  | { stack: FleetStack; result: "succeeded" }
  | { stack: FleetStack; result: "failed"; reason: string }
  | { stack: FleetStack; result: "not started"; reason: string };

export interface WaveActions {
  /** The stack's verify already ran (lib/fleet/stackPhase: done). */
  isDone(stack: FleetStack): Promise<boolean>;
  /** Why the stack may not run now (its preview changed since review, or the gate fails it), or undefined. */
  refusal(stack: FleetStack): Promise<string | undefined>;
  /** Runs `up`; rejects when it fails. */
  up(stack: FleetStack): Promise<void>;
  cancelled(): boolean;
  /** One progress line. */
  log(line: string): void;
}

export function wavesOf(fleet: FleetFile): FleetStack[][] {
  const waves: FleetStack[][] = [];
  for (const stack of fleet.stacks) (waves[stack.wave - 1] ??= []).push(stack);
  return waves.filter((w) => w !== undefined);
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).trim();

export async function runWaves(fleet: FleetFile, actions: WaveActions): Promise<StackOutcome[]> {
  const outcomes: StackOutcome[] = [];
  let stopped: string | undefined;
  for (const wave of wavesOf(fleet)) {
    const number = wave[0].wave;
    if (stopped) {
      outcomes.push(...wave.map((stack) => ({ stack, result: "not started" as const, reason: stopped! })));
      continue;
    }
    const todo: FleetStack[] = [];
    for (const stack of wave) {
      if (await actions.isDone(stack)) {
        actions.log(`wave ${number}: ${stack.name} is done (verified); skipped`);
        outcomes.push({ stack, result: "done before" });
      } else todo.push(stack);
    }
    // The checks run `concurrency` at once too: each is a preview, and a wave of many clusters waits for them all.
    const refusals: StackOutcome[] = [];
    await inLanes(todo, fleet.concurrency, async (stack) => {
      actions.log(`wave ${number}: ${stack.name}: preview and gate again`);
      const reason = await actions.refusal(stack);
      if (reason) refusals.push({ stack, result: "refused", reason });
    }, () => actions.cancelled());
    if (actions.cancelled()) stopped = "cancelled";
    else if (refusals.length > 0) stopped = `wave ${number} was refused before it started`;
    if (stopped) {
      outcomes.push(...todo.map((stack) => refusals.find((r) => r.stack === stack) ?? { stack, result: "not started" as const, reason: stopped! }));
      continue;
    }
    outcomes.push(...(await runWave(number, todo, fleet.concurrency, actions)));
    const failed = outcomes.find((o) => o.result === "failed" && o.stack.wave === number);
    if (actions.cancelled()) stopped = "cancelled";
    else if (failed) stopped = `${failed.stack.name} failed in wave ${number}`;
  }
  return outcomes;
}

/** Up to `concurrency` stacks at once; once one has failed (or the run is cancelled), no other starts. */
async function runWave(number: number, stacks: FleetStack[], concurrency: number, actions: WaveActions): Promise<StackOutcome[]> {
  const outcomes = new Map<FleetStack, StackOutcome>();
  let failed: string | undefined;
  await inLanes(stacks, concurrency, async (stack) => {
    actions.log(`wave ${number}: ${stack.name}: up`);
    try {
      await actions.up(stack);
      outcomes.set(stack, { stack, result: "succeeded" });
      actions.log(`wave ${number}: ${stack.name}: up succeeded`);
    } catch (err) {
      failed ??= `${stack.name} failed in wave ${number}`;
      outcomes.set(stack, { stack, result: "failed", reason: messageOf(err) });
      actions.log(`wave ${number}: ${stack.name}: up FAILED`);
    }
  }, () => failed !== undefined || actions.cancelled());
  return stacks.map((stack) => outcomes.get(stack) ?? { stack, result: "not started", reason: actions.cancelled() ? "cancelled" : failed! });
}
