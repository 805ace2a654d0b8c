// Discovery and the plan against a real control plane seeded the way the sandbox is, and the CLI as a real process
// against it: exit codes 0, 2 (invalid input, decided before any cluster call) and 3 (unreachable).
import * as assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { validateConfig } from "../../lib/config/config";
import { discoverInventory } from "../../lib/plan/discovery";
import { Inventory } from "../../lib/plan/inventory";
import { buildPlan } from "../../lib/plan/plan";
import { Plan } from "../../lib/plan/planModel";
import { readStackFile } from "../../lib/config/stackFile";
import { runCli, REPO } from "../support/cli";
import { freePort } from "../testbed/etcd";
import { useTestCluster } from "../testbed/fixture";
import { KUBE_VERSION, OLD_NODE_CIDR_MASK_SIZE, OLD_POD_CIDR, OLD_SERVICE_CIDR, SeededWorkload, seedWorkload } from "../testbed/seed";

const SANDBOX_STACK = path.join(REPO, "Pulumi.sandbox.yaml");

/** A stack file like the sandbox's, pointing at this test's cluster. */
function stackFileFor(kubeconfigPath: string, overrides: Record<string, unknown> = {}): string {
  const source = readStackFile(SANDBOX_STACK);
  const values = { ...source.values, kubeconfig: kubeconfigPath, ...overrides };
  const file = path.join(mkdtempSync(path.join(tmpdir(), "cidr-stack-")), "Pulumi.test.yaml");
  writeFileSync(file, stringify({ config: Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, v])) }));
  return file;
}

