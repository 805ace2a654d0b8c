/**
 * `npm run bench:fleet`: a fleet of three sandboxes (each its own etcd, kube-apiserver and kube-controller-manager of
 * CIDR_MIGRATION_KUBE_VERSION, its own stack and backend), run by `cidr-migration fleet` through the Automation API
 * with all three clusters at once (concurrency 3), against the same three clusters one after another (a preview at
 * concurrency 1, and one `fleet up --stack` per cluster in turn), in the same run. Fresh stacks for each mode, so neither resumes the other's work.
 * Per mode and command: wall time, and the peak memory of the fleet's whole process tree (the CLI, each `pulumi`
 * engine and its provider plugins; RSS summed, sampled every 100 ms from /proc). Then the ratios.
 * The sandbox's nodes are simulated, so `fleet up` stops at each stack's first node step (after the preflight gate
 * and a proven etcd snapshot): what is timed is that much of each run. Figures only, never pass/fail.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import "../test/testbed/binPath";
import { EngineStack } from "../test/e2e/engineStack";
import { FleetSandbox, fleetCli, fleetStackOn, startFleetSandbox, stopFleetSandbox, writeFleetFile } from "../test/e2e/fleetSandboxes";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";

/** The RSS of `pid` and every process below it, in bytes. */
function treeRss(pid: number): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const entry of fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ppid = Number(fields[1]);
      (children.get(ppid) ?? children.set(ppid, []).get(ppid)!).push(Number(entry));
      rss.set(Number(entry), Number(fields[21]) * 4096);
    } catch {
      // the process ended while we looked
    }
  }
  let total = 0;
  const todo = [pid];
  while (todo.length > 0) {
    const p = todo.pop()!;
    total += rss.get(p) ?? 0;
    todo.push(...(children.get(p) ?? []));
  }
  return total;
}

/** Runs one fleet command; its wall time and its process tree's peak RSS. */
async function measure(args: string[], env: Record<string, string>): Promise<{ seconds: number; peakMiB: number; exitCode: number | null }> {
  const start = performance.now();
  const run = fleetCli(args, env);
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, treeRss(run.pid!))), 100);
  const result = await run;
  clearInterval(sampler);
  return { seconds: (performance.now() - start) / 1000, peakMiB: peak / 2 ** 20, exitCode: result.exitCode };
}

async function main(): Promise<void> {
  const version = resolveTestBedVersion();
  console.log(`bench:fleet: three sandboxes on Kubernetes ${version.kube}, ${os.cpus().length} CPU(s)`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-fleet-bench-"));
  const sandboxes: FleetSandbox[] = [];
  const stacks: EngineStack[] = [];
  try {
    for (const label of ["a", "b", "c"]) sandboxes.push(await startFleetSandbox(work, label));
    const figures: Record<string, Record<string, { seconds: number; peakMiB: number }>> = {};
    for (const [mode, concurrency] of [["one after another", 1], ["all at once", 3]] as const) {
      const modeStacks: EngineStack[] = [];
      for (const s of sandboxes) modeStacks.push(await fleetStackOn(s, `bench-${concurrency}-${s.label}`, work));
      stacks.push(...modeStacks);
      const fleetFile = path.join(work, `fleet-${concurrency}.yaml`);
      writeFleetFile(fleetFile, concurrency, modeStacks.map((stack) => ({ stack, wave: 1 })));
      const env = { ...modeStacks[0].env };
      delete env.PULUMI_BACKEND_URL;
      const review = path.join(work, `review-${concurrency}`);
      figures[mode] = {};
      const print = (command: string, m: { seconds: number; peakMiB: number }, exits: string) =>
        console.log(`  ${mode.padEnd(17)} ${command.padEnd(13)} ${m.seconds.toFixed(1).padStart(6)} s   peak ${m.peakMiB.toFixed(0).padStart(5)} MiB (exit ${exits})`);
      const previewRun = await measure(["fleet", "preview", fleetFile, "--out", review], env);
      figures[mode]["fleet preview"] = previewRun;
      print("fleet preview", previewRun, String(previewRun.exitCode));
      // One after another is one `fleet up --stack` per cluster, so a failing cluster does not stop the others (a
      // whole-fleet up would stop its wave there); all at once is one `fleet up` of the three.
      const summary = path.join(review, "fleet-summary.json");
      const ups = [];
      if (concurrency === 1) for (const stack of modeStacks) ups.push(await measure(["fleet", "up", fleetFile, "--summary", summary, "--stack", stack.name], env));
      else ups.push(await measure(["fleet", "up", fleetFile, "--summary", summary], env));
      const upRun = { seconds: ups.reduce((t, r) => t + r.seconds, 0), peakMiB: Math.max(...ups.map((r) => r.peakMiB)) };
      figures[mode]["fleet up"] = upRun;
      print("fleet up", upRun, ups.map((r) => r.exitCode).join(","));
    }
    for (const command of ["fleet preview", "fleet up"]) {
      const serial = figures["one after another"][command];
      const parallel = figures["all at once"][command];
      console.log(`  ${command}: three at once took ${(parallel.seconds / serial.seconds).toFixed(2)}× the time of one after another (${(serial.seconds / parallel.seconds).toFixed(2)}× faster), with ${(parallel.peakMiB / serial.peakMiB).toFixed(2)}× the peak memory`);
    }
  } finally {
    for (const s of stacks) await s.remove();
    for (const s of sandboxes) await stopFleetSandbox(s);
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
