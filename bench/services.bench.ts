/**
 * `npm run bench:services`: moving 500 Services on the real test bed (etcd + kube-apiserver + KCM of CIDR_MIGRATION_KUBE_VERSION, default the newest), with
 * the apiserver already on the new range. In the same run and cluster, two identical sets of 500 Services (the
 * shapes of a typical cluster: mostly ClusterIP with selectors, a ready pod behind each selector, some NodePort,
 * some selector-less with hand-made Endpoints) are moved, the kubectl loop first:
 *   - by the Service mover (lib/serviceMove/serviceMover.ts, the engine of the ServiceRecreation provider), once per
 *     parallelism in BENCH_PARALLELISM (default "8", cidr-migration:services.parallelism's default), each time on
 *     its own set: the gap depends on how many moves are in flight;
 *   - by the runbook's loop, one Service at a time:
 *       kubectl get svc -o json | jq '<clusterIP(s) set to the planned IP>' | kubectl replace --force -f -
 *     with the test bed version's kubectl (test/testbed/install.sh builds it into the kube cache) and jq.
 * Then the DNS swap: a stand-in at the final DNS IP, and kube-dns re-created there back to back.
 * BENCH_SERVICES changes the set size; BENCH_KUBECTL=0 skips the kubectl loop (for tuning the mover only, or for
 * 10,000 Services, where the loop alone would take half an hour). BENCH_READY_PODS=0 leaves the selectors without
 * pods (no endpoints, so nothing for the mover to bridge). BENCH_PPROF=FILE profiles kube-apiserver (FILE) and
 * kube-controller-manager (FILE.kcm; both serve pprof only then) for BENCH_PPROF_SECONDS (default 5) from the mover's
 * start. BENCH_CPU_HOG=N runs N busy processes beside the whole run (both methods alike), for the figures on a busy
 * machine. The mover runs at cidr-migration's defaults, so with services.moveInPlace: its ClusterIP Services with a
 * selector move in place (ExternalName naming a stand-in, then back at the planned IP), the rest are re-created; the
 * stand-ins' 10 s for kube-proxy and their 35 s after the last move are left out here (the bench has no kube-proxy or
 * DNS client). BENCH_IN_PLACE=0 re-creates every Service (services.moveInPlace: false).
 *
 * The gap per Service is measured twice: by the mover (delete accepted → create accepted; in place, ExternalName
 * accepted → ClusterIP accepted, while its name resolved through the stand-in) and, for both methods alike, from a
 * watch on the namespace (DELETED event → ADDED event of the same name; in place, the event that made it ExternalName
 * → the one that made it ClusterIP). Prints figures only and
 * never fails on time; the issue's targets (>= 20x faster, p99 gap < 100 ms, DNS gap < 1 s) are for the reader.
 */
import { KubeConfig } from "@kubernetes/client-node";
import { execFile, spawn } from "child_process";
import * as fs from "fs";
import * as https from "https";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import { promisify } from "util";
import { runServiceMoves } from "../lib/serviceMove/serviceMover";
import { KubeObject, kubeRest, KubeRest, paths } from "../lib/serviceMove/kubeRest";
import { ServiceMoveRequest } from "../lib/serviceMove/moveTypes";
import { DEFAULT_SERVICE_PARALLELISM } from "../lib/config/migrationConfig";
import { startTestCluster } from "../test/testbed/controlPlane";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";
import { cachedKubeBinDir } from "../test/testbed/kubeBinaries";
import { registerNode } from "../test/testbed/kubelet";
import { mapIp, runReadyPod } from "../test/support/serviceShapes";
import { enterNewServiceRange } from "../test/support/serviceRangePhase";
import { SELECTORS, seedSet } from "./serviceSet";
import { BRIDGE_COPY_LABEL, BRIDGE_MANAGER, SERVICE_NAME_LABEL, SLICE_CONTROLLER } from "../lib/serviceMove/endpointBridge";
import { MANAGED_BY_LABEL } from "../lib/serviceMove/dependents";

