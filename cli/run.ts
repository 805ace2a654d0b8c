import { EXIT_INVALID_INPUT, UserError } from "../lib/config/errors";

/** Exit code for a bug of ours, kept apart from the documented 0/1/2/3. */
export const EXIT_INTERNAL = 70;

/**
 * Wraps a command's action: a UserError prints its message (one line per problem) and exits with its code;
 * anything else is our bug and still prints one line, never a stack trace (set CIDR_MIGRATION_DEBUG=1 for it).
 */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const code = await fn(...args);
      process.exitCode = code ?? 0;
    } catch (err) {
      if (err instanceof UserError) {
        for (const line of err.message.split("\n")) process.stderr.write(`cidr-migration: ${line}\n`);
        process.exitCode = err.exitCode;
      } else {
        process.stderr.write(`cidr-migration: internal error: ${String((err as Error)?.message ?? err).split("\n")[0]}\n`);
        if (process.env.CIDR_MIGRATION_DEBUG) process.stderr.write(`${(err as Error)?.stack}\n`);
        process.exitCode = EXIT_INTERNAL;
      }
    }
  };
}

/**
 * The width tables must fit: COLUMNS when set to a number (e.g. `COLUMNS=80 cidr-migration plan`), else the
 * terminal's width when stdout is one; undefined (no limit, one line per row, for grep and files) when stdout is a
 * pipe or a file. --json output never depends on it.
 */
export function outputWidth(env: NodeJS.ProcessEnv = process.env, stdout: { isTTY?: boolean; columns?: number } = process.stdout): number | undefined {
  const columns = Number(env.COLUMNS);
  if (env.COLUMNS && Number.isInteger(columns) && columns > 0) return columns;
  if (stdout.isTTY && stdout.columns && stdout.columns > 0) return stdout.columns;
  return undefined;
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export { EXIT_INVALID_INPUT };
