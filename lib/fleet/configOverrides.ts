/**
 * A fleet file's per-stack `config` overrides ("services.parallelism": 4), applied for one run without touching the
 * stack's own Pulumi.<stack>.yaml: to the config values the CLI validates and plans with, and to a copy of the stack
 * file that the engine reads instead (its `--config-file`). Pure. Secret keys are never overridden: a value given in
 * the fleet file is plaintext, and the stack file is where secrets live, encrypted.
 */
import { Document, isMap, isScalar, parseDocument } from "yaml";
import { CONFIG_NAMESPACE } from "../config/configReader";
import { ConfigProblem } from "../config/errors";

export interface ConfigOverride {
  /** The config path split at dots: ["services", "parallelism"]. */
  path: string[];
  value: unknown;
}

export function overridesOf(config: Record<string, unknown>): ConfigOverride[] {
  return Object.entries(config).map(([key, value]) => ({ path: key.split("."), value }));
}

/** Overrides that name no key, or a key the stack holds as a secret, one problem each. */
export function overrideProblems(stack: string, overrides: ConfigOverride[], secretKeys: ReadonlySet<string>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const o of overrides) {
    const key = `stack ${stack}: config.${o.path.join(".")}`;
    if (o.path.some((p) => p === "")) problems.push({ key, message: "is not a config path (an empty part between dots); write it as services.parallelism" });
    else if (secretKeys.has(o.path[0])) problems.push({ key, message: `overrides ${CONFIG_NAMESPACE}:${o.path[0]}, which the stack holds as a secret; set secrets in the stack with pulumi config set --secret, never in the fleet file` });
  }
  return problems;
}

/** The config values with each override set at its path (a copy; the input is left as it was). */
export function applyOverrides(values: Record<string, unknown>, overrides: ConfigOverride[]): Record<string, unknown> {
  const result = structuredClone(values);
  for (const { path, value } of overrides) {
    let at: Record<string, unknown> = result;
    for (const part of path.slice(0, -1)) {
      const next = at[part];
      at = at[part] = typeof next === "object" && next !== null && !Array.isArray(next) ? (next as Record<string, unknown>) : {};
    }
    at[path[path.length - 1]] = value;
  }
  return result;
}

/**
 * The stack file's text with each override set, every other line (the encryption salt, secure values, comments)
 * kept as it was, so the engine decrypts the stack's secrets from the copy as from the original.
 */
export function overrideStackFile(text: string, overrides: ConfigOverride[]): string {
  const doc: Document = parseDocument(text);
  for (const { path, value } of overrides) {
    const [head, ...rest] = path;
    const top = ["config", `${CONFIG_NAMESPACE}:${head}`];
    // A nested override on a key that holds a scalar (or nothing) replaces it with a mapping, as applyOverrides does.
    if (rest.length > 0 && !isMap(doc.getIn(top, true))) doc.setIn(top, doc.createNode({}));
    doc.setIn([...top, ...rest], isScalar(value) ? value : doc.createNode(value));
  }
  return doc.toString();
}
