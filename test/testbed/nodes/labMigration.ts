// One migration of the node lab as an operator runs it, with live traffic throughout: a fresh cluster
// (`sandbox up --nodes`), the probe workload, then `pulumi preview`, `pulumi up` (its event log tailed as it grows)
// and `cidr-migration verify`, each through the CLI with the stack's environment. What bench:cluster prints and
// test/lab asserts. Runtime code: no mocha.
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import { TimedEvent } from "./engineTimeline";
import { defaultSite, labDown, LabInfo, labUp, LabSite, movedLabAddress, stackEnv } from "./labStack";
import { readProberRecords, startProbeWorkload, stopProber } from "./probeWorkload";

const REPO_ROOT = path.join(__dirname, "..", "..", "..");
const CLI = path.join(REPO_ROOT, "bin", "cidr-migration");
/** Traffic before the first preview and after verify: what the cluster looks like undisturbed. */
const BASELINE_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface LabMigrationOptions {
  /** services.bridgeOldIps */
  bridge: boolean;
  /** nodeRollout.strategy (default the stack's, reregister) */
  strategy?: "reregister" | "kubeadm-rejoin";
  /** services.moveInPlace (default: the config's, true with the recreate strategy) */
  moveInPlace?: boolean;
  /** services.strategy (default recreate); etcd-rewrite sets the nodes' strategy to match */
  servicesStrategy?: "recreate" | "etcd-rewrite";
  /**
   * SIGKILL `pulumi up` (its whole process group) as soon as this step's outputs are recorded, then recover as the
   * README says (cancel, refresh --clear-pending-creates) and run `up` again.
   */
  killAfter?: string;
  /** The lab to run on (default: `sandbox up --nodes`'s, cp-1 and two workers). */
  site?: LabSite;
  /** Nodes whose address the run changes too (nodeAddresses): each to movedLabAddress of its own. */
  moveAddresses?: string[];
  /** No range move: serviceCidr and podCidr removed from the stack, so the run changes moveAddresses' addresses only. */
  addressesOnly?: boolean;
  /** After verify, a second `pulumi preview --expect-no-changes` (`again`). */
  previewAgain?: boolean;
  /** Called with the lab's kubeconfig right before `pulumi up` (to record the cluster as it was). */
  beforeUp?: (kubeconfigPath: string) => void;
  log?: (line: string) => void;
}

export interface Timed {
  exitCode: number | null;
  millis: number;
  logFile: string;
}

export interface AddressMove {
  name: string;
  from: string;
  to: string;
}

export interface LabMigration {
  lab: LabInfo;
  /** where the logs of each command are */
  work: string;
  clusterUpMillis: number;
  cachedIp: string;
  preview: Timed;
  up: Timed;
  verify: Timed;
  /** the engine's events of `pulumi up`, each stamped when it was read */
  events: TimedEvent[];
  /** the nodes' address changes, as configured */
  addressMoves: AddressMove[];
  /** the second preview, when asked for */
  again?: Timed;
  /** everything the prober pods recorded */
  records: Array<Record<string, unknown>>;
}

/** The CLI (or `pulumi` itself), its output to `logFile`; resolves with its exit code and wall time. */
function run(args: string[], env: Record<string, string>, logFile: string, command = CLI, onSpawn?: (pid: number) => void): Promise<Timed> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const log = fs.openSync(logFile, "w");
    // its own process group, so a kill reaches the engine and its plugins as a crash of the machine would
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env, COLUMNS: "200" }, stdio: ["ignore", log, log], detached: true });
    if (child.pid !== undefined) onSpawn?.(child.pid);
    child.on("error", reject);
    child.on("close", (exitCode) => {
      fs.closeSync(log);
      resolve({ exitCode, millis: performance.now() - started, logFile });
    });
  });
}

/** Reads the engine's event log as it grows, stamping each event when it arrives (the events hold whole seconds only). */
function tailEvents(file: string, onEvent: (event: TimedEvent) => void = () => undefined): { events: TimedEvent[]; stop: () => void } {
  const events: TimedEvent[] = [];
  let offset = 0;
  let partial = "";
  const poll = () => {
    if (!fs.existsSync(file)) return;
    const size = fs.statSync(file).size;
    if (size <= offset) return;
    const fd = fs.openSync(file, "r");
    const buffer = Buffer.alloc(size - offset);
    fs.readSync(fd, buffer, 0, buffer.length, offset);
    fs.closeSync(fd);
    offset = size;
    const lines = (partial + buffer.toString("utf8")).split("\n");
    partial = lines.pop() ?? "";
    const at = Date.now();
    for (const line of lines.filter((l) => l.trim())) {
      const event = { at, event: JSON.parse(line) };
      events.push(event);
      onEvent(event);
    }
  };
  const timer = setInterval(poll, 250);
  return { events, stop: () => { clearInterval(timer); poll(); } };
}

