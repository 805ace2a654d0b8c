/**
 * Plain-text tables for the terminal (plan, preflight, verify) that fit a width without cutting anything:
 * - with no width, or when the table fits, columns are padded to their widest cell, one line per row;
 * - too wide: the columns marked `wrap` wrap inside their column (widest first, down to their `min`);
 * - still too wide: the columns marked `detail` leave the table (lowest number first) and print under their row as
 *   "    header: value";
 * - still too wide: each row becomes a block of "header: value" lines.
 * Every line fits the width, except a word longer than the width itself (a URL, a long name): it is broken, never cut.
 */

export interface TextColumn {
  header: string;
  /** May wrap inside the column (free text, names); addresses and codes do not. */
  wrap?: boolean;
  /** The narrowest a wrapping column gets (default: its header, at least 8). */
  min?: number;
  /** May move under its row when the table is too wide; lower numbers move first. */
  detail?: number;
}

export interface TableLayout {
  /** The header and its dashes (none in the block layout). */
  header: string[];
  /** Per row, its lines. */
  rows: string[][];
}

const GAP = "  ";
const DETAIL_INDENT = "    ";
const CONTINUATION = "  ";
/** Narrower than this, nothing is laid out any better. */
export const MIN_WIDTH = 20;

/** Splits a word longer than `width` after punctuation where it can ("/", "-", ".", ","...), else hard. */
function breakWord(word: string, width: number): string[] {
  const parts: string[] = [];
  let rest = word;
  while (rest.length > width) {
    let at = -1;
    for (let i = width - 1; i > 0; i--) {
      if ("/-.,:=_)]".includes(rest[i])) {
        at = i + 1;
        break;
      }
    }
    if (at <= 0) at = width;
    parts.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  parts.push(rest);
  return parts;
}

/**
 * Greedy word wrap to `width` columns (the first line to `firstWidth`); a word longer than its line is broken
 * (see breakWord).
 */
export function wrapText(text: string, width: number, firstWidth = width): string[] {
  const lines: string[] = [];
  const room = () => Math.max(1, lines.length === 0 ? firstWidth : width);
  let current = "";
  const words = text.split(/ +/);
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (current !== "" && current.length + 1 + word.length <= room()) {
      current += ` ${word}`;
      continue;
    }
    if (current !== "") {
      lines.push(current);
      current = "";
    }
    const pieces = word.length > room() ? breakWord(word, room()) : [word];
    if (pieces.length > 1) {
      // the first piece fills this line; the rest of the word is wrapped again for the next ones
      lines.push(pieces[0]);
      words.splice(i + 1, 0, pieces.slice(1).join(""));
      continue;
    }
    current = pieces[0];
  }
  lines.push(current);
  return lines;
}

/** `first` then `text` wrapped to `width`, continuation lines indented by `hanging` spaces. */
export function wrapWithPrefix(first: string, text: string, width: number | undefined, hanging = first.length): string[] {
  if (width === undefined || first.length + text.length <= width) return [`${first}${text}`.trimEnd()];
  const rest = Math.max(MIN_WIDTH / 2, width - hanging);
  const body = wrapText(text, rest, Math.max(MIN_WIDTH / 2, width - first.length));
  return body.map((l, i) => (i === 0 ? `${first}${l}` : `${" ".repeat(hanging)}${l}`).trimEnd());
}

function total(widths: number[]): number {
  return widths.reduce((a, b) => a + b, 0) + GAP.length * Math.max(0, widths.length - 1);
}

/**
 * Column widths for `cols` within `width`, shrinking wrapping columns widest first (only those `mayWrap` allows);
 * undefined when they cannot fit.
 */
