/**
 * Lossless edits of scalar values inside YAML (and JSON) mappings, through the `yaml` package's CST: the sibling
 * of lib/yaml/yamlCstEdit (which edits sequences) for the config texts kept in ConfigMaps (kube-proxy's config.conf,
 * kubeadm's ClusterConfiguration, flannel's net-conf.json).
 *
 * Why: an operator reviews the Patch diff in `pulumi preview`. Re-serialising the whole text would re-order keys,
 * re-quote values and drop comments; here only the bytes of the edited value change.
 *
 * API:
 * - `editMapScalars(text, what, edits)` → `{ text, changes }`. Each edit is `{ path, value, createMissing? }`:
 *   `path` names a key inside nested mappings (e.g. ["networking", "podSubnet"]); the value there must be a
 *   scalar. A missing key is added at the end of its mapping (block style, indented like its siblings) only with
 *   `createMissing`, else the edit throws. Values keep their quote style when it can hold them; new or plain values
 *   are written plain when they read back as the same string (`10.48.0.0/16`), else double-quoted.
 * - `readMapScalar(text, what, path)` → the string value, or undefined when the key is missing.
 * The result is re-parsed and compared with the request before it is returned (fail closed). Errors are
 * `YamlEditError`, one line naming `what` and the key.
 * Values are read with the failsafe schema, so every scalar is its text: `24` is "24", `true` is "true".
 */
import { CST, Pair, Scalar, YAMLMap, YAMLSeq, isMap, isScalar, isSeq } from "yaml";
import { ParsedYaml, YamlEditError, parseSingleDocument, renderTokens, safeType, scalarTypeOf } from "./yamlCstEdit";

export interface MapScalarEdit {
  /** Keys of nested mappings; a number steps into a sequence item (kubeadm v1beta4 extraArgs: [..., 2, "value"]). */
  path: readonly (string | number)[];
  value: string;
  /** Add the key when it is missing (default false: a missing key is an error). */
  createMissing?: boolean;
}

export interface MapScalarChange {
  path: string;
  action: "added" | "updated" | "unchanged";
  before?: string;
  after: string;
}

export interface MapEditResult {
  text: string;
  changes: MapScalarChange[];
}


function dotted(path: readonly (string | number)[]): string {
  return path.map((key) => (typeof key === "number" ? `[${key}]` : key)).join(".").replace(/\.\[/g, "[");
}

function parentMap(parsed: ParsedYaml, path: readonly (string | number)[], what: string): YAMLMap {
  let node: unknown = parsed.doc.contents;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i];
    if (typeof key === "number" && isSeq(node)) node = (node as YAMLSeq).items[key];
    else if (typeof key === "string" && isMap(node)) node = (node as YAMLMap).get(key, true);
    else {
      node = undefined;
      break;
    }
  }
  if (!isMap(node)) {
    const parent = path.length > 1 ? dotted(path.slice(0, -1)) : "the top level";
    throw new YamlEditError(`${what}: ${parent} is not a mapping, so ${dotted(path)} cannot be set; fix the file first`);
  }
  return node as YAMLMap;
}

function findPair(map: YAMLMap, key: string): Pair | undefined {
  return map.items.find((pair) => isScalar(pair.key) && String((pair.key as Scalar).value) === key);
}

function setExisting(map: YAMLMap, pair: Pair, value: string, what: string, path: readonly (string | number)[]): void {
  if (!isScalar(pair.value) || !(pair.value as Scalar).srcToken) {
    throw new YamlEditError(`${what}: ${dotted(path)} has no scalar value (it is empty or a nested object); set it by hand`);
  }
  const scalar = pair.value as Scalar;
  if (scalar.type === "BLOCK_LITERAL" || scalar.type === "BLOCK_FOLDED") {
    throw new YamlEditError(`${what}: ${dotted(path)} is a block scalar (| or >); set it by hand`);
  }
  const inFlow = (map.srcToken as CST.Token | undefined)?.type === "flow-collection";
  CST.setScalarValue(scalar.srcToken as CST.Token, value, { inFlow, type: safeType(value, scalarTypeOf(scalar), inFlow) });
}

