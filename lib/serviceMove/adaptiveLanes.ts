/**
 * How many swaps run at once, adapted to the gap they cause. On a busy control plane every request in flight
 * queues behind the others, and the queue is the gap each Service's clients feel; so the limit halves when a gap
 * nears the target and grows by one while gaps stay well under it (additive increase, multiplicative decrease),
 * between 1 and the configured bound.
 *
 * Three details keep the p99 gap under the target rather than the average:
 * - the limit starts low and grows (a first burst at the full bound is what pushed the earliest gaps over);
 * - it halves at 80 % of the target, before gaps cross it, since every swap in flight feels the same stall;
 * - it halves once per stall: swaps started before the last cut report the same stall again, and counting them
 *   too would drive the limit to 1 and leave the run bound by latency.
 */
export const GAP_TARGET_MS = 100;
const START_LIMIT = 2;
const CUT_AT = 0.8;
const GROW_BELOW = 0.4;

export interface AdaptiveLimit {
  /** the limit now */
  current(): number;
  /** the smallest and largest limit this run used */
  range(): { min: number; max: number };
  /** how many cuts so far: a swap notes it when it starts and hands it to record */
  cuts(): number;
  record(gapMillis: number, cutsAtStart?: number): void;
}

export function adaptiveLimit(bound: number, targetMs = GAP_TARGET_MS): AdaptiveLimit {
  const upper = Math.max(1, bound);
  let limit = Math.min(upper, START_LIMIT);
  let min = limit;
  let max = limit;
  let cuts = 0;
  return {
    current: () => limit,
    range: () => ({ min, max }),
    cuts: () => cuts,
    record(gap, cutsAtStart = cuts) {
      if (gap > targetMs * CUT_AT) {
        if (cutsAtStart < cuts) return;
        limit = Math.max(1, Math.floor(limit / 2));
        cuts++;
      } else if (gap < targetMs * GROW_BELOW) {
        limit = Math.min(upper, limit + 1);
      }
      min = Math.min(min, limit);
      max = Math.max(max, limit);
    },
  };
}

/** Runs `work` over `items` with at most `limit.current()` in flight, re-read before each start. */
export async function inAdaptiveLanes<T>(items: T[], limit: AdaptiveLimit, work: (item: T) => Promise<void>, stop: () => boolean): Promise<void> {
  let next = 0;
  let active = 0;
  let wake: (() => void) | undefined;
  const running = new Set<Promise<void>>();
  while (next < items.length && !stop()) {
    if (active >= limit.current()) {
      await new Promise<void>((resolve) => { wake = resolve; });
      continue;
    }
    const item = items[next++];
    active++;
    const task = work(item).finally(() => {
      active--;
      running.delete(task);
      wake?.();
      wake = undefined;
    });
    running.add(task);
  }
  await Promise.all(running);
}
