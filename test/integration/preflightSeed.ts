// Seeding shared by the preflight and verify integration tests and bench/preflight.bench.ts: what a kubeadm cluster
// shows through its API (Nodes, kube-system ConfigMaps, the control-plane mirror pods, kube-dns, Calico's CRDs),
// bulk objects for the scale test, stack files for the CLI and the CLI itself as a real process. No mocha here.
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  V1Pod,
} from "@kubernetes/client-node";
import { spawn } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { stringify } from "yaml";
import { validateConfig } from "../../lib/config/config";
import { MigrationConfig } from "../../lib/config/migrationConfig";
import { kubeletConfigMapName } from "../../components/clusterConfig";
import { TestCluster } from "../testbed/controlPlane";
import { minorNumber } from "../testbed/kubeVersion";
import { registerNode, waitForPodCIDR } from "../testbed/kubelet";
import { controlPlaneMirrorPods as testBedMirrorPods, KUBE_VERSION } from "../testbed/seed";
import { sleep } from "../testbed/processes";

export const OLD_SERVICE_CIDR = "10.96.0.0/12";
export const OLD_POD_CIDR = "10.244.0.0/16";
export const NEW_SERVICE_CIDR = "10.112.0.0/12";
export const NEW_POD_CIDR = "10.48.0.0/16";
export const NODE_MASK_SIZE = 24;
const CALICO_GROUP = "crd.projectcalico.org";
const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

export interface SeedNode {
  name: string;
  internalIP: string;
  controlPlane: boolean;
}

export const NODES: SeedNode[] = [
  { name: "cp-1", internalIP: "192.168.50.10", controlPlane: true },
  { name: "worker-1", internalIP: "192.168.50.11", controlPlane: false },
];

/** The stack config values the tests migrate with; `overrides` replace whole top-level keys. */
export function stackValues(cluster: TestCluster, snapshotDir: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    serviceCidr: { from: OLD_SERVICE_CIDR, to: NEW_SERVICE_CIDR },
    podCidr: { from: OLD_POD_CIDR, to: NEW_POD_CIDR, nodeMaskSize: NODE_MASK_SIZE },
    kubeconfig: cluster.kubeconfigPath,
    etcd: { endpoints: [cluster.etcd.endpoint] },
    nodes: NODES.map((n) => ({ name: n.name, host: n.internalIP, role: n.controlPlane ? "control-plane" : "worker" })),
    snapshot: { directory: snapshotDir, trigger: "test" },
    ...overrides,
  };
}

export function migrationConfig(values: Record<string, unknown>): MigrationConfig {
  return validateConfig({ values });
}

/** A Pulumi.<stack>.yaml with these cidr-migration: values, as an operator would write it. */
export function writeStackFile(dir: string, stack: string, values: Record<string, unknown>): string {
  const config: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) config[`cidr-migration:${k}`] = v;
  const file = path.join(dir, `Pulumi.${stack}.yaml`);
  fs.writeFileSync(file, stringify({ config }));
  return file;
}

export interface ShapeOptions {
  serviceCidr: string;
  podCidr: string;
  dnsIP: string;
  nodes?: SeedNode[];
}

/**
 * What kubeadm leaves behind, as seen through the API: registered Nodes with podCIDRs from KCM, kubeadm-config,
 * kube-proxy and kubelet-config in kube-system, mirror pods of kube-apiserver and kube-controller-manager for each
 * control-plane node (with the range flags the test bed's components really run with), and kube-dns at `dnsIP`.
 */
export async function seedKubeadmShape(kc: KubeConfig, opts: ShapeOptions): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const nodes = opts.nodes ?? NODES;
  for (const n of nodes) {
    await registerNode(kc, { name: n.name, internalIP: n.internalIP, labels: n.controlPlane ? { "node-role.kubernetes.io/master": "" } : {} });
    await waitForPodCIDR(kc, n.name, 30_000);
  }
  await Promise.all([
    core.createNamespacedConfigMap({ namespace: "kube-system", body: kubeadmConfigMap(opts) }),
    core.createNamespacedConfigMap({ namespace: "kube-system", body: kubeProxyConfigMap(opts.podCidr) }),
    core.createNamespacedConfigMap({ namespace: "kube-system", body: kubeletConfigMap(opts.dnsIP) }),
    ...nodes.filter((n) => n.controlPlane).flatMap((n) => controlPlaneMirrorPods(n, opts).map((body) => core.createNamespacedPod({ namespace: "kube-system", body }))),
    core.createNamespacedService({
      namespace: "kube-system",
      body: {
        metadata: { name: "kube-dns", labels: { "k8s-app": "kube-dns" } },
        spec: { clusterIP: opts.dnsIP, selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53, protocol: "TCP" }] },
      },
    }),
  ]);
}

