/**
 * Read and set command-line flags in a kubeadm static-pod manifest (kube-apiserver.yaml,
 * kube-controller-manager.yaml), changing nothing else in the file.
 *
 * API:
 * - `readFlags(text, { container?, source? })` → `Map<flagName, values[]>`: every `--flag` occurrence in argv order
 *   (command after its executable, then args, as the kubelet concatenates them). The last value is the one the
 *   component uses; `readFlag(text, name, options)` returns just that.
 * - `setFlags(text, { "cluster-cidr": "10.48.0.0/16", "node-cidr-mask-size": 24, ... }, { container?, source? })`
 *   → `{ text, changes: FlagChange[] }` (one change per requested flag, in request order). A value of `null`
 *   removes the flag (every occurrence): KCM refuses `--node-cidr-mask-size` beside a dual-stack `--cluster-cidr`.
 * - Errors are `ManifestFlagError` with a one-line message naming `source` (default "manifest").
 *
 * How flags are read (pflag's rules, as the components parse them):
 * - `--name=value` (joined), `--name value` (two list items; the next item does not start with "-"),
 *   or a bare `--name` (a boolean, value "true"). Quoted items ('--x=y', "--x=y") are the same strings.
 * - Kubernetes components take no positional arguments, so `--name` followed by a non-dash item is name + value.
 * - Scalars are read as written (failsafe schema): `- 24` is the string "24".
 *
 * How flags are set:
 * - Present once: its value is rewritten in place, in its own form (joined / separate / bare → joined) and quote style.
 * - Repeated: the last occurrence (the effective one) is rewritten and the earlier ones are removed, so exactly one
 *   value remains. A reviewer or a `grep` must never find a stale range still sitting in the file.
 * - Missing: appended as `--name=value` after the last item of `args` when the container has args, else of `command`,
 *   in the quote style and indentation of the items around it.
 * - Same value already effective and not repeated: nothing changes, so a second edit is a no-op (idempotent).
 * Every other byte of the file stays as it was (edits go through lib/yaml/yamlCstEdit), and the result is re-read and
 * checked before it is returned; a mismatch throws instead of returning a wrong manifest.
 */
import { Scalar, YAMLMap, YAMLSeq, isMap, isScalar, isSeq, parse } from "yaml";
import { appendSeqScalar, parseSingleDocument, removeSeqScalar, renderTokens, setSeqScalar, YamlEditError } from "../yaml/yamlCstEdit";

export class ManifestFlagError extends Error {
  constructor(message: string) {
    super(message);
    this.message = message; // see UserError
    this.name = "ManifestFlagError";
  }
}

export type FlagValue = string | number | boolean;
export type FlagList = "command" | "args";

export interface ManifestTarget {
  /** Container name; may be left out when the Pod has exactly one container. */
  container?: string;
  /** Names the file in error messages, e.g. "/etc/kubernetes/manifests/kube-apiserver.yaml". */
  source?: string;
}

export interface FlagChange {
  /** Flag name without the leading dashes. */
  flag: string;
  action: "added" | "updated" | "unchanged" | "removed";
  /** Effective value before the edit; undefined when the flag was missing. */
  before?: string;
  /** undefined when the flag was removed, or asked to be and was not there */
  after?: string;
  /** The list that holds the flag after the edit. */
  list: FlagList;
  /** Earlier occurrences that were removed to leave one effective value. */
  removedDuplicates: number;
}

export interface SetFlagsResult {
  text: string;
  changes: FlagChange[];
}

interface ArgvItem {
  list: FlagList;
  seq: YAMLSeq;
  item: Scalar;
  text: string;
}

interface Occurrence {
  name: string;
  value: string;
  form: "joined" | "separate" | "bare";
  flagItem: ArgvItem;
  valueItem?: ArgvItem;
}

interface ContainerArgv {
  command?: YAMLSeq;
  args?: YAMLSeq;
  argv: ArgvItem[];
  occurrences: Occurrence[];
  containerName: string;
}

// an array, not a Set: a dynamic provider captures this module, and the closure serializer cannot rebuild a Set
const SHELLS = ["sh", "bash", "ash", "dash", "/bin/sh", "/bin/bash", "/bin/ash", "/bin/dash", "/usr/bin/env"];
const FLAG_NAME = /^[a-z0-9][a-z0-9.-]*$/;

function normalizeFlagName(flag: string, source: string): string {
  const name = flag.replace(/^--/, "");
  if (!FLAG_NAME.test(name)) {
    throw new ManifestFlagError(`${source}: "${flag}" is not a flag name; use e.g. "cluster-cidr" or "--cluster-cidr"`);
  }
  return name;
}

