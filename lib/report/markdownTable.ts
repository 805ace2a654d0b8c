/** GitHub-flavoured markdown tables: cells escaped so a `|`, a newline or markup in data cannot break the table. */

export function mdCell(text: string): string {
  return text
    .replace(/\\/g, "\\\\")
    .replace(/\|/g, "\\|")
    .replace(/[<>]/g, (c) => (c === "<" ? "&lt;" : "&gt;"))
    .replace(/\r?\n/g, " ");
}

/**
 * Inline code. Inside a code span markdown shows text as it is (an entity or a backslash would show literally),
 * so only what breaks the table row is changed: a `|` (the table is split before code spans are read) and
 * newlines. A value with a backtick or a "<" could end the span or be taken for HTML by a renderer:
 * it is written as escaped plain text instead.
 */
export function mdCode(text: string): string {
  if (/[`<]/.test(text)) return mdCell(text);
  return `\`${text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ")}\``;
}

export function mdTable(headers: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(headers.map(mdCell)), line(headers.map(() => "---")), ...rows.map(line)].join("\n");
}
