/**
 * The fleet file: many clusters, one stack each, run in waves (dev first, then stage, then prod). Pure: the text
 * in, a typed FleetFile or every problem at once (ConfigError, each naming the stack and the key).
 *
 *   project: .                 # the project directory the stacks share (default: the file's directory)
 *   concurrency: 2             # clusters at once within a wave (default 1)
 *   routableTogether: true     # the clusters' new ranges must not overlap (default false)
 *   stacks:
 *     - { name: dev-a, wave: 1, backend: "file:///srv/pulumi/dev", config: { "services.parallelism": 4 } }
 *     - { name: prod, wave: 2, backend: "s3://state-bucket/prod" }
 *
 * `config` keys are cidr-migration config paths; they override the stack's own values for this run.
 */
import * as path from "path";
import { parse } from "yaml";
import { ConfigError, ConfigProblem } from "../config/errors";
import { cidrsOverlap, isCidr } from "../net/cidr";

export interface FleetStack {
  name: string;
  wave: number;
  backend: string;
  /** Config overrides, by cidr-migration config path ("services.parallelism"). */
  config: Record<string, unknown>;
}

export interface FleetFile {
  projectDir: string;
  concurrency: number;
  routableTogether: boolean;
  stacks: FleetStack[];
}

/** The new ranges a stack moves to, from its config (after overrides). */
export interface StackRanges {
  serviceCidr?: string;
  podCidr?: string;
}

const TOP_KEYS = ["project", "concurrency", "routableTogether", "stacks"];
const STACK_KEYS = ["name", "wave", "backend", "config"];
const STACK_NAME = /^[A-Za-z0-9_.-]+$/;
const BACKEND = /^(file|s3|azblob|gs|https?):\/\/\S+$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown) => JSON.stringify(v) ?? String(v);

export function parseFleetFile(text: string, file: string): FleetFile {
  const problems: ConfigProblem[] = [];
  const fail = (key: string, message: string) => problems.push({ key: `${path.basename(file)}: ${key}`, message });
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new ConfigError([{ key: path.basename(file), message: `is not YAML (${(err as Error).message.split("\n")[0]})` }]);
  }
  if (!isObject(doc)) throw new ConfigError([{ key: path.basename(file), message: "must be a mapping with a stacks: list" }]);
  for (const key of Object.keys(doc).filter((k) => !TOP_KEYS.includes(k))) fail(key, `unknown key; the keys are ${TOP_KEYS.join(", ")}`);

  const project = doc.project ?? ".";
  if (typeof project !== "string" || project === "") fail("project", `is ${show(project)}, not a directory`);
  const concurrency = doc.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || (concurrency as number) < 1) fail("concurrency", `is ${show(concurrency)}, not a whole number of 1 or more`);
  const routableTogether = doc.routableTogether ?? false;
  if (typeof routableTogether !== "boolean") fail("routableTogether", `is ${show(routableTogether)}, not true or false`);

  const stacks: FleetStack[] = [];
  if (!Array.isArray(doc.stacks) || doc.stacks.length === 0) fail("stacks", "must list at least one stack as {name, wave, backend}");
  else doc.stacks.forEach((raw: unknown, i: number) => {
    const at = `stacks[${i}]`;
    if (!isObject(raw)) {
      fail(at, `is ${show(raw)}, not {name, wave, backend}`);
      return;
    }
    const label = typeof raw.name === "string" ? `${at} (${raw.name})` : at;
    for (const key of Object.keys(raw).filter((k) => !STACK_KEYS.includes(k))) fail(`${label}.${key}`, `unknown key; a stack has ${STACK_KEYS.join(", ")}`);
    if (typeof raw.name !== "string" || !STACK_NAME.test(raw.name)) fail(`${at}.name`, `is ${show(raw.name)}, not a stack name (letters, digits, _ . -)`);
    if (!Number.isInteger(raw.wave) || (raw.wave as number) < 1) fail(`${label}.wave`, `is ${show(raw.wave)}, not a wave number of 1 or more`);
    if (typeof raw.backend !== "string" || !BACKEND.test(raw.backend)) fail(`${label}.backend`, `is ${show(raw.backend)}, not a backend URL (file://, s3://, azblob://, gs:// or https://)`);
    if (raw.config !== undefined && !isObject(raw.config)) fail(`${label}.config`, `is ${show(raw.config)}, not a mapping of config paths to values`);
    stacks.push({ name: String(raw.name), wave: Number(raw.wave), backend: String(raw.backend), config: isObject(raw.config) ? raw.config : {} });
  });
  problems.push(...fleetShapeProblems(stacks, path.basename(file)));
  if (problems.length > 0) throw new ConfigError(problems);
  return { projectDir: path.resolve(path.dirname(file), project as string), concurrency: concurrency as number, routableTogether: routableTogether as boolean, stacks };
}

/** A stack listed twice, or a wave with no stack between the first and the last. */
function fleetShapeProblems(stacks: FleetStack[], file: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const seen = new Map<string, number>();
  stacks.forEach((s, i) => {
    const key = `${s.backend} ${s.name}`;
    const first = seen.get(key);
    if (first !== undefined) problems.push({ key: `${file}: stacks[${i}] (${s.name})`, message: `lists stack ${s.name} on ${s.backend} again (first at stacks[${first}]); a stack runs once per fleet` });
    else seen.set(key, i);
  });
  const waves = [...new Set(stacks.map((s) => s.wave).filter((w) => Number.isInteger(w) && w >= 1))].sort((a, b) => a - b);
  for (let wave = 1; wave <= (waves[waves.length - 1] ?? 0); wave++) {
    if (!waves.includes(wave)) problems.push({ key: `${file}: stacks`, message: `wave ${wave} has no stack, but wave ${waves.find((w) => w > wave)} does; number the waves 1, 2, 3 ... without a gap` });
  }
  return problems;
}

/**
 * Clusters that must be routable together may not move to overlapping ranges: each stack's new Service and Pod
 * ranges against every other stack's. One problem per overlapping pair, naming both stacks and keys.
 */
export function overlappingRanges(fleet: FleetFile, ranges: Map<string, StackRanges>): ConfigProblem[] {
  if (!fleet.routableTogether) return [];
  const problems: ConfigProblem[] = [];
  const entries = fleet.stacks.flatMap((s) => (["serviceCidr", "podCidr"] as const)
    .map((key) => ({ stack: s.name, key, cidr: ranges.get(s.name)?.[key] }))
    .filter((e): e is { stack: string; key: "serviceCidr" | "podCidr"; cidr: string } => isCidr(e.cidr)));
  for (let i = 0; i < entries.length; i++) {
    for (let j = i + 1; j < entries.length; j++) {
      const [a, b] = [entries[i], entries[j]];
      if (a.stack === b.stack || !cidrsOverlap(a.cidr, b.cidr)) continue;
      problems.push({ key: `stack ${b.stack}: cidr-migration:${b.key}.to`, message: `${b.cidr} overlaps stack ${a.stack}'s ${a.key}.to ${a.cidr}, and the fleet file says the clusters must be routable together; give each cluster its own range` });
    }
  }
  return problems;
}
