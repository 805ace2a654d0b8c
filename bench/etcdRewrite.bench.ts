/**
 * `npm run bench:etcd-rewrite`: the etcd rewrite strategy beside the re-create strategy, in one run, on the real
 * test bed (etcd + kube-apiserver + KCM of CIDR_MIGRATION_KUBE_VERSION, default the newest). For each size in
 * BENCH_SIZES (default "500,10000") Services, plus BENCH_NODES (default 1000) Nodes with podCIDRs:
 *   - rewrite: a cluster seeded through the apiserver; apiserver and KCM stopped, every Service, Node, IPAddress,
 *     the default ServiceCIDR and the bitmap rewritten in etcd (lib/etcdRewrite), both started on the new ranges.
 *     The API is unavailable from the stop until both are healthy again; no Service is ever absent.
 *   - re-create: a second cluster seeded alike; the apiserver restarted on the new range (with the ServiceCIDR
 *     switch on 1.33+), then the Service mover at its default parallelism. The API is unavailable for the restart;
 *     each Service is absent for its own gap (delete accepted → create accepted). Node moves are not part of this
 *     strategy's Service phase and are not timed here.
 * Prints figures only, never fails on time. The targets: the rewrite of 10,000 Services under 10 s in etcd,
 * the whole window with apiservers down under 30 s.
 */
import { Etcd3 } from "etcd3";
import { performance } from "perf_hooks";
import { runRewrite } from "../lib/etcdRewrite/rewriteRun";
import { RewriteTargets } from "../lib/etcdRewrite/rewritePlan";
import { AddressChange } from "../lib/etcdRewrite/addressChange";
import { DEFAULT_SERVICE_PARALLELISM } from "../lib/config/migrationConfig";
import { kubeRest, KubeRest } from "../lib/serviceMove/kubeRest";
import { runServiceMoves } from "../lib/serviceMove/serviceMover";
import { startTestCluster, TestCluster } from "../test/testbed/controlPlane";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";
import { mapIp } from "../test/support/serviceShapes";
import { APISERVER_FEATURE_GATES, enterNewServiceRange } from "../test/support/serviceRangePhase";
import { seedSet } from "./serviceSet";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

const SIZES = (process.env.BENCH_SIZES ?? "500,10000").split(",").map(Number);
const NODES = Number(process.env.BENCH_NODES ?? 1000);
const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
// /12s hold 4,096 node /24s: room for the Nodes
const OLD_PODS = "10.128.0.0/12";
const NEW_PODS = "10.160.0.0/12";
const NS = "bench";

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

function nodePodCidr(prefix: string, i: number): string {
  const [a, b] = prefix.split(".").map(Number);
  return `${a}.${b + (i >> 8)}.${i & 255}.0/24`;
}

async function seedNodes(rest: KubeRest, count: number): Promise<void> {
  const batch = 50;
  for (let start = 0; start < count; start += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, count - start) }, (_, k) => {
      const i = start + k;
      const cidr = nodePodCidr("10.128", i);
      return rest.create("/api/v1/nodes", { metadata: { name: `node-${String(i).padStart(4, "0")}`, labels: { "kubernetes.io/hostname": `node-${i}` } }, spec: { podCIDR: cidr, podCIDRs: [cidr] } });
    }));
  }
}

async function seeded(count: number, nodes: number): Promise<{ cluster: TestCluster; ips: Record<string, string>; seedMs: number }> {
  const cluster = await startTestCluster({ serviceCidr: OLD_RANGE, podCidr: OLD_PODS, nodeMaskSize: 24 });
  const rest = await kubeRest(cluster.kubeConfig(), { maxSockets: 64 });
  const t0 = performance.now();
  try {
    const ips = await seedSet(rest, NS, count, 64);
    await seedNodes(rest, nodes);
    return { cluster, ips, seedMs: performance.now() - t0 };
  } finally {
    rest.close();
  }
}

interface RewriteFigures { totalMs: number; etcdMs: number; readMs: number; stopMs: number; startMs: number; written: number; moved: number }

