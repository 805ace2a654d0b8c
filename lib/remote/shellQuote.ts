/**
 * The one quoting helper for every value that goes into a generated shell script.
 *
 * API: `shellQuote(value)` → the value as one POSIX shell word; `shellQuoteAll(values)` → words joined by spaces.
 *
 * POSIX single quotes keep every byte literal ($, `, \, !, spaces, newlines, glob characters); the only byte they
 * cannot hold is the single quote itself, which is closed, escaped and reopened: it's → 'it'\''s'. The empty string
 * becomes ''. Values are always quoted, even when safe bare, so a reviewer never has to judge which ones were.
 * NUL cannot be part of any shell word or argv entry, so it is refused rather than silently truncated.
 */
export function shellQuote(value: string): string {
  if (value.includes("\0")) {
    throw new Error("shell value contains a NUL byte, which no shell argument can carry; remove it from the input");
  }
  return `'${value.split("'").join(`'\\''`)}'`;
}

export function shellQuoteAll(values: readonly string[]): string {
  return values.map(shellQuote).join(" ");
}
