/**
 * `npm run bench:cluster`: the whole migration on the node lab (a real 3-node kubeadm cluster, `sandbox up --nodes`),
 * run by the real engine as an operator runs it — `pulumi preview`, `pulumi up`, `cidr-migration verify` — with live
 * traffic from real pods throughout (test/testbed/nodes/prober): DNS lookups of Service names through each pod's own
 * resolv.conf, HTTP to Services by name through kube-proxy, and HTTP to a Service's ClusterIP from before the move,
 * as a client that cached it. Prints the per-phase times, each node's time beside the runbook's 5–8 min, and the
 * prober's failures per phase with the longest outage per Service. Twice, each on a fresh cluster (root; about
 * 2 min to bring up): without and with services.bridgeOldIps, the old ClusterIPs kept answering until the pods have
 * moved; `--no-bridge` or `--bridge` runs one. Figures only, never pass/fail.
 */
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import { labDown, labUp, LabInfo, stackEnv } from "../test/testbed/nodes/labStack";
import { readProberRecords, startProbeWorkload, stopProber } from "../test/testbed/nodes/probeWorkload";
import { phaseWindows, TimedEvent, Window } from "./engineTimeline";
import { PROBES, summarizeTraffic } from "./trafficSummary";

const REPO_ROOT = path.join(__dirname, "..");
const CLI = path.join(REPO_ROOT, "bin", "cidr-migration");
/** The published runbook's time per node (drain, reset, rejoin by hand). */
const RUNBOOK_NODE_SECONDS = { low: 5 * 60, high: 8 * 60 };
const BASELINE_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const seconds = (ms: number) => (ms / 1000).toFixed(1);

/** The CLI (or `pulumi` itself), its output to `logFile`; resolves with its exit code. */
function run(args: string[], env: Record<string, string>, logFile: string, command = CLI): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const log = fs.openSync(logFile, "w");
    const child = spawn(command, args, { cwd: REPO_ROOT, env: { ...process.env, ...env, COLUMNS: "200" }, stdio: ["ignore", log, log] });
    child.on("error", reject);
    child.on("close", (code) => { fs.closeSync(log); resolve(code); });
  });
}

/** Reads the engine's event log as it grows, stamping each event when it arrives. */
function tailEvents(file: string): { events: TimedEvent[]; stop: () => void } {
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
    for (const line of lines.filter((l) => l.trim())) events.push({ at, event: JSON.parse(line) });
  };
  const timer = setInterval(poll, 250);
  return { events, stop: () => { clearInterval(timer); poll(); } };
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ")).join("\n");
}

interface RunFigures {
  bridge: boolean;
  upSeconds: number;
  cachedIpFailures: number;
  cachedIpRequests: number;
  longestCachedOutageSeconds: number;
  failedLookups: number;
  failedByName: number;
}