function fitWidths(columns: TextColumn[], natural: number[], cols: number[], width: number, mayWrap: (c: number) => boolean = () => true): number[] | undefined {
  const widths = cols.map((c) => natural[c]);
  const mins = cols.map((c, i) => (columns[c].wrap && mayWrap(c) ? Math.min(widths[i], columns[c].min ?? Math.max(columns[c].header.length, 8)) : widths[i]));
  while (total(widths) > width) {
    let widest = -1;
    widths.forEach((w, i) => {
      if (w > mins[i] && (widest < 0 || w > widths[widest])) widest = i;
    });
    if (widest < 0) return undefined;
    widths[widest]--;
  }
  return widths;
}

export function layoutTable(columns: TextColumn[], rows: string[][], width?: number): TableLayout {
  const cell = (r: string[], c: number) => r[c] ?? "";
  const natural = columns.map((col, c) => Math.max(col.header.length, ...rows.map((r) => cell(r, c).length)));
  const all = columns.map((_, c) => c);
  const limit = width === undefined ? undefined : Math.max(MIN_WIDTH, width);

  let inTable = all;
  let widths: number[] | undefined = limit === undefined || total(natural) <= limit ? natural : undefined;
  if (limit !== undefined && widths === undefined) {
    const movable = all.filter((c) => columns[c].detail !== undefined).sort((a, b) => columns[a].detail! - columns[b].detail!);
    // First the columns that may move wrap or move, names stay whole; then names wrap too, with the same moves.
    for (const mayWrap of [(c: number) => columns[c].detail !== undefined, () => true]) {
      inTable = all;
      widths = fitWidths(columns, natural, inTable, limit, mayWrap);
      for (const c of movable) {
        if (widths) break;
        inTable = inTable.filter((x) => x !== c);
        widths = fitWidths(columns, natural, inTable, limit, mayWrap);
      }
      if (widths) break;
    }
  }
  if (!widths) return blockLayout(columns, rows, limit ?? MIN_WIDTH);
  const fitted: number[] = widths;
  const detailCols = all.filter((c) => !inTable.includes(c));
  const line = (cells: string[]) => cells.map((text, i) => text.padEnd(fitted[i])).join(GAP).trimEnd();
  const rowLines = (cells: string[]): string[] => {
    // a wrapped cell's continuation lines are indented, so they do not read as a row of their own
    const wrapped = cells.map((text, i) => (text.length <= fitted[i] ? [text] : fitted[i] < 10
      ? wrapText(text, fitted[i])
      : wrapText(text, fitted[i] - CONTINUATION.length, fitted[i]).map((l, k) => (k === 0 ? l : `${CONTINUATION}${l}`))));
    const height = Math.max(...wrapped.map((w) => w.length));
    return Array.from({ length: height }, (_, k) => line(wrapped.map((w) => w[k] ?? "")));
  };
  const header = [line(inTable.map((c) => columns[c].header)), line(fitted.map((w) => "-".repeat(w)))];
  const laidOut = rows.map((r) => {
    const lines = rowLines(inTable.map((c) => cell(r, c)));
    for (const c of detailCols) {
      const value = cell(r, c);
      if (value === "" || value === "-") continue;
      const prefix = `${DETAIL_INDENT}${columns[c].header}: `;
      lines.push(...wrapWithPrefix(prefix, value, limit));
    }
    return lines;
  });
  return { header, rows: laidOut };
}

/** The last resort for a very narrow width: each row as "header: value" lines, rows apart by a blank line. */
function blockLayout(columns: TextColumn[], rows: string[][], width: number): TableLayout {
  return {
    header: [],
    rows: rows.map((r, i) => [
      ...(i > 0 ? [""] : []),
      ...columns.flatMap((col, c) => {
        const value = r[c] ?? "";
        return value === "" ? [] : wrapWithPrefix(`${col.header}: `, value, width, 2);
      }),
    ]),
  };
}

/** The table as text: the header, then every row's lines. */
export function renderTable(columns: TextColumn[], rows: string[][], width?: number): string {
  const { header, rows: laidOut } = layoutTable(columns, rows, width);
  return [...header, ...laidOut.flat()].join("\n");
}
