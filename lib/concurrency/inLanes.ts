/** Runs `work` over `items`, at most `limit` at a time; stops starting new items once `stop()` says so. */
export async function inLanes<T>(items: T[], limit: number, work: (item: T) => Promise<void>, stop: () => boolean): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop()) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}