async function rewriteRun(count: number): Promise<RewriteFigures> {
  const { cluster, ips } = await seeded(count, NODES);
  const etcd = new Etcd3({ hosts: cluster.etcd.endpoint });
  try {
    const services = new Map<string, AddressChange[]>(Object.entries(ips).map(([name, ip]) => [`${NS}/${name}`, [{ from: ip, to: mapIp(ip, "10.100") }]]));
    services.set("default/kubernetes", [{ from: "10.96.0.1", to: "10.100.0.1" }]);
    const nodes = new Map<string, AddressChange[]>(Array.from({ length: NODES }, (_, i) => [`node-${String(i).padStart(4, "0")}`, [{ from: nodePodCidr("10.128", i), to: nodePodCidr("10.160", i) }]]));
    const targets: RewriteTargets = { prefix: "/registry", serviceCidr: { from: OLD_RANGE, to: NEW_RANGE }, podCidr: { from: OLD_PODS, to: NEW_PODS }, services, nodes };
    const journalPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "bench-rewrite-")), "journal.jsonl");
    const t0 = performance.now();
    await cluster.stopControlPlane();
    const t1 = performance.now();
    const report = await runRewrite(etcd, { targets, journalPath });
    const t2 = performance.now();
    await cluster.startControlPlane({ serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES, controllerManager: { clusterCidr: NEW_PODS, serviceClusterIpRange: NEW_RANGE } });
    const t3 = performance.now();
    const rest = await kubeRest(cluster.kubeConfig(), { maxSockets: 8 });
    const moved = (await rest.list(`/api/v1/namespaces/${NS}/services`)).filter((s) => String((s.spec as { clusterIP?: string }).clusterIP).startsWith("10.100.")).length;
    rest.close();
    return { totalMs: t3 - t0, etcdMs: t2 - t1, readMs: report.readSeconds * 1000, stopMs: t1 - t0, startMs: t3 - t2, written: report.written, moved };
  } finally {
    etcd.close();
    await cluster.stop();
  }
}

interface RecreateFigures { totalMs: number; restartMs: number; moveMs: number; gaps: number[]; moved: number }

async function recreateRun(count: number): Promise<RecreateFigures> {
  const { cluster, ips } = await seeded(count, 0);
  try {
    const t0 = performance.now();
    await enterNewServiceRange(cluster, OLD_RANGE, NEW_RANGE);
    const t1 = performance.now();
    const moves = Object.entries(ips).map(([name, ip]) => ({ namespace: NS, name, fromIP: ip, toIP: mapIp(ip, "10.100") }));
    const report = await runServiceMoves(cluster.kubeConfig(), { moves }, { parallelism: DEFAULT_SERVICE_PARALLELISM, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE });
    const t2 = performance.now();
    return {
      totalMs: t2 - t0, restartMs: t1 - t0, moveMs: t2 - t1,
      gaps: report.results.flatMap((r) => (r.gapMillis === undefined ? [] : [r.gapMillis])),
      moved: report.results.filter((r) => r.outcome === "moved").length,
    };
  } finally {
    await cluster.stop();
  }
}

async function main(): Promise<void> {
  console.log(`bench:etcd-rewrite: ${SIZES.join(" and ")} Services (+ ${NODES} Nodes for the rewrite), kube-apiserver + KCM v${resolveTestBedVersion().kube}, etcd ${resolveTestBedVersion().etcd}, ${os.cpus().length} cores`);
  for (const count of SIZES) {
    console.log("");
    console.log(`${count} Services:`);
    // each figure is printed as soon as it is measured: the re-create run of a large set takes many minutes
    const rewrite = await rewriteRun(count);
    console.log(`  rewrite:   total ${seconds(rewrite.totalMs)}; API unavailable ${seconds(rewrite.totalMs)} (stop ${seconds(rewrite.stopMs)}, etcd ${seconds(rewrite.etcdMs)} of which read ${seconds(rewrite.readMs)}, start + healthy ${seconds(rewrite.startMs)}); `
      + `${rewrite.written} transactions (${count + 1} Services, ${NODES} Nodes, allocator records); per-Service gap 0 ms (no Service is ever absent); moved ${rewrite.moved}/${count}`);
    const recreate = await recreateRun(count);
    console.log(`  re-create: total ${seconds(recreate.totalMs)}; API unavailable ${seconds(recreate.restartMs)} (apiserver restart); Service moves ${seconds(recreate.moveMs)} at parallelism ${DEFAULT_SERVICE_PARALLELISM}; `
      + `per-Service gap p50 ${percentile(recreate.gaps, 0.5).toFixed(1)} ms, p99 ${percentile(recreate.gaps, 0.99).toFixed(1)} ms, max ${Math.max(...recreate.gaps).toFixed(1)} ms; moved ${recreate.moved}/${count}`);
    console.log(`  ratio: the rewrite's total is ${(recreate.totalMs / rewrite.totalMs).toFixed(1)}x shorter (it also moved ${NODES} Nodes); targets: etcd rewrite of 10,000 Services < 10 s, window < 30 s`);
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
