import { performance } from "node:perf_hooks";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { V1ConfigMap, V1Pod } from "@kubernetes/client-node";
import { runPreflight, preflightFindings } from "../lib/preflight";
import { emptyClusterObjects } from "../lib/preflight/clusterObjects";
import { startTestCluster } from "../test/testbed/controlPlane";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";
import { freshNamespace } from "../test/testbed/fixture";
import {
  migrationConfig,
  OLD_POD_CIDR,
  OLD_SERVICE_CIDR,
  seedKubeadmShape,
  seedManyObjects,
  stackValues,
} from "../test/integration/preflightSeed";

/**
 * `npm run bench:preflight`: preflight's wall-clock time against the real test bed (etcd + kube-apiserver + KCM
 * of CIDR_MIGRATION_KUBE_VERSION on loopback) seeded with hundreds of objects, then ten times as many; and the pure checks alone over a large
 * synthetic cluster. Prints figures only; nothing here passes or fails on time.
 */

const RUNS = 5;

async function measureLive(label: string, run: () => Promise<{ collectMs: number; checkMs: number; findings: number }>): Promise<void> {
  await run(); // warm up the JIT and the apiserver's caches
  const results = [];
  for (let i = 0; i < RUNS; i++) results.push(await run());
  const best = results.reduce((a, b) => (a.collectMs + a.checkMs <= b.collectMs + b.checkMs ? a : b));
  const median = [...results].sort((a, b) => a.collectMs + a.checkMs - (b.collectMs + b.checkMs))[Math.floor(RUNS / 2)];
  const fmt = (r: typeof best) => `collect ${r.collectMs.toFixed(0).padStart(5)} ms  check ${r.checkMs.toFixed(0).padStart(4)} ms  total ${(r.collectMs + r.checkMs).toFixed(0).padStart(5)} ms`;
  console.log(`${label.padEnd(48)} best: ${fmt(best)}   median: ${fmt(median)}   (${best.findings} findings)`);
}

/** A large synthetic cluster: config files with an old address every 10th, and pods with env. No API involved. */
function syntheticChecks(configMaps: number, pods: number): void {
  const cluster = emptyClusterObjects();
  const body = Array.from({ length: 60 }, (_, i) => `  key_${i}: value-${i} # see http://app-${i}.svc:8080/path`).join("\n");
  cluster.configMaps = Array.from({ length: configMaps }, (_, i): V1ConfigMap => ({
    metadata: { namespace: `ns-${i % 50}`, name: `cm-${i}` },
    data: { "config.yaml": `${body}\n${i % 10 === 0 ? `  upstream: 10.96.${(i >> 8) & 255}.${i & 255}:80\n` : ""}` },
  }));
  cluster.pods = Array.from({ length: pods }, (_, i): V1Pod => ({
    metadata: { namespace: `ns-${i % 50}`, name: `pod-${i}` },
    spec: { containers: [{ name: "app", image: "x", args: ["--port=8080", "--log=info"], env: [{ name: "A", value: "http://svc.ns.svc:80" }, { name: "B", value: "192.168.1.1" }] }] },
    status: { phase: "Running", podIP: `10.244.${(i >> 8) & 255}.${i & 255}` },
  }));
  const bytes = cluster.configMaps.reduce((sum, cm) => sum + cm.data!["config.yaml"].length, 0);
  const config = migrationConfig({
    serviceCidr: { from: OLD_SERVICE_CIDR, to: "10.112.0.0/12" },
    podCidr: { from: OLD_POD_CIDR, to: "10.48.0.0/16", nodeMaskSize: 24 },
    etcd: { endpoints: ["http://127.0.0.1:2379"] },
    nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
  });
  preflightFindings({ config, cluster, allowSecretValues: false });
  const times: number[] = [];
  let count = 0;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    count = preflightFindings({ config, cluster, allowSecretValues: false }).length;
    times.push(performance.now() - t0);
  }
  console.log(
    `${`pure checks: ${configMaps.toLocaleString("en")} ConfigMaps (${(bytes / 2 ** 20).toFixed(0)} MiB), ${pods.toLocaleString("en")} pods`.padEnd(48)} best: ${Math.min(...times).toFixed(0).padStart(5)} ms   (${count} findings)`,
  );
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "bench-preflight-"));
  const cluster = await startTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
  try {
    const kc = cluster.kubeConfig();
    await seedKubeadmShape(kc, { serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, dnsIP: "10.96.0.10" });
    const config = migrationConfig(stackValues(cluster, path.join(work, "snapshots")));
    const run = async () => {
      const { report, timings } = await runPreflight({ config, kubeConfig: kc, etcd: {} });
      return { ...timings, findings: report.findings.length };
    };
    console.log(`bench:preflight (wall clock, ${RUNS} runs after a warm-up; real kube-apiserver v${resolveTestBedVersion().kube} + etcd on loopback, ${os.cpus().length} CPUs)`);

    const seedStart = performance.now();
    await seedManyObjects(kc, await freshNamespace(kc, "bulk"), { configMaps: 300, services: 200, deployments: 100, hardCodedEvery: 10 });
    const seededBase = performance.now() - seedStart;
    await measureLive("300 ConfigMaps, 200 Services, 100 Deployments", run);

    const seedMore = performance.now();
    for (let i = 0; i < 9; i++) {
      await seedManyObjects(kc, await freshNamespace(kc, `bulk${i}`), { configMaps: 300, services: 200, deployments: 100, hardCodedEvery: 10 });
    }
    const seededMore = performance.now() - seedMore;
    await measureLive("3,000 ConfigMaps, 2,000 Services, 1,000 Deploys", run);
    console.log(`(seeding took ${(seededBase / 1000).toFixed(1)} s for the first 600 objects, ${(seededMore / 1000).toFixed(1)} s for 5,400 more)`);

    syntheticChecks(20_000, 20_000);
  } finally {
    await cluster.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`bench:preflight failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
