/**
 * A tiny builder for the bash scripts that the node steps (RemoteScript) run on cluster nodes.
 *
 * API:
 * - sh`...${value}...` → `ShellCode`. Every interpolated string/number goes through shellQuote; arrays become
 *   several quoted words; interpolated `ShellCode` is inserted as-is. Template text itself is trusted code, taken
 *   raw (a `\n` stays backslash-n for the shell; write `\${x}` and `\`` for the shell's `${x}` and backtick).
 *   The template is dedented, so generators can indent it freely.
 * - `hostPath("/etc/kubernetes")` → `"$ROOT"'/etc/kubernetes'`: a path on the node, under the sandbox root.
 * - `buildScript({ name, root? }, steps)` → the script text: `#!/usr/bin/env bash`, `set -euo pipefail`,
 *   `readonly ROOT=...` (only when a step uses a host path), the `die`/`note` helpers, then the steps in order.
 *
 * ROOT is baked in when the script is generated (default "", i.e. the real `/`), never read from the node's
 * environment: the script reviewed in `pulumi preview` is exactly the one that runs. Tests pass a temp directory
 * as `root` so the same script works on a fake node tree.
 *
 * Script conventions: `die "message"` prints `cidr-migration <name>: message` on stderr and exits 1;
 * `note "message"` prints the same prefix on stdout (it ends up in the Pulumi log, so never pass secrets to it).
 */
import { shellQuote } from "./shellQuote";

/** A piece of shell code that is already safe to paste into a script. Only `sh`, `hostPath` and `trustedCode` make one. */
export class ShellCode {
  private constructor(
    readonly text: string,
    /** True when the code refers to $ROOT, so the script must define it. */
    readonly usesRoot: boolean,
  ) {}

  /** @internal use sh`` or hostPath(); this exists so callers cannot wrap unquoted input by accident. */
  static unsafeFromTrustedText(text: string, usesRoot = false): ShellCode {
    return new ShellCode(text, usesRoot);
  }
}

export type ShellValue = string | number | ShellCode | readonly (string | ShellCode)[];

function render(value: ShellValue): { text: string; usesRoot: boolean } {
  if (value instanceof ShellCode) return { text: value.text, usesRoot: value.usesRoot };
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error(`shell number ${value} is not an integer; pass a whole number`);
    return { text: String(value), usesRoot: false };
  }
  if (typeof value === "string") return { text: shellQuote(value), usesRoot: false };
  const parts = value.map((v) => render(v));
  return { text: parts.map((p) => p.text).join(" "), usesRoot: parts.some((p) => p.usesRoot) };
}

/** Common leading indentation of the template's own lines (interpolated values never count or change). */
function templateIndent(strings: readonly string[]): number {
  let min = Infinity;
  for (const part of strings) {
    const lines = part.split("\n").slice(1);
    for (const line of lines) {
      if (line.trim() === "") continue;
      min = Math.min(min, line.length - line.trimStart().length);
    }
  }
  return min === Infinity ? 0 : min;
}

export function sh(template: TemplateStringsArray, ...values: ShellValue[]): ShellCode {
  // The raw text, so backslashes are the shell's (printf '%s\n' stays as is); only the escapes TypeScript forces
  // on us for a literal \${ or \` are undone.
  const strings = template.raw.map((part) => part.replace(/\\(\$\{|`)/g, "$1"));
  const indent = templateIndent(strings);
  const dedent = (part: string) => part.split("\n").map((line, i) => (i === 0 ? line : line.slice(Math.min(indent, line.length - line.trimStart().length)))).join("\n");
  let text = "";
  let usesRoot = false;
  strings.forEach((part, i) => {
    text += dedent(part);
    if (i < values.length) {
      const rendered = render(values[i]);
      text += rendered.text;
      usesRoot ||= rendered.usesRoot;
    }
  });
  return ShellCode.unsafeFromTrustedText(text.replace(/^\n/, "").replace(/\n[ \t]*$/, ""), usesRoot);
}

/** Validates that a node path is absolute and plain, so it cannot climb out of ROOT or mean two things. */
export function checkHostPath(path: string, what: string): string {
  if (!path.startsWith("/") || path.includes("\0") || path.split("/").some((part) => part === ".." || part === ".")) {
    throw new Error(`${what} "${path}" is not an absolute path without . or .. parts; pass e.g. /etc/kubernetes/manifests`);
  }
  return path.length > 1 ? path.replace(/\/+$/, "") : path;
}

export function hostPath(path: string, what = "path"): ShellCode {
  return ShellCode.unsafeFromTrustedText(`"$ROOT"${shellQuote(checkHostPath(path, what))}`, true);
}

/** Every generator takes this: where `/` is (a test directory in tests, "" on a real node). */
export interface SandboxRoot {
  /** Directory standing in for `/` on the node; "" (default) means the real root. */
  root?: string;
}

export interface ScriptOptions {
  /** Short step name, shown in every message the script prints (e.g. "write-manifest"). */
  name: string;
  /** Directory standing in for `/` on the node; "" (default) means the real root. */
  root?: string;
}

const STEP_NAME = /^[a-z0-9][a-z0-9-]*$/;

export function buildScript(options: ScriptOptions, steps: readonly ShellCode[]): string {
  if (!STEP_NAME.test(options.name)) throw new Error(`script name "${options.name}" must be lower-case words joined by dashes`);
  const root = options.root ?? "";
  if (root !== "") checkHostPath(root, "sandbox root");
  const usesRoot = steps.some((s) => s.usesRoot);
  const prefix = `cidr-migration ${options.name}`;
  const lines = [
    "#!/usr/bin/env bash",
    `# ${prefix}: generated by cidr-migration; idempotent, safe to re-run.`,
    "set -euo pipefail",
    ...(usesRoot ? [`readonly ROOT=${shellQuote(root.replace(/\/+$/, ""))}`] : []),
    `die() { printf '%s: %s\\n' ${shellQuote(prefix)} "$*" >&2; exit 1; }`,
    `note() { printf '%s: %s\\n' ${shellQuote(prefix)} "$*"; }`,
    "",
    ...steps.map((s) => s.text),
  ];
  return `${lines.join("\n")}\n`;
}
