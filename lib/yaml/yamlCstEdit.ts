/**
 * Lossless, surgical edits of YAML sequences through the `yaml` package's CST.
 *
 * Why: the files we edit on live nodes (static-pod manifests, the kubelet's config.yaml) were written by kubeadm
 * or by hand, and an operator reviews our diff. Re-serialising a whole Document would re-indent lists, re-quote
 * scalars and move comments. Instead we parse to a CST (every byte of the source is a token), locate nodes through
 * the composed Document (`keepSourceTokens`), change only the tokens of the items we touch, and stringify the CST
 * back. Untouched bytes (comments, indentation, quoting, flow style, CRLF, a missing final newline) come back as-is.
 *
 * API:
 * - `parseSingleDocument(text, what)` → `{ tokens, doc, newline }`; throws `YamlEditError` (one line) on invalid
 *   YAML or a stream that is not exactly one document. `what` names the file in messages.
 * - `renderTokens(tokens)` → the text (byte-identical to the input while nothing was changed).
 * - `setSeqScalar(seq, item, value)` rewrites one scalar item in place, keeping its quote style when that style
 *   can carry the value unchanged (else it switches to double quotes).
 * - `removeSeqScalar(seq, item)` drops one item and its line; comment lines before it are kept.
 * - `appendSeqScalar(seq, value, { type, newline })` adds an item after the last one, indented like its siblings.
 * `seq` is a `YAMLSeq` from the parsed `doc`; `item` is one of its `Scalar` items.
 */
import { CST, Composer, Document, LineCounter, Parser, Scalar, YAMLSeq, stringify as yamlStringify } from "yaml";

/** One-line error for anything a user's file can make us refuse. */
export class YamlEditError extends Error {
  constructor(message: string) {
    super(message);
    this.message = message; // see UserError
    this.name = "YamlEditError";
  }
}

export interface ParsedYaml {
  tokens: CST.Token[];
  doc: Document.Parsed;
  /** The file's own line break, used for lines we add. */
  newline: "\n" | "\r\n";
}

export function parseSingleDocument(text: string, what: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const tokens = [...new Parser(lineCounter.addNewLine).parse(text)];
  const docs = [...new Composer({ keepSourceTokens: true, schema: "failsafe" }).compose(tokens)];
  if (docs.length !== 1) {
    throw new YamlEditError(`${what}: expected exactly one YAML document, found ${docs.length}; split the file or pass the right one`);
  }
  const doc = docs[0];
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    const line = lineCounter.linePos(first.pos[0]).line;
    throw new YamlEditError(`${what}: not valid YAML (${first.code} at line ${line}); fix the file first`);
  }
  // The whole point is losslessness: refuse rather than risk rewriting bytes we did not mean to touch.
  if (renderTokens(tokens) !== text) {
    throw new YamlEditError(`${what}: the YAML parser cannot reproduce this file byte for byte; edit it by hand`);
  }
  return { tokens, doc, newline: text.includes("\r\n") ? "\r\n" : "\n" };
}

export function renderTokens(tokens: readonly CST.Token[]): string {
  return tokens.map((token) => CST.stringify(token)).join("");
}

type SeqToken = CST.BlockSequence | CST.FlowCollection;
export type ScalarType = "PLAIN" | "QUOTE_SINGLE" | "QUOTE_DOUBLE";

function seqToken(seq: YAMLSeq): SeqToken {
  const token = seq.srcToken as CST.Token | undefined;
  if (!token || (token.type !== "block-seq" && token.type !== "flow-collection")) {
    throw new YamlEditError("internal: sequence was not parsed with keepSourceTokens");
  }
  return token;
}

function itemIndex(seq: YAMLSeq, item: Scalar): number {
  const token = seqToken(seq);
  const index = token.items.findIndex((entry) => entry.value !== undefined && entry.value === item.srcToken);
  if (index < 0) throw new YamlEditError("internal: scalar is not an item of this sequence");
  return index;
}

/** Plain style is only kept when the plain text reads back as the same string (e.g. `24` or `true` would not). */
export function safeType(value: string, preferred: ScalarType, inFlow: boolean): ScalarType {
  if (/[\r\n]/.test(value)) return "QUOTE_DOUBLE";
  if (preferred !== "PLAIN") return preferred;
  const plain = yamlStringify(value, { lineWidth: 0 }).replace(/\n$/, "") === value;
  const flowSafe = !inFlow || !/[,[\]{}]/.test(value);
  return plain && flowSafe ? "PLAIN" : "QUOTE_DOUBLE";
}

export function scalarTypeOf(item: Scalar): ScalarType {
  return item.type === "QUOTE_SINGLE" || item.type === "QUOTE_DOUBLE" ? item.type : "PLAIN";
}

export function setSeqScalar(seq: YAMLSeq, item: Scalar, value: string): void {
  const token = seqToken(seq);
  const entry = token.items[itemIndex(seq, item)];
  const inFlow = token.type === "flow-collection";
  CST.setScalarValue(entry.value as CST.Token, value, { inFlow, type: safeType(value, scalarTypeOf(item), inFlow) });
}