export async function migrateLab(opts: LabMigrationOptions): Promise<LabMigration> {
  const log = opts.log ?? (() => undefined);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "lab-migration-"));
  const started = performance.now();
  const site = opts.site ?? defaultSite();
  await labDown(site);
  const lab = await labUp(site);
  const clusterUpMillis = performance.now() - started;
  log(`cluster up in ${(clusterUpMillis / 1000).toFixed(1)} s`);
  const env = stackEnv(site.dir);
  if (opts.addressesOnly) {
    for (const key of ["serviceCidr", "podCidr"]) {
      const rm = await run(["config", "rm", key, "--stack", lab.stack], env, path.join(work, "config.log"), "pulumi");
      if (rm.exitCode !== 0) throw new Error(`pulumi config rm ${key} failed; see ${rm.logFile}`);
    }
  }
  const settings: Array<[string, string]> = [
    // a run without a range move takes no Service move setting
    ...(opts.addressesOnly ? [] : [["services.bridgeOldIps", String(opts.bridge)] as [string, string]]),
    ...(opts.strategy ? [["nodeRollout.strategy", opts.strategy] as [string, string]] : []),
    ...(opts.servicesStrategy ? [["services.strategy", opts.servicesStrategy] as [string, string]] : []),
    ...(opts.moveInPlace !== undefined ? [["services.moveInPlace", String(opts.moveInPlace)] as [string, string]] : []),
  ];
  const addressMoves = (opts.moveAddresses ?? []).map((name) => {
    const from = lab.nodes.find((n) => n.name === name)?.ip;
    if (!from) throw new Error(`no lab node ${name} to move`);
    return { name, from, to: movedLabAddress(from) };
  });
  addressMoves.forEach((move, i) => settings.push(
    [`nodeAddresses[${i}].name`, move.name], [`nodeAddresses[${i}].from`, move.from], [`nodeAddresses[${i}].to`, move.to]));
  // the lab's nodes share one /24 bridge and keep no address config of their own: the live address only
  if (addressMoves.length > 0) settings.push(["hostAddress.persistence", "none"], ["hostAddress.prefix", "24"]);
  for (const [key, value] of settings) {
    const set = await run(["config", "set", "--path", key, value, "--stack", lab.stack], env, path.join(work, "config.log"), "pulumi");
    if (set.exitCode !== 0) throw new Error(`pulumi config set ${key} ${value} failed; see ${set.logFile}`);
  }

  const { cachedIp } = startProbeWorkload(lab.kubeconfigPath);
  log(`workload and prober ready; echo-a's cached ClusterIP ${cachedIp}`);
  await sleep(BASELINE_MS);
  const preview = await run(["pulumi", "preview", "--diff", "--stack", lab.stack], env, path.join(work, "preview.log"));
  log(`preview: exit ${preview.exitCode}`);
  opts.beforeUp?.(lab.kubeconfigPath);
  const eventLog = path.join(work, "events.jsonl");
  let upGroup: number | undefined;
  let killed: TimedEvent | undefined;
  const tail = tailEvents(eventLog, (event) => {
    const urn: string = event.event.resOutputsEvent?.metadata?.urn ?? "";
    if (opts.killAfter && !killed && upGroup !== undefined && urn.endsWith(`::${opts.killAfter}`)) {
      killed = event;
      process.kill(-upGroup, "SIGKILL");
    }
  });
  // --event-log is one of the CLI's debug commands, as the Automation API runs it
  const upArgs = ["pulumi", "up", "--yes", "--skip-preview", "--stack", lab.stack, "--event-log", eventLog];
  const upEnv = { ...env, PULUMI_DEBUG_COMMANDS: "true" };
  let up = await run(upArgs, upEnv, path.join(work, "up.log"), CLI, (pid) => { upGroup = pid; });
  if (opts.killAfter) {
    if (!killed) throw new Error(`pulumi up ended (exit ${up.exitCode}) before ${opts.killAfter} finished; see ${up.logFile}`);
    log(`up killed after ${opts.killAfter}; recovering as the README says`);
    for (const [name, args] of [["cancel", ["pulumi", "cancel", "--yes", "--stack", lab.stack]], ["refresh", ["pulumi", "refresh", "--clear-pending-creates", "--yes", "--stack", lab.stack]]] as const) {
      const step = await run([...args], env, path.join(work, `${name}.log`));
      if (step.exitCode !== 0) throw new Error(`pulumi ${name} after the kill failed; see ${step.logFile}`);
    }
    const first = up.millis;
    tail.stop();
    const again = tailEvents(path.join(work, "events-again.jsonl"));
    up = await run([...upArgs.slice(0, -1), path.join(work, "events-again.jsonl")], upEnv, path.join(work, "up-again.log"));
    up = { ...up, millis: up.millis + first };
    again.stop();
    tail.events.push(...again.events);
  }
  tail.stop();
  log(`up: exit ${up.exitCode} in ${(up.millis / 1000).toFixed(1)} s`);
  const verify = await run(["verify", "--stack", lab.stack], env, path.join(work, "verify.log"));
  log(`verify: exit ${verify.exitCode}`);
  await sleep(BASELINE_MS);
  stopProber(lab.kubeconfigPath);
  const again = opts.previewAgain ? await run(["pulumi", "preview", "--expect-no-changes", "--stack", lab.stack], env, path.join(work, "preview-again.log")) : undefined;
  return { lab, work, clusterUpMillis, cachedIp, preview, up, verify, addressMoves, ...(again ? { again } : {}), events: tail.events, records: readProberRecords() };
}