describe("discovery and plan against a seeded real control plane", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize: OLD_NODE_CIDR_MASK_SIZE });
  let seeded: SeededWorkload;
  let inventory: Inventory;

  before(async function () {
    seeded = await seedWorkload(cluster().kubeConfig());
    inventory = await discoverInventory(cluster().kubeConfig());
  });

  it("returns exactly the seeded Services", () => {
    const expected = seeded.services
      .map((s) => ({ key: `${s.namespace}/${s.name}`, type: s.type, clusterIP: s.clusterIP, hasSelector: Boolean(s.selector && Object.keys(s.selector).length) }))
      .sort((a, b) => a.key.localeCompare(b.key));
    const actual = inventory.services
      .map((s) => ({ key: `${s.namespace}/${s.name}`, type: s.type, clusterIP: s.clusterIP, hasSelector: s.hasSelector }))
      .sort((a, b) => a.key.localeCompare(b.key));
    assert.deepEqual(actual, expected);
  });

  it("returns exactly the seeded Nodes with their podCIDRs, addresses and roles", () => {
    const expected = seeded.nodes.map((n) => ({ name: n.name, podCIDR: n.podCIDR, internalIPs: [n.internalIP], controlPlane: n.controlPlane })).sort((a, b) => a.name.localeCompare(b.name));
    const actual = inventory.nodes.map((n) => ({ name: n.name, podCIDR: n.podCIDR, internalIPs: n.internalIPs, controlPlane: n.controlPlane })).sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(actual, expected);
    for (const n of seeded.nodes) assert.deepEqual(inventory.nodes.find((i) => i.name === n.name)!.labels, n.labels);
  });

  it("reads the cluster ConfigMaps as kubeadm writes them, and the Calico pools", () => {
    // The real kube-proxy ConfigMap says mode: "" (kubeadm's default, iptables); discovery reports it as unset.
    assert.deepEqual(inventory.kubeProxy, { clusterCIDR: OLD_POD_CIDR, mode: undefined });
    assert.equal(inventory.kubeadmConfig?.podSubnet, OLD_POD_CIDR);
    assert.equal(inventory.kubeadmConfig?.serviceSubnet, OLD_SERVICE_CIDR);
    assert.deepEqual(inventory.kubeletConfig, { configMapName: "kubelet-config", clusterDNS: [seeded.clusterDNS] });
    assert.equal(inventory.cni.detected, "calico");
    assert.deepEqual(
      inventory.cni.calicoPools,
      seeded.calico.ipPools.map((p) => ({ name: p.name, cidr: p.cidr, blockSize: p.blockSize, ipipMode: p.ipipMode, vxlanMode: p.vxlanMode, natOutgoing: p.natOutgoing, nodeSelector: p.nodeSelector })),
    );
    assert.equal(inventory.serverVersion.gitVersion, KUBE_VERSION);
  });

  it("plans every seeded Service and node right", () => {
    const config = validateConfig(readStackFile(stackFileFor(cluster().kubeconfigPath)), { inventory });
    const plan: Plan = buildPlan(config, inventory);
    for (const s of seeded.services) {
      const move = plan.services.find((m) => m.namespace === s.namespace && m.name === s.name)!;
      if (s.type === "ExternalName" || s.clusterIP === "None") {
        assert.equal(move.action, "unchanged", `${s.namespace}/${s.name}`);
      } else {
        assert.equal(move.action, "recreate", `${s.namespace}/${s.name}`);
        // Every seeded IP fits the same-size new range at its own offset: 10.96.x.y -> 10.112.x.y and so on.
        const [a, b, c, d] = s.clusterIP!.split(".").map(Number);
        assert.equal(move.newClusterIP, `${a}.${b + 16}.${c}.${d}`, `${s.namespace}/${s.name}`);
      }
    }
    assert.equal(plan.dns.newClusterIP, "10.112.0.10");
    assert.deepEqual(plan.nodes.map((n) => n.name).sort(), seeded.nodes.map((n) => n.name).sort());
    assert.equal(plan.nodes.filter((n) => n.canary).length, 1);
    assert.ok(plan.nodes.every((n) => n.newPodCIDR.startsWith("10.48.") && n.action === "move"));
  });

  describe("the CLI as a process", function () {
    it("plan --json prints the documented shape and exits 0", async () => {
      const result = await runCli(["plan", "--config", stackFileFor(cluster().kubeconfigPath), "--json"]);
      assert.equal(result.code, 0, result.stderr);
      const plan = JSON.parse(result.stdout) as Plan;
      for (const s of plan.services) for (const k of ["namespace", "name", "type", "action", "reason"]) assert.ok(k in s, `service lacks ${k}`);
      for (const n of plan.nodes) for (const k of ["name", "oldPodCIDR", "newPodCIDR", "batch"]) assert.ok(k in n, `node lacks ${k}`);
      for (const p of plan.phases) for (const st of p.steps) for (const k of ["id", "action", "target", "dependsOn"]) assert.ok(k in st, `step lacks ${k}`);
      assert.ok(Array.isArray(plan.warnings));
      assert.equal(plan.services.length, seeded.services.length);
    });

    it("plan prints the readable report", async () => {
      const result = await runCli(["plan", "--config", stackFileFor(cluster().kubeconfigPath)]);
      assert.equal(result.code, 0, result.stderr);
      for (const heading of ["Phases", "Services", "Nodes", "Warnings"]) assert.match(result.stdout, new RegExp(`^${heading}`, "m"));
      assert.match(result.stdout, /kube-system\/kube-dns\s+ClusterIP\s+10\.96\.0\.10\s+10\.112\.0\.10\s+recreate/);
    });

    it("inventory prints what discovery reads", async () => {
      const result = await runCli(["inventory", "--kubeconfig", cluster().kubeconfigPath]);
      assert.equal(result.code, 0, result.stderr);
      const printed = JSON.parse(result.stdout) as Inventory;
      assert.deepEqual(printed.services.map((s) => s.name).sort(), inventory.services.map((s) => s.name).sort());
    });

    it("exits 2 on invalid config, one line per problem and no stack trace, before touching the cluster", async () => {
      const deadPort = await freePort();
      const file = stackFileFor(cluster().kubeconfigPath, { serviceCidr: { from: "10.96.0.1/12", to: "10.112.0.0/12" }, cni: "calco" });
      const result = await runCli(["plan", "--config", file, "--kubeconfig", path.join(tmpdir(), `missing-${deadPort}`)]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, "");
      const lines = result.stderr.trimEnd().split("\n");
      assert.deepEqual(lines.length, 2, result.stderr);
      assert.match(lines[0], /^cidr-migration: cidr-migration:serviceCidr\.from: .*did you mean 10\.96\.0\.0\/12\?/);
      assert.match(lines[1], /^cidr-migration: cidr-migration:cni: "calco" .*did you mean "calico"/);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    });

    it("exits 2 on an unknown option", async () => {
      const result = await runCli(["plan", "--stak", "prod"]);
      assert.equal(result.code, 2);
      assert.match(result.stderr, /unknown option '--stak'/);
    });

    it("exits 3 when the cluster cannot be reached", async () => {
      const deadPort = await freePort();
      const kubeconfig = path.join(mkdtempSync(path.join(tmpdir(), "cidr-kc-")), "dead.kubeconfig");
      writeFileSync(
        kubeconfig,
        stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{ name: "dead", cluster: { server: `https://127.0.0.1:${deadPort}`, "insecure-skip-tls-verify": true } }],
          users: [{ name: "u", user: { token: "t" } }],
          contexts: [{ name: "dead", context: { cluster: "dead", user: "u" } }],
          "current-context": "dead",
        }),
      );
      const result = await runCli(["plan", "--config", stackFileFor(kubeconfig)]);
      assert.equal(result.code, 3, result.stderr);
      assert.match(result.stderr, new RegExp(`cannot reach the cluster at https://127\\.0\\.0\\.1:${deadPort}`));
      assert.equal(result.stderr.trimEnd().split("\n").length, 1);
    });
  });
});
