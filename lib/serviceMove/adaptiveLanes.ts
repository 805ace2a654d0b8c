/**
 * How many swaps run at once, adapted to the gap they cause. On a busy control plane every request in flight
 * queues behind the others, and the queue is the gap each Service's clients feel; so the limit halves when a gap
 * exceeds the target and grows by one while gaps stay under half of it (additive increase, multiplicative
 * decrease), between 1 and the configured bound.
 */
export const GAP_TARGET_MS = 100;

export interface AdaptiveLimit {
  /** the limit now */
  current(): number;
  /** the smallest and largest limit this run used */
  range(): { min: number; max: number };
  record(gapMillis: number): void;
}

export function adaptiveLimit(bound: number, targetMs = GAP_TARGET_MS): AdaptiveLimit {
  let limit = Math.max(1, bound);
  let min = limit;
  let max = limit;
  return {
    current: () => limit,
    range: () => ({ min, max }),
    record(gap) {
      if (gap > targetMs) limit = Math.max(1, Math.floor(limit / 2));
      else if (gap < targetMs / 2) limit = Math.min(bound, limit + 1);
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