export function kubeadmConfigMap(opts: { serviceCidr: string; podCidr: string }) {
  const clusterConfiguration = {
    apiVersion: "kubeadm.k8s.io/v1beta2",
    kind: "ClusterConfiguration",
    kubernetesVersion: KUBE_VERSION,
    controlPlaneEndpoint: "192.168.50.10:6443",
    networking: { dnsDomain: "cluster.local", podSubnet: opts.podCidr, serviceSubnet: opts.serviceCidr },
  };
  return { metadata: { name: "kubeadm-config" }, data: { ClusterConfiguration: stringify(clusterConfiguration) } };
}

export function kubeProxyConfigMap(podCidr: string) {
  const conf = { apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration", clusterCIDR: podCidr, mode: "iptables" };
  return { metadata: { name: "kube-proxy" }, data: { "config.conf": stringify(conf) } };
}

/** kubeadm's name for it on this version: kubelet-config from 1.24, kubelet-config-1.NN before. */
export const KUBELET_CONFIG_NAME = kubeletConfigMapName({ major: "1", minor: String(minorNumber()) });

export function kubeletConfigMap(dnsIP: string) {
  const conf = { apiVersion: "kubelet.config.k8s.io/v1beta1", kind: "KubeletConfiguration", clusterDNS: [dnsIP], clusterDomain: "cluster.local" };
  return { metadata: { name: KUBELET_CONFIG_NAME }, data: { kubelet: stringify(conf) } };
}

/** The test bed's control-plane mirror pods at this suite's node mask. */
export function controlPlaneMirrorPods(node: SeedNode, opts: { serviceCidr: string; podCidr: string }): V1Pod[] {
  return testBedMirrorPods(node, { ...opts, nodeMaskSize: NODE_MASK_SIZE });
}

/** A pod as a kubelet would report it running: status (phase, podIP, Ready) through the status subresource. */
export async function createRunningPod(kc: KubeConfig, namespace: string, body: V1Pod, podIP: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  body.spec = { automountServiceAccountToken: false, ...body.spec, containers: body.spec?.containers ?? [{ name: "app", image: "nginx" }] };
  await core.createNamespacedPod({ namespace, body });
  const now = new Date();
  await core.patchNamespacedPodStatus(
    { namespace, name: body.metadata!.name!, body: { status: { phase: "Running", podIP, podIPs: [{ ip: podIP }], conditions: [{ type: "Ready", status: "True", lastTransitionTime: now }] } } },
    mergePatch(),
  );
}

/** Calico's IPAM CRDs, cut down to what the API needs to serve them (the schema keeps every field). */
export async function installCalicoCrds(kc: KubeConfig): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const kinds = [
    ["IPPool", "ippools"],
    ["IPAMBlock", "ipamblocks"],
    ["BlockAffinity", "blockaffinities"],
  ];
  await Promise.all(
    kinds.map(([kind, plural]) =>
      api.createCustomResourceDefinition({
        body: {
          metadata: { name: `${plural}.${CALICO_GROUP}` },
          spec: {
            group: CALICO_GROUP,
            scope: "Cluster",
            names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
            versions: [{ name: "v1", served: true, storage: true, schema: { openAPIV3Schema: { type: "object", x_kubernetes_preserve_unknown_fields: true } } }],
          },
        },
      }),
    ),
  );
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const [, plural] of kinds) {
    for (let attempt = 0; ; attempt++) {
      try {
        await custom.listClusterCustomObject({ group: CALICO_GROUP, version: "v1", plural });
        break;
      } catch (err) {
        if (attempt > 100) throw err;
        await sleep(100);
      }
    }
  }
}

