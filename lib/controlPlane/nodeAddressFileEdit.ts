/**
 * A control-plane node's own YAML files after its address change (issue 16): its static-pod manifests (the
 * apiserver's --advertise-address, its endpoint annotation and probe hosts; etcd's client and peer URLs and
 * --initial-cluster) and its kubeconfigs (`server:`). Every string value that names the old address as a whole
 * address (lib/net/replaceAddress) names the new one; keys and every other byte stay as they were (lossless CST
 * edit, lib/yaml). The files are the node's own, so every mention of its old address is one to move.
 *
 * API: `moveNodeAddressInYaml(text, what, from, to)` → `{ text, changed }`, `changed` the dotted paths edited (empty:
 * nothing named the old address). The result is parsed again and must equal the input with exactly those values
 * replaced (fail closed). Errors: YamlEditError, one line naming `what`.
 */
import { CST, isCollection, isMap, isScalar, isSeq, Scalar, visit } from "yaml";
import { replaceAddress } from "../net/replaceAddress";
import { parseSingleDocument, renderTokens, safeType, scalarTypeOf, YamlEditError } from "../yaml/yamlCstEdit";

export interface NodeAddressFileEdit {
  text: string;
  changed: string[];
}

/** The document as plain data, every scalar its text (the failsafe schema parseSingleDocument uses). */
const plain = (text: string, what: string) => parseSingleDocument(text, what).doc.toJS() as unknown;

/** `value` with `from` replaced in every string leaf. */
function replacedEverywhere(value: unknown, from: string, to: string): unknown {
  if (typeof value === "string") return replaceAddress(value, from, to);
  if (Array.isArray(value)) return value.map((v) => replacedEverywhere(v, from, to));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, replacedEverywhere(v, from, to)]));
  return value;
}

export function moveNodeAddressInYaml(text: string, what: string, from: string, to: string): NodeAddressFileEdit {
  const parsed = parseSingleDocument(text, what);
  const changed: string[] = [];
  visit(parsed.doc, {
    Scalar(key, node, path) {
      if (key === "key" || typeof node.value !== "string") return;
      const value = replaceAddress(node.value, from, to);
      if (value === node.value) return;
      const parent = path[path.length - 1];
      const inFlow = isCollection(parent) ? Boolean(parent.flow) : isCollection(path[path.length - 2]) && Boolean((path[path.length - 2] as { flow?: boolean }).flow);
      CST.setScalarValue((node as Scalar).srcToken as CST.Token, value, { inFlow, type: safeType(value, scalarTypeOf(node as Scalar), inFlow) });
      changed.push(pathOf(path, node as Scalar));
    },
  });
  const result = renderTokens(parsed.tokens);
  if (JSON.stringify(plain(result, what)) !== JSON.stringify(replacedEverywhere(plain(text, what), from, to))) {
    throw new YamlEditError(`${what}: internal check failed, the edited file does not read back as the original with ${from} replaced by ${to}; edit it by hand and report this`);
  }
  return { text: result, changed };
}

/** "spec.containers[0].command[3]" for a value, from the visitor's ancestors. */
function pathOf(path: readonly unknown[], node: Scalar): string {
  const parts: string[] = [];
  let child: unknown = node;
  for (let i = path.length - 1; i >= 0; i--) {
    const ancestor = path[i];
    if (isSeq(ancestor)) parts.unshift(`[${ancestor.items.indexOf(child as never)}]`);
    else if (isMap(ancestor)) {
      const pair = ancestor.items.find((p) => p === child || p.value === child);
      if (pair && isScalar(pair.key)) parts.unshift(`.${String(pair.key.value)}`);
    }
    child = ancestor;
  }
  return parts.join("").replace(/^\./, "");
}