const execFileAsync = promisify(execFile);
const COUNT = Number(process.env.BENCH_SERVICES ?? 500);
/** The mover runs once per value, each on its own set of Services. */
const PARALLELISMS = (process.env.BENCH_PARALLELISM ?? String(DEFAULT_SERVICE_PARALLELISM)).split(",").map(Number);
const CPU_HOGS = Number(process.env.BENCH_CPU_HOG ?? 0);
const READY_PODS = process.env.BENCH_READY_PODS !== "0";
const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

function fmt(ms: number): string {
  return Number.isNaN(ms) ? "n/a" : ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

/** BENCH_PPROF=FILE: CPU profiles of kube-apiserver (FILE) and kube-controller-manager (FILE.kcm) during the mover's run (for `go tool pprof`). */
const PPROF_FILE = process.env.BENCH_PPROF;
const IN_PLACE = process.env.BENCH_IN_PLACE !== "0";
const PPROF_SECONDS = Number(process.env.BENCH_PPROF_SECONDS ?? 5);

async function cpuProfile(kc: KubeConfig, port: number, file: string): Promise<void> {
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  await new Promise<void>((resolve, reject) => {
    // KCM serves with its own serving certificate, for localhost
    https.get({ ...options, hostname: "127.0.0.1", port, servername: "localhost", path: `/debug/pprof/profile?seconds=${PPROF_SECONDS}` }, (res) => {
      res.pipe(fs.createWriteStream(file)).on("finish", () => resolve());
    }).on("error", reject);
  });
}

interface Watch {
  stop(): void;
}

/** Streams a watch on `collection` (from now on), calling `onEvent` with each event and when it arrived. */
async function watch(kc: KubeConfig, collection: string, onEvent: (type: string, object: KubeObject, at: number) => void): Promise<Watch> {
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const server = new URL(kc.getCurrentCluster()!.server);
  const list = await new Promise<{ metadata: { resourceVersion: string } }>((resolve, reject) => {
    https.get({ ...options, hostname: server.hostname, port: server.port, path: `${collection}?limit=1` }, (res) => {
      let body = "";
      res.on("data", (d: Buffer) => { body += d.toString(); });
      res.on("end", () => resolve(JSON.parse(body)));
    }).on("error", reject);
  });
  let buffer = "";
  const req = https.get({ ...options, hostname: server.hostname, port: server.port, path: `${collection}?watch=1&resourceVersion=${list.metadata.resourceVersion}` }, (res) => {
    res.on("data", (chunk: Buffer) => {
      const at = performance.now();
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf("\n")) !== -1) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        if (!line.trim()) continue;
        const event = JSON.parse(line) as { type: string; object: KubeObject };
        onEvent(event.type, event.object, at);
      }
    });
  });
  req.on("error", () => undefined);
  return { stop: () => req.destroy() };
}

interface GapWatch {
  gaps(): Map<string, number>;
  stop(): void;
}

/**
 * DELETED → next ADDED of the same name, as a client watching the namespace sees it (kube-proxy does the same); for
 * a move in place, the Service turning ExternalName → turning ClusterIP again.
 */
async function watchGaps(kc: KubeConfig, namespace: string): Promise<GapWatch> {
  const deletedAt = new Map<string, number>();
  const gaps = new Map<string, number>();
  const w = await watch(kc, `/api/v1/namespaces/${namespace}/services`, (type, object, at) => {
    const name = object.metadata?.name ?? "";
    const holdsClusterIp = (object.spec as { type?: string } | undefined)?.type !== "ExternalName";
    if (type === "DELETED" || (type === "MODIFIED" && !holdsClusterIp)) deletedAt.set(name, at);
    if ((type === "ADDED" || type === "MODIFIED") && holdsClusterIp && deletedAt.has(name)) {
      gaps.set(name, at - deletedAt.get(name)!);
      deletedAt.delete(name);
    }
  });
  return { gaps: () => gaps, stop: w.stop };
}

