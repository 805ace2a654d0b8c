/**
 * The line an operator needs from a failed Automation API run: the engine's first `error:` line (the failing step's
 * own words), not the whole captured output the CommandError carries. Pure.
 */
export function engineErrorLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim());
  const errors = lines.map((l) => /(?:^|\s)error: (.+)$/.exec(l)?.[1]).filter((l): l is string => l !== undefined);
  // The engine's closing "update failed" / "preview failed" says only that there was an error.
  const specific = errors.find((e) => !/^(update|preview|refresh|destroy) (failed|canceled)$/.test(e));
  return specific ?? errors[0] ?? lines.find((l) => l !== "") ?? "the engine failed without a message";
}