function appendPair(map: YAMLMap, key: string, value: string, newline: "\n" | "\r\n", what: string, path: readonly (string | number)[]): void {
  const token = map.srcToken as CST.Token | undefined;
  if (!token || token.type !== "block-map") {
    throw new YamlEditError(`${what}: cannot add ${dotted(path)} to a flow-style or empty mapping; add it by hand`);
  }
  const items = token.items;
  // Trailing comment-only entries may follow the last real pair; the new pair goes right after that pair.
  const lastIndex = items.map((item) => item.key !== undefined || item.value !== undefined).lastIndexOf(true);
  if (lastIndex < 0) throw new YamlEditError(`${what}: the mapping holding ${dotted(path)} has no entries to align with; add it by hand`);
  const last = items[lastIndex];
  const lastValue = last.value as CST.Token | undefined;
  const lastText = lastValue ? CST.stringify(lastValue) : "";
  let ownEnd: CST.SourceToken[] = [{ type: "newline", offset: 0, indent: token.indent, source: newline }];
  if (!/\n$/.test(lastText)) {
    // The last pair ends the text without a line break: give it one, and the new pair inherits the missing break.
    const scalar = lastValue as CST.FlowScalar | undefined;
    if (!scalar || !["scalar", "single-quoted-scalar", "double-quoted-scalar"].includes(scalar.type)) {
      throw new YamlEditError(`${what}: cannot find the end of the entry before ${dotted(path)}; add it by hand`);
    }
    scalar.end = [...(scalar.end ?? []), { type: "newline", offset: 0, indent: token.indent, source: newline }];
    ownEnd = [];
  }
  const start: CST.SourceToken[] = token.indent > 0 ? [{ type: "space", offset: 0, indent: 0, source: " ".repeat(token.indent) }] : [];
  const keyToken = CST.createScalarToken(key, { indent: token.indent, type: safeType(key, "PLAIN", false), end: [] });
  const sep: CST.SourceToken[] = [
    { type: "map-value-ind", offset: 0, indent: token.indent, source: ":" },
    { type: "space", offset: 0, indent: token.indent, source: " " },
  ];
  const valueToken = CST.createScalarToken(value, { indent: token.indent, type: safeType(value, "PLAIN", false), end: ownEnd });
  items.splice(lastIndex + 1, 0, { start, key: keyToken, sep, value: valueToken });
}

function parse(text: string, what: string): ParsedYaml {
  const parsed = parseSingleDocument(text, what);
  if (!isMap(parsed.doc.contents)) throw new YamlEditError(`${what}: the top level is not a mapping; pass the config text itself`);
  return parsed;
}

function lookup(parsed: ParsedYaml, path: readonly (string | number)[], what: string): string | undefined {
  const pair = findPair(parentMap(parsed, path, what), lastKey(path, what));
  if (!pair) return undefined;
  if (pair.value === null || pair.value === undefined) return "";
  if (!isScalar(pair.value)) throw new YamlEditError(`${what}: ${dotted(path)} has no scalar value (it is a nested object); set it by hand`);
  return String((pair.value as Scalar).value);
}

/** Fail closed: the edited text must read back as the original with exactly the requested values set. */
function verifyEdit(original: string, edited: string, what: string, edits: readonly MapScalarEdit[]): void {
  const expected = parse(original, what).doc.toJS() as Record<string, unknown>;
  for (const edit of edits) {
    let node = expected;
    for (const key of edit.path.slice(0, -1)) node = node[key] as Record<string, unknown>;
    node[lastKey(edit.path, what)] = edit.value;
  }
  const actual = parse(edited, what).doc.toJS();
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new YamlEditError(`${what}: internal check failed, the edited text does not read back as intended; edit it by hand and report this`);
  }
}

/** The key the value sits under: always a mapping key (sequence items are stepped through, never set). */
function lastKey(path: readonly (string | number)[], what: string): string {
  const key = path[path.length - 1];
  if (typeof key !== "string") throw new YamlEditError(`${what}: ${dotted(path)} ends in a sequence index; name the mapping key to set`);
  return key;
}

export function readMapScalar(text: string, what: string, path: readonly (string | number)[]): string | undefined {
  return lookup(parse(text, what), path, what);
}

export function editMapScalars(text: string, what: string, edits: readonly MapScalarEdit[]): MapEditResult {
  const parsed = parse(text, what);
  const changes: MapScalarChange[] = [];
  for (const edit of edits) {
    if (edit.path.length === 0) throw new YamlEditError(`${what}: empty key path`);
    const map = parentMap(parsed, edit.path, what);
    const key = lastKey(edit.path, what);
    const pair = findPair(map, key);
    if (!pair) {
      if (!edit.createMissing) throw new YamlEditError(`${what}: no ${dotted(edit.path)} to set; check that this is the right config`);
      appendPair(map, key, edit.value, parsed.newline, what, edit.path);
      changes.push({ path: dotted(edit.path), action: "added", after: edit.value });
      continue;
    }
    const before = lookup(parsed, edit.path, what);
    if (before === edit.value) {
      changes.push({ path: dotted(edit.path), action: "unchanged", before, after: edit.value });
      continue;
    }
    setExisting(map, pair, edit.value, what, edit.path);
    changes.push({ path: dotted(edit.path), action: "updated", before, after: edit.value });
  }
  const result = changes.every((c) => c.action === "unchanged") ? text : renderTokens(parsed.tokens);
  verifyEdit(text, result, what, edits);
  return { text: result, changes };
}