function listItems(container: YAMLMap, list: FlagList, containerName: string, source: string): { seq?: YAMLSeq; items: ArgvItem[] } {
  const node = container.get(list, true);
  if (node === undefined || node === null) return { items: [] };
  if (!isSeq(node)) throw new ManifestFlagError(`${source}: ${list} of container "${containerName}" is not a list; fix the manifest`);
  const seq = node as YAMLSeq;
  const items = seq.items.map((item, index) => {
    if (!isScalar(item)) {
      throw new ManifestFlagError(`${source}: ${list}[${index}] of container "${containerName}" is not a string; fix the manifest`);
    }
    return { list, seq, item: item as Scalar, text: String(item.value) };
  });
  return { seq, items };
}

function findContainer(root: unknown, target: ManifestTarget, source: string): { container: YAMLMap; name: string } {
  if (!isMap(root)) throw new ManifestFlagError(`${source}: not a Kubernetes object (top level is not a mapping); pass a static-pod manifest`);
  const kind = (root as YAMLMap).get("kind");
  if (kind !== "Pod") {
    throw new ManifestFlagError(`${source}: kind is ${kind === undefined ? "missing" : `"${String(kind)}"`}, not a Pod; pass a static-pod manifest such as kube-apiserver.yaml`);
  }
  const containers = (root as YAMLMap).getIn(["spec", "containers"], true);
  if (!isSeq(containers) || containers.items.length === 0 || !containers.items.every(isMap)) {
    throw new ManifestFlagError(`${source}: spec.containers is missing or not a list of containers; fix the manifest`);
  }
  const all = containers.items as YAMLMap[];
  const names = all.map((c) => String(c.get("name") ?? "(unnamed)"));
  if (target.container === undefined) {
    if (all.length === 1) return { container: all[0], name: names[0] };
    throw new ManifestFlagError(`${source}: the Pod has ${all.length} containers (${names.join(", ")}); pass container`);
  }
  const index = names.indexOf(target.container);
  if (index < 0) throw new ManifestFlagError(`${source}: no container "${target.container}" (containers: ${names.join(", ")}); pass one of those`);
  return { container: all[index], name: names[index] };
}

function parseOccurrences(argv: ArgvItem[]): Occurrence[] {
  const occurrences: Occurrence[] = [];
  for (let i = 0; i < argv.length; i++) {
    const text = argv[i].text;
    if (text === "--") break; // pflag stops parsing flags here
    if (!text.startsWith("--") || text.length === 2) continue;
    const body = text.slice(2);
    const eq = body.indexOf("=");
    if (eq >= 0) {
      occurrences.push({ name: body.slice(0, eq), value: body.slice(eq + 1), form: "joined", flagItem: argv[i] });
      continue;
    }
    const next = argv[i + 1];
    if (next && !next.text.startsWith("-")) {
      occurrences.push({ name: body, value: next.text, form: "separate", flagItem: argv[i], valueItem: next });
      i++;
    } else {
      occurrences.push({ name: body, value: "true", form: "bare", flagItem: argv[i] });
    }
  }
  return occurrences;
}

function containerArgv(root: unknown, target: ManifestTarget, source: string): ContainerArgv {
  const { container, name } = findContainer(root, target, source);
  const command = listItems(container, "command", name, source);
  const args = listItems(container, "args", name, source);
  const executable = command.items[0]?.text;
  if (executable !== undefined && SHELLS.includes(executable)) {
    throw new ManifestFlagError(`${source}: container "${name}" starts its component through "${executable}"; flags inside a shell string cannot be edited safely, edit them by hand`);
  }
  // command[0] is the executable; the kubelet passes command[1:] + args as the component's arguments.
  const argv = [...command.items.slice(1), ...args.items];
  return { command: command.seq, args: args.seq, argv, occurrences: parseOccurrences(argv), containerName: name };
}

function load(text: string, target: ManifestTarget) {
  const source = target.source ?? "manifest";
  try {
    const parsed = parseSingleDocument(text, source);
    return { parsed, source, container: containerArgv(parsed.doc.contents, target, source) };
  } catch (error) {
    if (error instanceof YamlEditError) throw new ManifestFlagError(error.message);
    throw error;
  }
}

function flagMap(occurrences: Occurrence[]): Map<string, string[]> {
  const flags = new Map<string, string[]>();
  for (const o of occurrences) flags.set(o.name, [...(flags.get(o.name) ?? []), o.value]);
  return flags;
}

export function readFlags(text: string, target: ManifestTarget = {}): Map<string, string[]> {
  return flagMap(load(text, target).container.occurrences);
}

/** The value the component runs with (the last occurrence), or undefined when the flag is not set. */
export function readFlag(text: string, flag: string, target: ManifestTarget = {}): string | undefined {
  const values = readFlags(text, target).get(normalizeFlagName(flag, target.source ?? "manifest"));
  return values?.[values.length - 1];
}