const isLayout = (t: CST.SourceToken) => t.type === "comment" || t.type === "newline";

export function removeSeqScalar(seq: YAMLSeq, item: Scalar): void {
  const token = seqToken(seq);
  const items = token.items as CST.CollectionItem[];
  const index = itemIndex(seq, item);
  const [removed] = items.splice(index, 1);
  const next = items[index];
  const previous = items[index - 1];
  if (token.type === "flow-collection") {
    // `[a, b]` minus `a` is `[b]`: the separator that followed `a` goes with it.
    if (index === 0 && next) next.start = next.start.filter((t) => t.type !== "comma").filter((t, i) => i > 0 || t.type !== "space");
    return;
  }
  // Comment lines above the removed item belong to the file, not to the item: hand them to the next item.
  const beforeIndicator = removed.start.slice(0, Math.max(0, removed.start.findIndex((t) => t.type === "seq-item-ind")));
  const keep = beforeIndicator.slice(0, beforeIndicator.map(isLayout).lastIndexOf(true) + 1);
  if (next) {
    // The first item's indentation lives in the parent's separator, so a promoted item drops its own.
    if (index === 0 && next.start[0]?.type === "space") next.start.shift();
    next.start.unshift(...keep);
    return;
  }
  if (keep.length > 0) throw new YamlEditError("internal: cannot remove the last item of a sequence below a comment");
  // Removing the last item of a file that had no final line break must not add one.
  const removedEnd = (removed.value as CST.FlowScalar | undefined)?.end ?? [];
  const previousEnd = (previous?.value as CST.FlowScalar | undefined)?.end;
  if (!removedEnd.some((t) => t.type === "newline") && previousEnd) {
    const lastBreak = previousEnd.map((t) => t.type === "newline").lastIndexOf(true);
    if (lastBreak >= 0) previousEnd.splice(lastBreak, 1);
  }
}

export interface AppendOptions {
  /** Quote style for the new item; plain falls back to double quotes when needed. */
  type: ScalarType;
  newline: "\n" | "\r\n";
}

export function appendSeqScalar(seq: YAMLSeq, value: string, options: AppendOptions): void {
  const token = seqToken(seq);
  // Trailing comment-only entries may follow the last real item; the new item goes right after that item.
  const items = token.items as CST.CollectionItem[];
  const lastIndex = items.map((entry) => entry.value !== undefined).lastIndexOf(true);
  const last = lastIndex >= 0 ? items[lastIndex] : undefined;
  const insert = (entry: CST.CollectionItem) => items.splice(lastIndex + 1, 0, entry);
  if (token.type === "flow-collection") {
    const type = safeType(value, options.type, true);
    const scalar = CST.createScalarToken(value, { indent: token.indent, inFlow: true, type, end: [] });
    const comma: CST.SourceToken = { type: "comma", offset: 0, indent: token.indent, source: "," };
    const space: CST.SourceToken = { type: "space", offset: 0, indent: token.indent, source: " " };
    // Multi-line flow lists keep their layout: reuse the separator (comma, newline, indent) of the last item.
    const reuse = last && last.start.some((t) => t.type === "comma") ? last.start.filter((t) => t.type !== "comment") : null;
    const start = !last ? [] : reuse ? reuse.map((t) => ({ ...t })) : [comma, space];
    insert({ start, value: scalar });
    return;
  }
  if (!last || !last.value) throw new YamlEditError("internal: cannot append to an empty block sequence");
  const lastEnd = (last.value as CST.FlowScalar).end;
  const newlineToken = lastEnd?.find((t) => t.type === "newline");
  const newline: CST.SourceToken = newlineToken ? { ...newlineToken } : { type: "newline", offset: 0, indent: 0, source: options.newline };
  let ownEnd: CST.SourceToken[] = [{ ...newline }];
  if (!newlineToken) {
    // The last item ends the file without a line break: it gets one, and the new item inherits the missing break.
    if (!lastEnd) throw new YamlEditError("internal: last item has no end tokens");
    lastEnd.push(newline);
    ownEnd = [];
  }
  const indicator = last.start.find((t) => t.type === "seq-item-ind");
  const afterIndicator = last.start[last.start.length - 1];
  const start: CST.SourceToken[] = [];
  if (token.indent > 0) start.push({ type: "space", offset: 0, indent: 0, source: " ".repeat(token.indent) });
  start.push({ type: "seq-item-ind", offset: 0, indent: token.indent, source: indicator?.source ?? "-" });
  start.push({ type: "space", offset: 0, indent: token.indent + 1, source: afterIndicator?.type === "space" ? afterIndicator.source : " " });
  const valueIndent = token.indent + 1 + (start[start.length - 1].source.length);
  const type = safeType(value, options.type, false);
  const scalar = CST.createScalarToken(value, { indent: valueIndent, type, end: ownEnd });
  insert({ start, value: scalar });
}