async function kubectlLoop(kubeconfigPath: string, namespace: string, ips: Record<string, string>): Promise<number> {
  const kubectl = path.join(cachedKubeBinDir(), "kubectl");
  if (!fs.existsSync(kubectl)) throw new Error(`${kubectl} is missing: run test/testbed/install.sh (it unpacks Debian's kubernetes-client there)`);
  const started = performance.now();
  for (const [name, ip] of Object.entries(ips)) {
    const planned = mapIp(ip, "10.100");
    // the runbook's pipeline; set -o pipefail so a failing get or jq is not hidden
    const script = `set -euo pipefail; "$KUBECTL" --kubeconfig "$KCFG" -n "$NS" get svc "$NAME" -o json | jq --arg ip "$IP" '.spec.clusterIP = $ip | .spec.clusterIPs = [$ip]' | "$KUBECTL" --kubeconfig "$KCFG" replace --force -f - >/dev/null`;
    await execFileAsync("bash", ["-c", script], { env: { ...process.env, KUBECTL: kubectl, KCFG: kubeconfigPath, NS: namespace, NAME: name, IP: planned } });
  }
  return performance.now() - started;
}

interface MoverRun {
  parallelism: number;
  totalMs: number;
  moverGaps: number[];
  watchedGaps: number[];
  moved: number;
  /** Of those, moved in place (unless BENCH_IN_PLACE=0). */
  movedInPlace: number;
  restoredEndpoints: number;
  /** Services whose endpoints the mover bridged (copied). */
  bridged: number;
  /** The endpointslice controller's aftermath: every copy replaced by its own slices, or what is left at the limit. */
  aftermath: Aftermath;
  timings?: { preflightMillis: number; journalMillis: number; swapMillis: number; finishMillis: number };
  swapLanes?: { min: number; max: number };
  createdAheadOfDeleteAnswer?: number;
}

interface Aftermath {
  /** From the mover's end until no copy was left and no Service listed an endpoint twice (or the limit). */
  settledMs: number;
  copiesLeft: number;
  duplicated: number;
}

const AFTERMATH_LIMIT_MS = 180_000;

/**
 * Waits for the endpointslice controller to replace the copies the mover made (endpointBridge.ts): polls the
 * namespace's slices until none is a copy (labelled cidr-migration.io/bridge-copy, or managed by cidr-migration.io)
 * and no Service's controller-managed slices list an address twice. The controller writes at 20 requests/s; the
 * mover is done before it, and kube-proxy serves the copies meanwhile.
 */