function styleOf(items: ArgvItem[]): "PLAIN" | "QUOTE_SINGLE" | "QUOTE_DOUBLE" {
  const flags = items.filter((i) => i.text.startsWith("-"));
  const sample = flags[flags.length - 1] ?? items[items.length - 1];
  const type = sample?.item.type;
  return type === "QUOTE_SINGLE" || type === "QUOTE_DOUBLE" ? type : "PLAIN";
}

export function setFlags(text: string, flags: Record<string, FlagValue | null>, target: ManifestTarget = {}): SetFlagsResult {
  const { parsed, source, container } = load(text, target);
  const wanted = Object.entries(flags).map(([flag, value]) => ({ name: normalizeFlagName(flag, source), value: value === null ? undefined : String(value) }));
  const changes: FlagChange[] = [];

  for (const { name, value } of wanted) {
    const found = container.occurrences.filter((o) => o.name === name);
    if (value === undefined) {
      for (const o of found) for (const part of [o.flagItem, o.valueItem]) if (part) removeSeqScalar(part.seq, part.item);
      const list = found[found.length - 1]?.flagItem.list ?? (container.args ? "args" : "command");
      changes.push({ flag: name, action: found.length > 0 ? "removed" : "unchanged", before: found[found.length - 1]?.value, list, removedDuplicates: Math.max(0, found.length - 1) });
      continue;
    }
    if (found.length === 0) {
      const seq = container.args ?? container.command;
      const list: FlagList = container.args ? "args" : "command";
      if (!seq) throw new ManifestFlagError(`${source}: container "${container.containerName}" has neither command nor args to add --${name} to; fix the manifest`);
      appendSeqScalar(seq, `--${name}=${value}`, { type: styleOf(container.argv.filter((i) => i.list === list)), newline: parsed.newline });
      changes.push({ flag: name, action: "added", after: value, list, removedDuplicates: 0 });
      continue;
    }
    const effective = found[found.length - 1];
    const duplicates = found.slice(0, -1);
    for (const dup of duplicates) {
      for (const part of [dup.flagItem, dup.valueItem]) if (part) removeSeqScalar(part.seq, part.item);
    }
    if (effective.value !== value) {
      if (effective.form === "separate" && effective.valueItem && !value.startsWith("-")) {
        setSeqScalar(effective.valueItem.seq, effective.valueItem.item, value);
      } else {
        // A value starting with "-" would read as another flag when separate, so it is joined instead.
        setSeqScalar(effective.flagItem.seq, effective.flagItem.item, `--${name}=${value}`);
        if (effective.valueItem) removeSeqScalar(effective.valueItem.seq, effective.valueItem.item);
      }
    }
    const changed = effective.value !== value || duplicates.length > 0;
    changes.push({
      flag: name,
      action: changed ? "updated" : "unchanged",
      before: effective.value,
      after: value,
      list: effective.flagItem.list,
      removedDuplicates: duplicates.length,
    });
  }

  const result = changes.every((c) => c.action === "unchanged") ? text : renderTokens(parsed.tokens);
  verifyEdit(container.occurrences, result, wanted, target, source);
  return { text: result, changes };
}

/** `--flag=value` for each flag an edit leaves set: what the restarted component's command line must show (a removed flag shows nothing). */
export function expectedFlags(changes: FlagChange[]): string[] {
  return changes.filter((c) => c.after !== undefined).map((c) => `--${c.flag}=${c.after}`);
}

/** Fail closed: the edited text must carry exactly the requested values and every other flag unchanged. */
function verifyEdit(before: Occurrence[], edited: string, wanted: Array<{ name: string; value?: string }>, target: ManifestTarget, source: string): void {
  const after = flagMap(load(edited, target).container.occurrences);
  const expected = flagMap(before);
  for (const { name, value } of wanted) {
    if (value === undefined) expected.delete(name);
    else expected.set(name, [value]);
  }
  const same = after.size === expected.size && [...expected].every(([name, values]) => JSON.stringify(after.get(name)) === JSON.stringify(values));
  if (!same) throw new ManifestFlagError(`${source}: internal check failed, the edited manifest does not read back as intended; edit it by hand and report this`);
}

/** kubeadm names the container like the component; a manifest with a single container needs no name. */
export function containerFor(text: string, component: string): string | undefined {
  let containers: unknown;
  try {
    containers = (parse(text) as { spec?: { containers?: unknown } } | null)?.spec?.containers;
  } catch {
    return undefined; // setFlags reports the YAML error with the file's name
  }
  return Array.isArray(containers) && containers.length > 1 ? component : undefined;
}
