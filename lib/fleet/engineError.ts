/**
 * The line an operator needs from a failed Automation API run: the engine's first `error:` line (the failing step's
 * own words), not the whole captured output the CommandError carries, followed by the name of the resource that
 * failed when the engine says it (a step's own error names a host, rarely the node or step it belongs to). Pure.
 */
export function engineErrorLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim());
  // The engine's closing "update failed" / "preview failed" says only that there was an error.
  const generic = (e: string) => /^(update|preview|refresh|destroy) (failed|canceled)$/.test(e);
  // progress: "<type> <name> creating failed error: <message>" (also updating, deleting, replacing, reading)
  for (const line of lines) {
    const step = /^\S+ (\S+) (?:creating|updating|deleting|replacing|reading|refreshing)(?: \([^)]*\))? failed error: (.+)$/.exec(line);
    if (step && !generic(step[2])) return `${step[2]} (step ${step[1]})`;
  }
  // diagnostics: "<type> (<name>):" over "error: <message>"
  for (let i = 1; i < lines.length; i++) {
    const error = /^error: (.+)$/.exec(lines[i])?.[1];
    const owner = /^\S+ \((\S+)\):$/.exec(lines[i - 1])?.[1];
    if (error && owner && !generic(error)) return `${error} (step ${owner})`;
  }
  const errors = lines.map((l) => /(?:^|\s)error: (.+)$/.exec(l)?.[1]).filter((l): l is string => l !== undefined);
  const specific = errors.find((e) => !generic(e));
  return specific ?? errors[0] ?? lines.find((l) => l !== "") ?? "the engine failed without a message";
}
