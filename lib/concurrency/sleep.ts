/** Waits `ms` milliseconds: the one pause the polling loops share. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