export async function createCalicoObject(kc: KubeConfig, kind: "IPPool" | "IPAMBlock" | "BlockAffinity", name: string, spec: Record<string, unknown>): Promise<void> {
  const plural = { IPPool: "ippools", IPAMBlock: "ipamblocks", BlockAffinity: "blockaffinities" }[kind];
  await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    group: CALICO_GROUP,
    version: "v1",
    plural,
    body: { apiVersion: `${CALICO_GROUP}/v1`, kind, metadata: { name }, spec },
  });
}

export async function deleteCalicoObject(kc: KubeConfig, kind: "IPPool" | "IPAMBlock" | "BlockAffinity", name: string): Promise<void> {
  const plural = { IPPool: "ippools", IPAMBlock: "ipamblocks", BlockAffinity: "blockaffinities" }[kind];
  await kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: CALICO_GROUP, version: "v1", plural, name });
}

export interface ManyObjects {
  configMaps: number;
  services: number;
  deployments: number;
  /** Every n-th ConfigMap (and Deployment) also holds an address in the old Service range. */
  hardCodedEvery: number;
}

/** Runs `work` over `items` with at most `limit` requests in flight. */
async function inParallel<T>(items: T[], limit: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

const indexes = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Hundreds of ordinary objects in `namespace`: ConfigMaps with a config file, selector Services and Deployments
 * (replicas 0, so no pods). Every `hardCodedEvery`-th ConfigMap and Deployment also hard-codes an old Service IP.
 * Returns what preflight must report for them.
 */
export async function seedManyObjects(kc: KubeConfig, namespace: string, counts: ManyObjects): Promise<{ object: string; path: string }[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const expected: { object: string; path: string }[] = [];
  const hardCoded = (i: number) => i % counts.hardCodedEvery === 0;
  await inParallel(indexes(counts.configMaps), 16, (i) => {
    const lines = ["server:", `  name: app-${i}`, "  listen: 0.0.0.0:8080", "upstreams:", `  - http://app-${i}.${namespace}.svc:8080`];
    if (hardCoded(i)) {
      lines.push(`  - http://10.96.200.${i % 250}:8080`);
      expected.push({ object: `ConfigMap ${namespace}/app-config-${i}`, path: `data["app.yaml"] line ${lines.length}` });
    }
    return core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `app-config-${i}` }, data: { "app.yaml": `${lines.join("\n")}\n`, "LOG_LEVEL": "info" } } });
  });
  await inParallel(indexes(counts.services), 16, (i) =>
    core.createNamespacedService({ namespace, body: { metadata: { name: `app-${i}` }, spec: { selector: { app: `app-${i}` }, ports: [{ port: 8080 }] } } }),
  );
  await inParallel(indexes(counts.deployments), 16, (i) => {
    const env = [{ name: "UPSTREAM", value: `http://app-${i}.${namespace}.svc:8080` }];
    if (hardCoded(i)) {
      env.push({ name: "CACHE", value: `10.96.201.${i % 250}:6379` });
      expected.push({ object: `Deployment ${namespace}/app-${i}`, path: "spec.template.spec.containers[0].env[1].value" });
    }
    return apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: `app-${i}` },
        spec: { replicas: 0, selector: { matchLabels: { app: `app-${i}` } }, template: { metadata: { labels: { app: `app-${i}` } }, spec: { containers: [{ name: "app", image: "nginx", env }] } } },
      },
    });
  });
  return expected;
}

const REPO = path.resolve(__dirname, "..", "..");

/** preflight and verify registered on a bare program, as cli/main.ts does, run in their own node process. */
const ENTRY = `
require("ts-node").register({ transpileOnly: true, project: ${JSON.stringify(path.join(REPO, "tsconfig.json"))} });
const { Command } = require("commander");
const { registerPreflightCommand } = require(${JSON.stringify(path.join(REPO, "cli", "preflightCommand.ts"))});
const { registerVerifyCommand } = require(${JSON.stringify(path.join(REPO, "cli", "verifyCommand.ts"))});
const program = new Command("cidr-migration").exitOverride();
registerPreflightCommand(program);
registerVerifyCommand(program);
program.parseAsync(process.argv).catch((err) => { process.stderr.write("cidr-migration: " + err.message + "\\n"); process.exitCode = 2; });
`;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], cwd: string = REPO): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["-e", ENTRY, "cidr-migration", ...args], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}