async function settleCopies(kc: KubeConfig, namespace: string): Promise<Aftermath> {
  const rest = await kubeRest(kc);
  const started = performance.now();
  try {
    for (;;) {
      const slices = await rest.list(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`);
      const labels = (slice: KubeObject) => slice.metadata?.labels ?? {};
      const copiesLeft = slices.filter((slice) => labels(slice)[BRIDGE_COPY_LABEL] || labels(slice)[MANAGED_BY_LABEL] === BRIDGE_MANAGER).length;
      const listed = new Map<string, string[]>();
      for (const slice of slices.filter((s) => labels(s)[MANAGED_BY_LABEL] === SLICE_CONTROLLER)) {
        const service = labels(slice)[SERVICE_NAME_LABEL] ?? "";
        listed.set(service, [...(listed.get(service) ?? []), ...((slice.endpoints ?? []) as Array<{ addresses: string[] }>).flatMap((e) => e.addresses)]);
      }
      const duplicated = [...listed.values()].filter((addresses) => new Set(addresses).size !== addresses.length).length;
      const settledMs = performance.now() - started;
      if ((copiesLeft === 0 && duplicated === 0) || settledMs > AFTERMATH_LIMIT_MS) return { settledMs, copiesLeft, duplicated };
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    rest.close();
  }
}

async function moverRun(kc: KubeConfig, namespace: string, ips: Record<string, string>, parallelism: number, ports: { apiserver: number; controllerManager?: number }): Promise<MoverRun> {
  const watch = await watchGaps(kc, namespace);
  const moves: ServiceMoveRequest[] = Object.entries(ips).map(([name, ip]) => ({ namespace, name, fromIP: ip, toIP: mapIp(ip, "10.100") }));
  const profile = PPROF_FILE ? Promise.all([cpuProfile(kc, ports.apiserver, PPROF_FILE), ...(ports.controllerManager ? [cpuProfile(kc, ports.controllerManager, `${PPROF_FILE}.kcm`)] : [])]) : undefined;
  const t0 = performance.now();
  const inPlace = IN_PLACE ? { moveInPlace: true, routeAheadSettleMs: 0, standInLingerMs: 0 } : {};
  const report = await runServiceMoves(kc, { moves }, { parallelism, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE, ...inPlace });
  const totalMs = performance.now() - t0;
  await profile;
  await new Promise((resolve) => setTimeout(resolve, 500));
  watch.stop();
  const aftermath = await settleCopies(kc, namespace);
  return {
    parallelism,
    totalMs,
    moverGaps: report.results.flatMap((r) => (r.gapMillis === undefined ? [] : [r.gapMillis])),
    watchedGaps: [...watch.gaps().values()],
    moved: report.results.filter((r) => r.outcome === "moved").length,
    movedInPlace: report.results.filter((r) => r.movedInPlace).length,
    restoredEndpoints: report.results.filter((r) => r.restoredEndpoints).length,
    bridged: report.results.filter((r) => r.endpointsBridgedMillis !== undefined).length,
    aftermath,
    timings: report.timings,
    swapLanes: report.swapLanes,
    createdAheadOfDeleteAnswer: report.createdAheadOfDeleteAnswer,
  };
}

/** Lets the controllers work off the previous run's churn, so runs do not pay for each other. */
async function quiesce(rest: KubeRest, namespace: string): Promise<void> {
  // kube-controller-manager writes the seeded Services' slices at its client's 20 requests/s: at 10,000 Services
  // that is minutes. A real migration starts on a cluster whose controllers have caught up, so the run waits for
  // them (longer for a larger set), polling less often the more there is to list.
  const started = performance.now();
  const limitMs = 60_000 + COUNT * 100;
  const pollMs = Math.max(200, COUNT / 5);
  for (;;) {
    // selector-less Services get slices from the mirroring controller, owned by their Endpoints: not counted;
    // with ready pods behind every selector, a Service is covered once a slice of its lists one
    const services = (await rest.list(paths.services(namespace))).filter((s) => (s.spec as { selector?: object }).selector).map((s) => s.metadata!.uid!);
    const slices = await rest.list(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`);
    const serving = slices.filter((s) => !READY_PODS || (Array.isArray(s.endpoints) && s.endpoints.length > 0));
    const owners = new Set(serving.flatMap((s) => (s.metadata?.ownerReferences ?? []).map((o) => o.uid)));
    const covered = services.filter((uid) => owners.has(uid)).length;
    // and the garbage collector done with the Services an earlier run deleted: no slice of a Service that is gone
    const live = new Set(services);
    const orphaned = slices.filter((s) => (s.metadata?.ownerReferences ?? []).some((o) => o.kind === "Service" && !live.has(o.uid))).length;
    if (covered >= services.length * 0.99 && orphaned === 0) return;
    if (performance.now() - started > limitMs) {
      console.log(`(${namespace}: the endpointslice controller had covered ${covered} of ${services.length} Services after ${Math.round(limitMs / 1000)} s; going on)`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** N processes that spin on a core each until stopped: the busy machine the gap must hold up on. */
function startCpuHogs(n: number): () => void {
  const hogs = Array.from({ length: n }, () => spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }));
  return () => hogs.forEach((h) => h.kill("SIGKILL"));
}

async function main(): Promise<void> {
  console.log(`bench:services: ${COUNT} Services per method, kube-apiserver + KCM v${resolveTestBedVersion().kube} on loopback; mover parallelism ${PARALLELISMS.join(", ")}; ${CPU_HOGS ? `${CPU_HOGS} CPU hog process(es) running beside it` : "no CPU hog"} (${os.cpus().length} cores)`);
  const cluster = await startTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16", profiling: PPROF_FILE !== undefined });
  const stopHogs = startCpuHogs(CPU_HOGS);
  let rest: KubeRest | undefined;
  try {
    rest = await kubeRest(cluster.kubeConfig());
    const seedStart = performance.now();
    const sets = new Map<number, Record<string, string>>();
    for (const p of PARALLELISMS) sets.set(p, await seedSet(rest, `bench-mover-${p}`, COUNT));
    // BENCH_KUBECTL=0 seeds no set for the loop: at 10,000 Services two sets would need more NodePorts than exist
    const withKubectl = process.env.BENCH_KUBECTL !== "0";
    const theirs = withKubectl ? await seedSet(rest, "bench-kubectl", COUNT) : {};
    await registerNode(cluster.kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
    await rest.create(paths.services("kube-system"), {
      metadata: { name: "kube-dns", labels: { "k8s-app": "kube-dns" } },
      spec: { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53, protocol: "TCP" }, { name: "metrics", port: 9153 }] },
    });
    await runReadyPod(rest, "kube-system", "coredns-1", { "k8s-app": "kube-dns" }, "node-1", "10.244.0.53");
    // a ready pod behind every selector of every set, as in a cluster that serves: the mover then bridges each
    // Service's endpoints (copies them under its name for the move), which costs requests a Service without them does not
    // (BENCH_READY_PODS=0: none, the shape of the benches before stop 41)
    const namespaces = [...PARALLELISMS.map((p) => `bench-mover-${p}`), ...(withKubectl ? ["bench-kubectl"] : [])];
    for (const [n, namespace] of (READY_PODS ? namespaces : []).entries()) {
      await Promise.all(Array.from({ length: SELECTORS }, (_, k) => runReadyPod(rest!, namespace, `app-${k}`, { app: `app-${k}` }, "node-1", `10.245.${n}.${k + 1}`)));
    }
    console.log(`seeded ${(PARALLELISMS.length + (withKubectl ? 1 : 0)) * COUNT} Services in ${OLD_RANGE} in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
    rest.close();
    await enterNewServiceRange(cluster, OLD_RANGE, NEW_RANGE);
    rest = await kubeRest(cluster.kubeConfig());
    console.log(`kube-apiserver now serves ${NEW_RANGE}; the Services still hold their old IPs`);

    // the kubectl loop first (BENCH_KUBECTL=0 skips it while tuning the mover): the controllers keep up with its
    // pace, where the mover's runs leave them seconds of work that would slow a loop run after them; and every
    // set's controllers caught up before each method, so neither pays for the other's aftermath
    const quiesceAll = async () => { for (const namespace of namespaces) await quiesce(rest!, namespace); };
    if (withKubectl) await quiesceAll();
    const theirWatch = await watchGaps(cluster.kubeConfig(), "bench-kubectl");
    const kubectlMs = !withKubectl ? NaN : await kubectlLoop(cluster.kubeconfigPath, "bench-kubectl", theirs);
    await new Promise((resolve) => setTimeout(resolve, 500));
    theirWatch.stop();
    const theirWatched = [...theirWatch.gaps().values()];
    const movedByKubectl = (await rest.list(paths.services("bench-kubectl"))).filter((s) => ((s.spec as { clusterIP: string }).clusterIP ?? "").startsWith("10.100.")).length;

    const runs: MoverRun[] = [];
    for (const p of PARALLELISMS) {
      await quiesceAll();
      runs.push(await moverRun(cluster.kubeConfig(), `bench-mover-${p}`, sets.get(p)!, p, cluster.ports()));
    }

    // DNS: stand-in at the final IP, then the swap
    await quiesce(rest, "kube-system");
    const standIn = { namespace: "kube-system", name: "kube-dns-cidr-migration-temp" };
    await runServiceMoves(cluster.kubeConfig(), { moves: [], standIns: [{ ...standIn, of: { namespace: "kube-system", name: "kube-dns" }, ip: "10.100.0.10" }] }, { parallelism: 1, allowLoadBalancerRecreate: false });
    await quiesce(rest, "kube-system");
    const swap = await runServiceMoves(cluster.kubeConfig(), { moves: [{ namespace: "kube-system", name: "kube-dns", fromIP: "10.96.0.10", toIP: "10.100.0.10", vacate: standIn }] }, { parallelism: 1, allowLoadBalancerRecreate: false });
    const dns = swap.results[0];

    console.log("");
    console.log(`${"".padEnd(46)}${"total".padStart(10)}${"per Service".padStart(14)}${"gap p50".padStart(10)}${"gap p99".padStart(10)}${"gap max".padStart(10)}`);
    const row = (label: string, totalMs: number, gaps: number[]) =>
      console.log(`${label.padEnd(46)}${`${(totalMs / 1000).toFixed(2)} s`.padStart(10)}${`${fmt(totalMs / COUNT)} ms`.padStart(14)}${`${fmt(percentile(gaps, 0.5))} ms`.padStart(10)}${`${fmt(percentile(gaps, 0.99))} ms`.padStart(10)}${`${fmt(gaps.length ? Math.max(...gaps) : NaN)} ms`.padStart(10)}`);
    for (const r of runs) {
      row(`mover, parallelism ${r.parallelism} (measured by the mover)`, r.totalMs, r.moverGaps);
      row(`mover, parallelism ${r.parallelism} (seen by a watch)`, r.totalMs, r.watchedGaps);
    }
    row(`kubectl replace --force loop (seen by a watch)`, kubectlMs, theirWatched);
    console.log("");
    for (const r of runs) {
      const t = r.timings;
      console.log(`mover, parallelism ${r.parallelism}: moved ${r.moved}/${COUNT}${IN_PLACE ? `, ${r.movedInPlace} of them in place` : ""} (${r.restoredEndpoints} hand-made Endpoints restored, ${r.bridged} bridged; the endpointslice controller replaced the copies ${r.aftermath.copiesLeft === 0 && r.aftermath.duplicated === 0 ? `within ${(r.aftermath.settledMs / 1000).toFixed(0)} s after the mover` : `only partly in ${AFTERMATH_LIMIT_MS / 1000} s: ${r.aftermath.copiesLeft} copies left, ${r.aftermath.duplicated} Services listing an endpoint twice`}); speed-up ${(kubectlMs / r.totalMs).toFixed(1)}x over the kubectl loop (target >= 20x); gap p99 ${fmt(percentile(r.moverGaps, 0.99))} ms (target < 100 ms)`
        + (t ? `; phases: read + dependents scan ${fmt(t.preflightMillis)} ms, journal ${fmt(t.journalMillis)} ms, swaps ${fmt(t.swapMillis)} ms, bookkeeping ${fmt(t.finishMillis)} ms` : "")
        + (r.swapLanes ? `; swaps in flight adapted between ${r.swapLanes.min} and ${r.swapLanes.max}` : "")
        + (r.createdAheadOfDeleteAnswer !== undefined ? `; ${r.createdAheadOfDeleteAnswer} re-creates started on the watch's report of their delete, before its answer` : ""));
    }
    console.log(`kubectl loop: moved ${movedByKubectl}/${COUNT}`);
    console.log(`DNS swap: the final IP had no Service for ${fmt(dns.gapMillis ?? NaN)} ms (stand-in delete accepted → kube-dns create accepted; target < 1 s)`);
    console.log(`DNS endpoints, after the create: bridged from the stand-in in ${fmt(dns.endpointsBridgedMillis ?? NaN)} ms; the endpointslice controller's own slice seen after ${fmt(dns.controllerSliceMillis ?? NaN)} ms (what lookups would have waited without the bridge)`);
  } finally {
    stopHogs();
    rest?.close();
    await cluster.stop();
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
