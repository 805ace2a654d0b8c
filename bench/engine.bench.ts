/**
 * `npm run bench:engine`: `pulumi preview` of the whole migration under the real Pulumi engine (the CLI and the
 * kubernetes provider of the test bed, the program hosted by `cidr-migration pulumi`), on clusters seeded like
 * the sandbox plus simulated nodes and Services: 20, 200 and 1,000 nodes with 500 Services, and 20 nodes with
 * 5,000 Services (BENCH_CASES="nodes:services,..." changes them). Each case is a fresh test-bed control plane of
 * CIDR_MIGRATION_KUBE_VERSION whose kube-controller-manager hands out /26 node subnets, so 1,000 nodes fit in the
 * sandbox's 10.244.0.0/16.
 * Prints, per case: the preview's wall time, the resources it declares, resources per node, and the ratios between
 * cases beside the ratios of their sizes (linear growth keeps the two equal). The target, 1,000 nodes in
 * under 60 s, is for the reader: this never fails on time.
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";
import "../test/testbed/binPath";
import { EngineStack } from "../test/e2e/engineStack";
import { startTestCluster, TestCluster } from "../test/testbed/controlPlane";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";
import { registerNode } from "../test/testbed/kubelet";
import { OLD_POD_CIDR, OLD_SERVICE_CIDR, seedWorkload } from "../test/testbed/seed";

const NODE_MASK = 26;
const BATCH = 25;

interface Case { nodes: number; services: number }

function cases(): Case[] {
  const spec = process.env.BENCH_CASES ?? "20:500,200:500,1000:500,20:5000";
  return spec.split(",").map((c) => {
    const [nodes, services] = c.split(":").map(Number);
    if (!(nodes >= 4) || !(services >= 14)) throw new Error(`BENCH_CASES entry "${c}": nodes >= 4 and services >= 14 (what the sandbox seed holds)`);
    return { nodes, services };
  });
}

async function inBatches<T>(items: T[], run: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += BATCH) await Promise.all(items.slice(i, i + BATCH).map(run));
}

/** The sandbox's seed, then simulated worker nodes up to `nodes` and selector-less ClusterIP Services up to `services`. */
async function seed(cluster: TestCluster, c: Case): Promise<string[]> {
  const kc: KubeConfig = cluster.kubeConfig();
  const seeded = await seedWorkload(kc, { nodeMaskSize: NODE_MASK });
  const core = kc.makeApiClient(CoreV1Api);
  const extraNodes = Array.from({ length: c.nodes - seeded.nodes.length }, (_, i) => `bench-${String(i + 1).padStart(4, "0")}`);
  await inBatches(extraNodes, (name) => registerNode(kc, { name, internalIP: `10.200.${Math.floor(extraNodes.indexOf(name) / 250)}.${(extraNodes.indexOf(name) % 250) + 1}`, waitReady: false }));
  for (;;) {
    const nodes = await core.listNode();
    if (nodes.items.length >= c.nodes && nodes.items.every((n) => n.spec?.podCIDR)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await core.createNamespace({ body: { metadata: { name: "bench" } } });
  const extraServices = Array.from({ length: c.services - seeded.services.length }, (_, i) => `svc-${i + 1}`);
  await inBatches(extraServices, (name) => core.createNamespacedService({ namespace: "bench", body: { metadata: { name }, spec: { ports: [{ port: 80 }] } } }));
  return [...seeded.nodes.map((n) => n.name), ...extraNodes];
}

function stackConfig(cluster: TestCluster, nodes: string[], snapshotDir: string): string {
  const ns = "cidr-migration";
  return stringify({
    config: {
      [`${ns}:serviceCidr`]: { from: OLD_SERVICE_CIDR, to: "10.112.0.0/12" },
      [`${ns}:podCidr`]: { from: OLD_POD_CIDR, to: "10.48.0.0/16", nodeMaskSize: NODE_MASK },
      [`${ns}:cni`]: "auto",
      [`${ns}:kubeconfig`]: cluster.kubeconfigPath,
      [`${ns}:etcd`]: { endpoints: [cluster.etcd.endpoint] },
      [`${ns}:snapshot`]: { directory: snapshotDir, trigger: "bench" },
      [`${ns}:nodes`]: nodes.map((name, i) => ({ name, host: "127.0.0.1", port: 20000 + i, role: name === "cp-1" ? "control-plane" : "worker" })),
      [`${ns}:ssh`]: { user: "root" },
      [`${ns}:nodeRollout`]: { maxUnavailable: 10 },
      [`${ns}:services`]: { allowLoadBalancerRecreate: true },
    },
  });
}

async function previewCase(c: Case): Promise<{ seconds: number; resources: number; seedSeconds: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-bench-engine-"));
  const cluster = await startTestCluster({ dir: path.join(dir, "cluster"), serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize: NODE_MASK });
  let stack: EngineStack | undefined;
  try {
    const seedStart = performance.now();
    const nodes = await seed(cluster, c);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    stack = await EngineStack.init(`bench-${c.nodes}-${c.services}-${process.pid}`, stackConfig(cluster, nodes, path.join(dir, "snapshots")));
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(dir, "key")]);
    await stack.setSecret("ssh.privateKey", fs.readFileSync(path.join(dir, "key"), "utf8"));
    const start = performance.now();
    const preview = await stack.engine(["preview", "--json"]);
    const seconds = (performance.now() - start) / 1000;
    if (preview.exitCode !== 0) throw new Error(`preview of ${c.nodes} nodes / ${c.services} Services failed:\n${preview.stderr}\n${preview.stdout.slice(-2000)}`);
    const resources = (JSON.parse(preview.stdout).steps as unknown[]).length;
    return { seconds, resources, seedSeconds };
  } finally {
    await stack?.remove();
    await cluster.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log(`bench:engine on Kubernetes ${resolveTestBedVersion().kube}: pulumi preview under the real engine`);
  const rows: Array<Case & { seconds: number; resources: number }> = [];
  for (const c of cases()) {
    const r = await previewCase(c);
    rows.push({ ...c, ...r });
    console.log(`  ${c.nodes} nodes, ${c.services} Services: preview ${r.seconds.toFixed(1)} s, ${r.resources} resources (${(r.resources / c.nodes).toFixed(1)} per node); seeding took ${r.seedSeconds.toFixed(0)} s`);
  }
  // Each case against the latest earlier one that differs in one dimension only: its size ratio, its time ratio.
  console.log("\n| nodes | Services | preview (s) | resources | resources per node | compared with | size ratio | time ratio |");
  console.log("|---|---|---|---|---|---|---|---|");
  rows.forEach((r, i) => {
    const base = rows.slice(0, i).reverse().find((b) => (b.nodes === r.nodes) !== (b.services === r.services));
    const size = base ? (base.nodes !== r.nodes ? r.nodes / base.nodes : r.services / base.services) : undefined;
    const against = base ? `${base.nodes} nodes, ${base.services} Services` : "-";
    console.log(`| ${r.nodes} | ${r.services} | ${r.seconds.toFixed(1)} | ${r.resources} | ${(r.resources / r.nodes).toFixed(1)} | ${against} | ${size ? size.toFixed(2) + "x" : "-"} | ${base ? (r.seconds / base.seconds).toFixed(2) + "x" : "-"} |`);
  });
}

main().catch((err) => {
  console.error(`bench:engine failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
