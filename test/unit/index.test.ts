// index.ts reading its stack config under pulumi.runtime.setMocks: bad input stops the program with one RunError
// naming every bad key, before discovery and before any resource exists; a cluster that cannot be reached is a
// one-line RunError too. (The whole graph against a real cluster is test/integration/program.test.ts.)
import * as assert from "node:assert/strict";
import { REMOTE_SCRIPT_TYPE } from "../../lib/gate/policyRules";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, Server } from "node:http";
import { createServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { Plan } from "../../lib/plan/planModel";
import { captureGraph, MockGraph } from "../support/pulumiMocks";
import { nodeFile } from "../support/programGraph";
import { baseValues } from "../support/stackValues";

function asPulumiConfig(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** Runs index.ts with this stack config; returns what it threw and how many resources it declared. */
async function runProgram(values: Record<string, unknown>, secretKeys: string[] = []): Promise<{ error: unknown; declared: number }> {
  let error: unknown;
  const graph = await captureGraph(async () => {
    pulumi.runtime.setAllConfig(asPulumiConfig(values), secretKeys.map((k) => `cidr-migration:${k}`));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require("../../index") as () => Promise<unknown>;
    try {
      await program();
    } catch (err) {
      error = err;
    }
  }, { preview: true });
  return { error, declared: graph.resources.length };
}

/** Stack values whose secrets are given as Pulumi decrypted them (plain strings under keys marked secret). */
function decryptedValues(): Record<string, unknown> {
  const values = baseValues();
  values.etcd = { endpoints: ["http://127.0.0.1:2379"] };
  values.ssh = { user: "ubuntu", privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nunit-test\n-----END OPENSSH PRIVATE KEY-----" };
  return values;
}

describe("index.ts reading its stack config (mocked engine)", () => {
  it("stops with one RunError naming every bad key, before declaring anything", async () => {
    const values = decryptedValues();
    values.serviceCidr = { from: "10.96.0.1/12", to: "10.112.0.0/12" };
    values.podCidr = { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 40 };
    values.cnii = "calico";
    const { error, declared } = await runProgram(values, ["ssh"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    const message = (error as Error).message;
    assert.match(message, /cidr-migration:serviceCidr\.from: "10\.96\.0\.1\/12" has host bits set: did you mean 10\.96\.0\.0\/12\?/);
    assert.match(message, /cidr-migration:podCidr\.nodeMaskSize: 40 is more than 16 bits longer/);
    assert.match(message, /cidr-migration:cnii: unknown key; did you mean "cni"\?/);
    assert.doesNotMatch(message, /unit-test/, "the SSH key never appears in an error");
    assert.equal(declared, 0);
  });

  it("refuses a secret that Pulumi did not hold as a secret", async () => {
    const { error, declared } = await runProgram(decryptedValues());
    assert.ok(pulumi.RunError.isInstance(error));
    assert.match((error as Error).message, /cidr-migration:ssh\.privateKey: is a secret but was given in plaintext; set it with: pulumi config set --secret --path 'ssh\.privateKey'/);
    assert.doesNotMatch((error as Error).message, /unit-test/);
    assert.equal(declared, 0);
  });

  it("refuses to declare the graph without an SSH key, naming the key and the command", async () => {
    const values = decryptedValues();
    values.ssh = { user: "ubuntu" };
    const { error, declared } = await runProgram(values, ["ssh"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    assert.equal((error as Error).message, `cidr-migration:ssh.privateKey is missing; the node steps run over SSH — set it with: pulumi config set --secret --path 'ssh.privateKey' < ~/.ssh/id_ed25519`);
    assert.equal(declared, 0);
  });

  it("reports an unreachable cluster as one line and declares nothing", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, "127.0.0.1", () => {
        const p = (server.address() as { port: number }).port;
        server.close(() => resolve(p));
      });
    });
    const values = decryptedValues();
    values.kubeconfig = { secure: "unused" };
    const kubeconfig = [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:" + port + "', insecure-skip-tls-verify: true}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: c, context: {cluster: c, user: u}}]",
      "current-context: c",
    ].join("\n");
    values.kubeconfig = kubeconfig;
    const { error, declared } = await runProgram(values, ["ssh", "kubeconfig"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    assert.match((error as Error).message, new RegExp(`^cannot reach the cluster at https://127\\.0\\.0\\.1:${port} while reading the server version \\(ECONNREFUSED\\)`));
    assert.equal((error as Error).message.split("\n").length, 1);
    assert.equal(declared, 0);
  });
});

// A read-only stand-in for the apiserver discovery reads (GET only), so the whole program runs under mocks in a
// unit test: a cluster on 10.96.0.0/16 with the kubernetes and DNS Services and one app Service.

function configMap(name: string, data: Record<string, string>) {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "kube-system", resourceVersion: "1" }, data };
}

const CONFIG_MAPS: Record<string, ReturnType<typeof configMap>> = {
  "kube-system/kube-proxy": configMap("kube-proxy", { "config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\nmode: iptables\n" }),
  "kube-system/kubeadm-config": configMap("kubeadm-config", {
    ClusterConfiguration: "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.29.0\nnetworking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/16\n",
  }),
  "kube-system/kubelet-config": configMap("kubelet-config", { kubelet: "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\n" }),
};

function service(namespace: string, name: string, clusterIP: string) {
  return { metadata: { namespace, name }, spec: { type: "ClusterIP", clusterIP, clusterIPs: [clusterIP], selector: name === "kubernetes" ? undefined : { app: name } } };
}

function node(name: string, ip: string, podCIDR: string, controlPlane: boolean) {
  return {
    metadata: { name, labels: controlPlane ? { "node-role.kubernetes.io/control-plane": "" } : {} },
    spec: { podCIDR, podCIDRs: [podCIDR] },
    status: { addresses: [{ type: "InternalIP", address: ip }] },
  };
}

const API: Record<string, unknown> = {
  "/version": { major: "1", minor: "29", gitVersion: "v1.29.0" },
  "/api/v1/services": {
    metadata: {},
    items: [service("default", "kubernetes", "10.96.0.1"), service("kube-system", "kube-dns", "10.96.0.10"), service("shop", "web", "10.96.5.5")],
  },
  "/api/v1/nodes": {
    metadata: {},
    items: [
      node("cp-1", "10.0.0.11", "10.244.0.0/24", true),
      node("cp-2", "10.0.0.12", "10.244.1.0/24", true),
      node("cp-3", "10.0.0.13", "10.244.2.0/24", true),
      node("worker-1", "10.0.0.21", "10.244.3.0/24", false),
    ],
  },
  "/apis/crd.projectcalico.org/v1/ippools": { items: [{ metadata: { name: "default-ipv4-ippool" }, spec: { cidr: "10.244.0.0/16", blockSize: 26, ipipMode: "Always", natOutgoing: true } }] },
  ...Object.fromEntries(Object.entries(CONFIG_MAPS).map(([key, cm]) => [`/api/v1/namespaces/${key.split("/")[0]}/configmaps/${key.split("/")[1]}`, cm])),
};

function startFakeApiserver(): Promise<{ server: Server; url: string }> {
  const server = createHttpServer((req, res) => {
    const body = req.method === "GET" ? API[new URL(req.url ?? "/", "http://x").pathname.replace(/\/$/, "")] : undefined;
    res.setHeader("content-type", "application/json");
    if (body === undefined) {
      res.statusCode = 404;
      res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", reason: "NotFound", code: 404 }));
    } else {
      res.end(JSON.stringify(body));
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

describe("index.ts: the graph follows the plan (mocked engine, a stand-in apiserver for discovery)", function () {
  this.timeout(180_000);
  let fake: { server: Server; url: string };
  let dir: string;
  before(async () => {
    fake = await startFakeApiserver();
    dir = mkdtempSync(path.join(os.tmpdir(), "index-graph-"));
  });
  after(() => {
    fake.server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function graphFor(serviceCidr: { from: string; to: string }, podCidr?: { from: string; to: string; nodeMaskSize: number }, extra: Record<string, unknown> = {}, run: { server?: string; preview?: boolean } = {}): Promise<MockGraph> {
    const kubeconfig = path.join(dir, "admin.kubeconfig");
    writeFileSync(kubeconfig, [
      "apiVersion: v1",
      "kind: Config",
      `clusters: [{name: c, cluster: {server: '${run.server ?? fake.url}', insecure-skip-tls-verify: true}}]`,
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: c, context: {cluster: c, user: u}}]",
      "current-context: c",
    ].join("\n"));
    const values = { ...decryptedValues(), serviceCidr, kubeconfig, ...(podCidr ? { podCidr } : {}), ...extra };
    return captureGraph(async () => {
      pulumi.runtime.setAllConfig(asPulumiConfig(values), ["cidr-migration:ssh"]);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const program = require("../../index") as () => Promise<unknown>;
      await program();
    }, {
      preview: run.preview ?? true,
      readState: (type, id) => (type === "kubernetes:core/v1:ConfigMap" && CONFIG_MAPS[id] ? { metadata: CONFIG_MAPS[id].metadata, data: CONFIG_MAPS[id].data } : undefined),
      outputs: ({ type, inputs }) => {
        const stdout = type === REMOTE_SCRIPT_TYPE ? nodeFile(String(inputs.script ?? "")) : undefined;
        return stdout === undefined ? {} : { stdout, stderr: "" };
      },
    });
  }
  const dnsComponents = (g: MockGraph) => g.resources.filter((r) => /DnsTemporaryService$|DnsFinalSwap$/.test(r.type)).map((r) => r.name);

  it("a Service-range move declares the DNS stand-in and swap, and the kubernetes Service's re-create", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
    assert.deepEqual(dnsComponents(g), ["dns-temporary", "dns-final"]);
    const services = g.named("services").inputs;
    assert.deepEqual(services.kubernetesService, { fromIP: "10.96.0.1", toIP: "10.112.0.1" });
    assert.deepEqual(Object.keys(services.moves), ["shop/web"]);
  });

  it("services.bridgeOldIps: the moves keep each old ClusterIP, and the bridges end after the DNS swap, before kube-proxy; off, no such step", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { services: { bridgeOldIps: true } });
    assert.equal(g.named("services").inputs.bridgeOldIps, true);
    const bridges = g.named("old-ip-bridges");
    assert.ok(g.dependsOn(bridges, g.named("dns-final-swap")), "after every pod was re-created and DNS swapped");
    assert.ok(g.dependsOn(g.named("kube-proxy-config"), bridges), "before kube-proxy's change and verify");
    const off = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
    assert.equal(off.resources.some((r) => r.name === "old-ip-bridges"), false);
    assert.equal("bridgeOldIps" in off.named("services").inputs, false, "a stack without the bridge sees no new input");
  });

  it("services.routeNewIpsFirst: on by default for the bulk moves, not for the DNS stand-in and swap; off, the input is left out", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
    assert.equal(g.named("services").inputs.routeNewIpsFirst, true);
    const recreations = g.resources.filter((x) => x.inputs.moves !== undefined && x.inputs.kubeconfig !== undefined).map((r) => r.name).sort();
    assert.ok(recreations.length >= 3 && recreations.includes("services"), `the bulk moves and DNS's stand-in and swap: ${recreations.join(", ")}`);
    for (const name of recreations.filter((n) => n !== "services")) assert.equal("routeNewIpsFirst" in g.named(name).inputs, false, name);
    const off = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { services: { routeNewIpsFirst: false } });
    assert.equal("routeNewIpsFirst" in off.named("services").inputs, false);
  });

  it("nodeRollout.dnsDisruptionBudget (default on): the DNS pods' budget opens before the first drain and closes after the last node, before kube-proxy; off, or no node moving, no such step", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
    const open = g.named("dns-budget-open");
    const close = g.named("dns-budget-close");
    assert.deepEqual([open.inputs.step, open.inputs.namespace, open.inputs.name], ["open", "kube-system", "kube-dns"]);
    assert.equal(open.inputs.budget, "kube-system/kube-dns-cidr-migration", "preview names the budget");
    assert.equal(close.inputs.step, "close");
    for (const drain of g.resources.filter((r) => /^nodes-.*-drain$/.test(r.name))) assert.ok(g.dependsOn(drain, open), `${drain.name} waits for the budget`);
    assert.ok(g.dependsOn(close, g.named("nodes-cp-3-rejoin")), "closes after the last node");
    assert.ok(g.dependsOn(g.named("kube-proxy-config"), close), "and before kube-proxy and verify");
    const off = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { nodeRollout: { dnsDisruptionBudget: false } });
    assert.equal(off.resources.some((r) => r.name.startsWith("dns-budget-")), false);
    const noNodes = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, { from: "10.244.0.0/16", to: "10.244.0.0/15", nodeMaskSize: 24 });
    assert.equal(noNodes.resources.some((r) => r.name.startsWith("dns-budget-")), false, "no node moves: no drain to guard");
  });

  it("a Service-range expansion (issue 20, defect 2) declares no DNS stand-in or swap and no kubernetes re-create: nothing moves", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.96.0.0/15" });
    assert.deepEqual(dnsComponents(g), []);
    const services = g.named("services").inputs;
    assert.equal(services.kubernetesService, undefined);
    assert.deepEqual(services.moves, {});
    // the plan the graph hands to verify says the same: no Service or DNS step, kubernetes and DNS where they are
    const plan = JSON.parse(g.named("verify").inputs.planJson as string) as Plan;
    assert.deepEqual(plan.phases.filter((p) => p.name === "services" || p.name === "dns").map((p) => [p.name, p.steps.map((st) => st.id)]), [["services", []], ["dns", []]]);
    assert.deepEqual(plan.kubernetesService, { oldClusterIP: "10.96.0.1", newClusterIP: "10.96.0.1" });
    assert.equal(plan.services.find((sv) => sv.name === "kubernetes")!.action, "unchanged");
  });
  it("every ordering of the plan holds in the graph: each step's resource waits for the resources of the steps before it", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
    const plan = JSON.parse(g.named("verify").inputs.planJson as string) as Plan;
    const pairs: Array<[string, string]> = [
      ["etcd-snapshot", "preflight"], ["control-plane-cp-1-backup", "etcd-snapshot"], ["apiserver-certs-cp-1-read", "control-plane-cp-3-apiserver-write"],
      ["services", "apiserver-certs-cp-3-renew"], ["dns-temporary-stand-in", "services"], ["cluster-config-kubeadm", "dns-temporary-stand-in"],
      ["calico-pool-new", "cluster-config-kubelet"], ["nodes-worker-1-drain", "calico-pool-disable-old"], ["enable-cidr-allocation-cp-1-kcm-read", "nodes-cp-3-rejoin"],
      ["dns-final-swap", "enable-cidr-allocation-cp-3-kcm-write"], ["kube-proxy-config", "dns-final-swap"], ["calico-old-pool-check-and-delete", "kube-proxy-restart"],
      ["verify", "calico-old-pool-check-and-delete"],
    ];
    for (const [later, earlier] of pairs) assert.ok(g.dependsOn(g.named(later), g.named(earlier)), `${later} waits for ${earlier}`);
    // the plan holds exactly these phase boundaries, so the pairs above are the plan's own
    const waitsOf = (id: string) => plan.phases.flatMap((p) => p.steps).find((st) => st.id === id)!.dependsOn;
    assert.deepEqual(waitsOf("nodes/enable-cidr-allocation/cp-1"), ["nodes/cp-3"]);
    assert.deepEqual(waitsOf("dns/final-swap"), ["nodes/enable-cidr-allocation/cp-3"]);
    assert.deepEqual(waitsOf("cni/calico/remove-old-pool"), ["kube-proxy/restart"]);
  });

  it("on an operator-managed Calico, the pools move through the Installation, in the plan's order, and no IPPool is written directly", async () => {
    const operatorObjects: Record<string, unknown> = {
      "/apis/operator.tigera.io/v1/installations/default": { metadata: { name: "default" }, spec: { calicoNetwork: { ipPools: [{ name: "default-ipv4-ippool", cidr: "10.244.0.0/16", blockSize: 26, encapsulation: "IPIP", natOutgoing: "Enabled", nodeSelector: "all()" }] } } },
      "/apis/operator.tigera.io/v1/apiservers/default": { metadata: { name: "default" }, status: { state: "Ready" } },
    };
    Object.assign(API, operatorObjects);
    try {
      const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" });
      const plan = JSON.parse(g.named("verify").inputs.planJson as string) as Plan;
      assert.equal(plan.calicoPools?.management, "operator");
      const patches = g.resources.filter((r) => r.type === "kubernetes:operator.tigera.io/v1:InstallationPatch");
      assert.deepEqual(patches.map((r) => r.name), ["calico-pool-add-new-pool", "calico-pool-close-old-pool", "calico-old-pool-remove-from-installation"]);
      const lists = patches.map((r) => (r.inputs.spec as { calicoNetwork: { ipPools: Array<{ name: string; nodeSelector: string }> } }).calicoNetwork.ipPools.map((p) => `${p.name} ${p.nodeSelector}`));
      assert.deepEqual(lists, [
        ["default-ipv4-ippool all()", "cidr-migration-10-48-0-0-16 all()"],
        ["default-ipv4-ippool !all()", "cidr-migration-10-48-0-0-16 all()"],
        ["cidr-migration-10-48-0-0-16 all()"],
      ]);
      assert.deepEqual(g.resources.filter((r) => /IPPool(Patch)?$/.test(r.type)).map((r) => r.name), [], "the operator's IPPools are never written by the graph");
      const pairs: Array<[string, string]> = [
        ["calico-pool-operator-healthy", "cluster-config-kubelet"], ["calico-pool-add-new-pool", "calico-pool-operator-healthy"],
        ["calico-pool-close-old-pool", "calico-pool-new-pool-ready"], ["nodes-worker-1-drain", "calico-pool-old-pool-closed"],
        ["calico-old-pool-drained", "kube-proxy-restart"], ["calico-old-pool-remove-from-installation", "calico-old-pool-drained"],
        ["calico-old-pool-deleted", "calico-old-pool-remove-from-installation"], ["verify", "calico-old-pool-deleted"],
      ];
      for (const [later, earlier] of pairs) assert.ok(g.dependsOn(g.named(later), g.named(earlier)), `${later} waits for ${earlier}`);
      assert.deepEqual(patches.map((r) => r.retainOnDelete), [true, true, true], "removing the stack never puts old pools back");
    } finally {
      for (const key of Object.keys(operatorObjects)) delete API[key];
    }
  });

  it("services.strategy etcd-rewrite: certificates, bridges for every moving Service, every apiserver and KCM stopped, the rewrite, each node started on new flags; nodes restarted, never deleted; no Service re-created", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { services: { strategy: "etcd-rewrite" } });
    const names = g.resources.map((r) => r.name);
    for (const absent of ["services", "dns-temporary", "dns-final", "enable-cidr-allocation", "service-cidr-open"]) assert.equal(names.includes(absent), false, `${absent} is not declared`);
    assert.deepEqual(names.filter((n) => n.endsWith("-deregister")), [], "no Node is deleted");
    const rewrite = g.named("etcd-rewrite");
    assert.deepEqual(rewrite.inputs.services, { "default/kubernetes": "10.96.0.1 → 10.112.0.1", "kube-system/kube-dns": "10.96.0.10 → 10.112.0.10", "shop/web": "10.96.5.5 → 10.112.5.5" });
    assert.deepEqual(rewrite.inputs.apiservers, ["https://10.0.0.11:6443", "https://10.0.0.12:6443", "https://10.0.0.13:6443"]);
    assert.deepEqual(g.named("old-ip-bridges-open").inputs.services, { "default/kubernetes": "10.96.0.1", "kube-system/kube-dns": "10.96.0.10", "shop/web": "10.96.5.5" });
    const pairs: Array<[string, string]> = [
      ["control-plane-backup-cp-1", "etcd-snapshot"], ["apiserver-certs-cp-1-read", "control-plane-backup-cp-3"],
      ["old-ip-bridges-open", "apiserver-certs-cp-3-renew"], ["control-plane-stop-cp-1-read-kube-apiserver", "old-ip-bridges-open"],
      ["control-plane-stop-cp-2-read-kube-apiserver", "control-plane-stop-cp-1"], ["etcd-rewrite", "control-plane-stop-cp-3"],
      ["control-plane-start-cp-1-kube-apiserver", "etcd-rewrite"], ["control-plane-start-cp-1-kube-controller-manager", "control-plane-start-cp-1-kube-apiserver"],
      ["control-plane-start-cp-2-kube-apiserver", "control-plane-start-cp-1-kube-controller-manager"], ["cluster-config-kubeadm", "control-plane-start-cp-3-kube-controller-manager"],
      ["nodes-worker-1-drain", "calico-pool-disable-old"], ["old-ip-bridges", "nodes-cp-3-rejoin"], ["kube-proxy-config", "old-ip-bridges"],
    ];
    for (const [later, earlier] of pairs) assert.ok(g.dependsOn(g.named(later), g.named(earlier)), `${later} waits for ${earlier}`);
    // each node: drain, CNI cleanup, kubelet restart, then the rejoin that waits for the kept Node
    const rejoin = g.named("nodes-worker-1-rejoin");
    assert.equal(rejoin.inputs.nodeKept, true);
    assert.ok(g.dependsOn(rejoin, g.named("nodes-worker-1-kubelet-start")));
    assert.ok(g.dependsOn(g.named("nodes-worker-1-kubelet-stop"), g.named("nodes-worker-1-cni-cleanup")));
    // KCM starts with allocation on, the apiserver on the new range (the planned flags, visible in preview)
    assert.match(String((g.named("control-plane-start-cp-1-kube-controller-manager").inputs.triggers as string[])[2]), /--allocate-node-cidrs=true/);
    assert.match(String((g.named("control-plane-start-cp-1-kube-apiserver").inputs.triggers as string[])[2]), /--service-cluster-ip-range=10\.112\.0\.0\/16/);
    // bridgeOldIps off: the DNS and kubernetes Services are still bridged, the others not
    const only = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { services: { strategy: "etcd-rewrite", bridgeOldIps: false } });
    assert.deepEqual(only.named("old-ip-bridges-open").inputs.services, { "default/kubernetes": "10.96.0.1", "kube-system/kube-dns": "10.96.0.10" });
  });

  it("etcd-rewrite, re-run with the apiservers stopped or after the rewrite: the graph is planned from the cluster as the first `up` recorded it", async () => {
    const snapshots = mkdtempSync(path.join(os.tmpdir(), "rewrite-record-"));
    const extra = { services: { strategy: "etcd-rewrite" }, snapshot: { directory: snapshots, trigger: "window" } };
    const moves = (g: MockGraph) => [g.named("etcd-rewrite").inputs.services, g.named("etcd-rewrite").inputs.nodes, g.resources.filter((r) => r.name.endsWith("-rejoin")).map((r) => r.name)];
    // a preview records nothing; with no record, an unreachable cluster is the error it always was
    await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra);
    assert.deepEqual(readdirSync(snapshots), []);
    await assert.rejects(graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { server: "http://127.0.0.1:1" }), /cannot reach the cluster/);
    const first = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { preview: false });
    assert.deepEqual(readdirSync(snapshots), ["cluster-window.json"]);

    // killed between the stop and the start: nothing answers
    const stopped = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { server: "http://127.0.0.1:1", preview: false });
    assert.deepEqual(moves(stopped), moves(first));
    assert.deepEqual(stopped.resources.map((r) => r.name).sort(), first.resources.map((r) => r.name).sort(), "the same graph");
    // the kubernetes provider checks the cluster when configured: with the API down, only once the control plane is back
    const lastStart = "control-plane-start-cp-3-kube-controller-manager";
    assert.ok(stopped.dependsOn(stopped.named("cluster"), stopped.named(lastStart)), "configured after the start");
    assert.ok(!first.dependsOn(first.named("cluster"), first.named(lastStart)), "configured at once when the cluster answered");

    // after the start: every Service and Node is in the new ranges, but the nodes have not rolled yet
    const liveServices = API["/api/v1/services"];
    const liveNodes = API["/api/v1/nodes"];
    API["/api/v1/services"] = { metadata: {}, items: [service("default", "kubernetes", "10.112.0.1"), service("kube-system", "kube-dns", "10.112.0.10"), service("shop", "web", "10.112.5.5")] };
    API["/api/v1/nodes"] = { metadata: {}, items: (liveNodes as { items: Array<ReturnType<typeof node>> }).items.map((n, i) => node(n.metadata.name, n.status.addresses[0].address, `10.48.${i}.0/24`, n.metadata.name.startsWith("cp"))) };
    try {
      const after = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { preview: false });
      assert.deepEqual(moves(after), moves(first), "the nodes still roll, the rewrite keeps its inputs");
      // another run id is another run: it plans from the live cluster, which has nothing to move
      const fresh = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { ...extra, snapshot: { directory: snapshots, trigger: "next" } });
      assert.deepEqual(fresh.named("etcd-rewrite").inputs.services, {});
    } finally {
      API["/api/v1/services"] = liveServices;
      API["/api/v1/nodes"] = liveNodes;
    }
  });

  it("recreate, a run resumed: an `up` that passed preflight records the cluster, and its re-runs plan from that record, so steps already applied keep their inputs", async () => {
    const snapshots = mkdtempSync(path.join(os.tmpdir(), "recreate-record-"));
    const extra = { snapshot: { directory: snapshots, trigger: "resume" } };
    const inputsOf = (g: MockGraph) => [g.named("services").inputs.moves, g.named("services").inputs.kubernetesService, g.named("verify").inputs.planJson];
    await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra);
    assert.deepEqual(readdirSync(snapshots), [], "a preview records nothing");
    const first = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { preview: false });
    assert.deepEqual(readdirSync(snapshots), ["cluster-resume.json"]);
    assert.ok(first.named("services").inputs.kubernetesService, "the first run moves the kubernetes Service");

    // the first run moved the Services, then stopped at a node: live, nothing is left to move
    const liveServices = API["/api/v1/services"];
    API["/api/v1/services"] = { metadata: {}, items: [service("default", "kubernetes", "10.112.0.1"), service("kube-system", "kube-dns", "10.112.0.10"), service("shop", "web", "10.112.5.5")] };
    try {
      for (const preview of [true, false]) {
        const again = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, extra, { preview });
        assert.deepEqual(inputsOf(again), inputsOf(first), `the resumed run${preview ? "'s preview" : ""} is the reviewed change`);
      }
      // another trigger is another run: planned from the live cluster
      const fresh = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, undefined, { snapshot: { directory: snapshots, trigger: "next" } });
      assert.equal(fresh.named("services").inputs.kubernetesService, undefined);
    } finally {
      API["/api/v1/services"] = liveServices;
    }
  });

  it("a pod-range expansion that moves no node still turns KCM's allocation back on only after the CNI and cluster config", async () => {
    const g = await graphFor({ from: "10.96.0.0/16", to: "10.112.0.0/16" }, { from: "10.244.0.0/16", to: "10.244.0.0/15", nodeMaskSize: 24 });
    const plan = JSON.parse(g.named("verify").inputs.planJson as string) as Plan;
    assert.deepEqual(plan.nodes.filter((n) => n.action === "move"), []);
    assert.deepEqual(g.resources.filter((r) => r.name.startsWith("nodes-")).map((r) => r.name), []);
    const firstAllocationEdit = g.named("enable-cidr-allocation-cp-1-kcm-read");
    assert.ok(g.dependsOn(firstAllocationEdit, g.named("calico-pool-disable-old")), "enable-cidr-allocation waits for the CNI");
    assert.ok(g.dependsOn(firstAllocationEdit, g.named("control-plane-cp-3-apiserver-write")), "and for the control-plane edits of the same manifest");
  });
});
