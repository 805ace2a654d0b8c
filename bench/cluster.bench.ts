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
import { phaseWindows, Window } from "../test/testbed/nodes/engineTimeline";
import { migrateLab } from "../test/testbed/nodes/labMigration";
import { PROBES, summarizeTraffic } from "../test/testbed/nodes/trafficSummary";

/** The published runbook's time per node (drain, reset, rejoin by hand). */
const RUNBOOK_NODE_SECONDS = { low: 5 * 60, high: 8 * 60 };

const seconds = (ms: number) => (ms / 1000).toFixed(1);

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
  console.log(`\n=== services.bridgeOldIps: ${bridge} — a fresh node lab (cidr-migration sandbox up --nodes)`);
  const m = await migrateLab({ bridge, log: (line) => console.log(`  ${line}`) });
  const { lab, cachedIp, preview, up, verify } = m;
  const { phases, nodes } = phaseWindows(m.events, lab.nodes.map((n) => n.name));
  console.log(`\n  cluster up ${seconds(m.clusterUpMillis)} s; preview ${seconds(preview.millis)} s (exit ${preview.exitCode}), up ${seconds(up.millis)} s (exit ${up.exitCode}), verify ${seconds(verify.millis)} s (exit ${verify.exitCode}); logs in ${m.work}`);
  console.log("\nPhases (from the engine's events; they overlap where the graph runs them side by side)\n");
  const t0 = phases[0]?.start ?? 0;
  console.log(table([["phase", "starts at s", "takes s"], ...phases.map((w: Window) => [w.name, seconds(w.start - t0), seconds(w.end - w.start)])]));
  console.log("\nNodes, beside the runbook's 5–8 min per node\n");
  console.log(table([["node", "takes s", "runbook ÷ this"], ...nodes.map((w) => {
    const s = (w.end - w.start) / 1000;
    return [w.name, s.toFixed(1), `${(RUNBOOK_NODE_SECONDS.low / s).toFixed(0)}–${(RUNBOOK_NODE_SECONDS.high / s).toFixed(0)}×`];
  })]));

  const records = m.records;
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
    upSeconds: up.millis / 1000,
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