/** One migration on a fresh cluster, with or without services.bridgeOldIps; prints its tables, returns its headline figures. */
async function migrateOnce(bridge: boolean): Promise<RunFigures> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "bench-cluster-"));
  console.log(`\n=== services.bridgeOldIps: ${bridge} — a fresh node lab (cidr-migration sandbox up --nodes)`);
  let started = performance.now();
  await labDown();
  const lab: LabInfo = await labUp();
  console.log(`  cluster up: ${seconds(performance.now() - started)} s`);
  const env = stackEnv();
  if (bridge && (await run(["pulumi", "config", "set", "--path", "services.bridgeOldIps", "true", "--stack", lab.stack], env, path.join(work, "config.log"), "pulumi")) !== 0) {
    throw new Error(`pulumi config set services.bridgeOldIps failed; see ${work}/config.log`);
  }

  const { cachedIp } = startProbeWorkload(lab.kubeconfigPath);
  console.log(`  workload and prober ready; echo-a's cached ClusterIP ${cachedIp}; baseline ${BASELINE_MS / 1000} s`);
  await sleep(BASELINE_MS);

  started = performance.now();
  const previewCode = await run(["pulumi", "preview", "--diff", "--stack", lab.stack], env, path.join(work, "preview.log"));
  const previewMs = performance.now() - started;
  const eventLog = path.join(work, "events.jsonl");
  const tail = tailEvents(eventLog);
  started = performance.now();
  const upCode = await run(["pulumi", "up", "--yes", "--skip-preview", "--stack", lab.stack, "--event-log", eventLog], env, path.join(work, "up.log"));
  const upMs = performance.now() - started;
  tail.stop();
  started = performance.now();
  const verifyCode = await run(["verify", "--stack", lab.stack], env, path.join(work, "verify.log"));
  const verifyMs = performance.now() - started;
  await sleep(BASELINE_MS);
  stopProber(lab.kubeconfigPath);

  const { phases, nodes } = phaseWindows(tail.events, lab.nodes.map((n) => n.name));
  console.log(`\n  preview ${seconds(previewMs)} s (exit ${previewCode}), up ${seconds(upMs)} s (exit ${upCode}), verify ${seconds(verifyMs)} s (exit ${verifyCode}); logs in ${work}`);
  console.log("\nPhases (from the engine's events; they overlap where the graph runs them side by side)\n");
  const t0 = phases[0]?.start ?? 0;
  console.log(table([["phase", "starts at s", "takes s"], ...phases.map((w: Window) => [w.name, seconds(w.start - t0), seconds(w.end - w.start)])]));
  console.log("\nNodes, beside the runbook's 5–8 min per node\n");
  console.log(table([["node", "takes s", "runbook ÷ this"], ...nodes.map((w) => {
    const s = (w.end - w.start) / 1000;
    return [w.name, s.toFixed(1), `${(RUNBOOK_NODE_SECONDS.low / s).toFixed(0)}–${(RUNBOOK_NODE_SECONDS.high / s).toFixed(0)}×`];
  })]));

  const records = readProberRecords();
  const nameservers = [...new Set(records.filter((r) => r.kind === "start").flatMap((r) => r.nameservers as string[]))];
  const pods = records.filter((r) => r.kind === "start").length;
  const traffic = summarizeTraffic(records, phases);
  console.log(`\nTraffic from ${pods} prober pods (nameservers they used: ${nameservers.join(", ")}); ok/failed per phase\n`);
  const cell = (t: { ok: number; fail: number }) => `${t.ok}/${t.fail}`;
  console.log(table([
    ["phase", "DNS lookups", "HTTP by name", `HTTP to cached ${cachedIp}`],
    ...traffic.byPhase.map((row) => [row.phase, ...PROBES.map((p) => cell(row.counts[p]))]),
    ["whole run", ...PROBES.map((p) => cell(traffic.total[p]))],
  ]));
  console.log("\nLongest outage per probe and target (first failure to the next success)\n");
  if (traffic.longest.length === 0) console.log("  none: no probe failed");
  else console.log(table([["probe", "target", "outage s", "failures", "during", "first error"], ...traffic.longest.map((o) => [
    o.probe, o.target, `${seconds(o.millis)}${o.open ? " (open at pod stop)" : ""}`, String(o.failures), o.phases.join(", "), (o.firstError ?? "").slice(0, 80),
  ])]));
  const cached = traffic.longest.find((o) => o.probe === "oldip");
  return {
    bridge,
    upSeconds: upMs / 1000,
    cachedIpFailures: traffic.total.oldip.fail,
    cachedIpRequests: traffic.total.oldip.ok + traffic.total.oldip.fail,
    longestCachedOutageSeconds: (cached?.millis ?? 0) / 1000,
    failedLookups: traffic.total.dns.fail,
    failedByName: traffic.total.name.fail,
  };
}

async function main(): Promise<void> {
  // `--bridge` or `--no-bridge` runs one; both by default, the comparison the issue asks for
  const modes = process.argv.includes("--bridge") ? [true] : process.argv.includes("--no-bridge") ? [false] : [false, true];
  const figures: RunFigures[] = [];
  for (const bridge of modes) figures.push(await migrateOnce(bridge));
  console.log("\n=== Summary\n");
  console.log(table([["services.bridgeOldIps", "up s", "failed DNS lookups", "failed HTTP by name", "failed HTTP to cached IP", "longest cached-IP outage s"], ...figures.map((f) => [
    String(f.bridge), f.upSeconds.toFixed(1), String(f.failedLookups), String(f.failedByName), `${f.cachedIpFailures} of ${f.cachedIpRequests}`, f.longestCachedOutageSeconds.toFixed(1),
  ])]));
  const [without, withBridge] = [figures.find((f) => !f.bridge), figures.find((f) => f.bridge)];
  if (without && withBridge) {
    console.log(`\n  the bridge: cached-IP failures ${without.cachedIpFailures} → ${withBridge.cachedIpFailures}; longest cached-IP outage ${without.longestCachedOutageSeconds.toFixed(1)} s → ${withBridge.longestCachedOutageSeconds.toFixed(1)} s`);
  }
  console.log("\n  the node lab is left up with the last run's cluster; cidr-migration sandbox down --nodes removes it");
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
