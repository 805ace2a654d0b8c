import * as assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { validateConfig } from "../../lib/config";
import { Inventory } from "../../lib/inventory";
import { buildPlan } from "../../lib/plan";
import { Plan } from "../../lib/planModel";
import { readStackFile } from "../../lib/stackFile";

const FIXTURES = path.join(__dirname, "..", "fixtures", "plan");
const GOLDEN = path.join(FIXTURES, "plan-small.golden.json");

function smallInventory(): Inventory {
  return JSON.parse(readFileSync(path.join(FIXTURES, "inventory-small.json"), "utf8")) as Inventory;
}

function smallConfig(overrides: (values: Record<string, unknown>) => void = () => {}, inventory = smallInventory()) {
  const source = readStackFile(path.join(FIXTURES, "stack-small.yaml"));
  overrides(source.values);
  return validateConfig(source, { inventory });
}

function planJson(plan: Plan): string {
  return `${JSON.stringify(plan, null, 2)}\n`;
}

/** Fisher-Yates with a fixed seed, so the shuffle is reproducible. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe("lib/plan buildPlan", () => {
  it("matches the golden plan for a three-control-plane Calico cluster (UPDATE_GOLDEN=1 rewrites it)", () => {
    const actual = planJson(buildPlan(smallConfig(), smallInventory()));
    if (process.env.UPDATE_GOLDEN) writeFileSync(GOLDEN, actual);
    assert.equal(actual, readFileSync(GOLDEN, "utf8"));
  });

  it("is deterministic: the cluster's listing order does not change a byte", () => {
    const inventory = smallInventory();
    const first = planJson(buildPlan(smallConfig(), inventory));
    for (const seed of [1, 7, 42]) {
      const reordered = { ...inventory, services: shuffled(inventory.services, seed), nodes: shuffled(inventory.nodes, seed) };
      assert.equal(planJson(buildPlan(smallConfig(), reordered)), first);
    }
  });

  it("maps every Service in the old range and leaves headless and ExternalName alone", () => {
    const plan = buildPlan(smallConfig(), smallInventory());
    const byName = new Map(plan.services.map((s) => [`${s.namespace}/${s.name}`, s]));
    assert.deepEqual(
      [...byName.values()].filter((s) => s.action === "unchanged").map((s) => `${s.namespace}/${s.name}`),
      ["shop/db-headless", "shop/payments-external"],
    );
    assert.equal(byName.get("kube-system/kube-dns")!.newClusterIP, "10.112.0.10");
    assert.equal(byName.get("shop/legacy")!.newClusterIP, "10.112.0.20");
    assert.equal(byName.get("default/kubernetes")!.newClusterIP, "10.112.0.1");
    assert.deepEqual(plan.dns, { namespace: "kube-system", name: "kube-dns", oldClusterIP: "10.96.0.10", newClusterIP: "10.112.0.10" });
    assert.deepEqual(plan.kubernetesService, { oldClusterIP: "10.96.0.1", newClusterIP: "10.112.0.1" });
  });

  it("keeps the DNS Service at its offset even when Services sorted before it need the next free address", () => {
    // Into a /24, offsets beyond 255 do not fit and take the next free address from the bottom of the range. Twenty
    // such Services sort before kube-system/kube-dns; were DNS not mapped first, one of them would take .10.
    const inventory = smallInventory();
    inventory.services = inventory.services.filter((s) => s.name !== "legacy");
    for (let i = 0; i < 20; i++) {
      inventory.services.push({ namespace: "aaa", name: `s${String(i).padStart(2, "0")}`, type: "ClusterIP", clusterIP: `10.97.1.${i + 1}`, hasSelector: true });
    }
    const config = smallConfig((v) => {
      v.serviceCidr = { from: "10.96.0.0/12", to: "10.112.0.0/24" };
    }, inventory);
    const plan = buildPlan(config, inventory);
    assert.equal(plan.services.find((s) => s.name === "kube-dns")!.newClusterIP, "10.112.0.10");
    const aaa = plan.services.filter((s) => s.namespace === "aaa");
    assert.ok(aaa.every((s) => s.newClusterIP !== "10.112.0.10" && s.newClusterIP !== "10.112.0.1" && !s.keepsOffset));
    assert.ok(plan.warnings.some((w) => w.code === "SERVICE_OFFSET_TAKEN" && w.object === "Service aaa/s00"));
    const ips = plan.services.map((s) => s.newClusterIP).filter((ip) => ip !== undefined);
    assert.equal(new Set(ips).size, ips.length, "no two Services share a planned IP");
  });

  it("refuses an inventory where two Services claim one ClusterIP, naming both", () => {
    const inventory = smallInventory();
    inventory.services.push({ namespace: "aaa", name: "copy", type: "ClusterIP", clusterIP: "10.100.12.7", hasSelector: true });
    assert.throws(() => buildPlan(smallConfig(undefined, inventory), inventory), (err: Error) => {
      assert.match(err.message, /10\.100\.12\.7/);
      assert.match(err.message, /aaa\/copy/);
      assert.match(err.message, /shop\/web/);
      return true;
    });
  });

  it("rolls the canary alone first, control-plane nodes one at a time, then workers in batches of maxUnavailable", () => {
    const plan = buildPlan(smallConfig(), smallInventory());
    const order = plan.nodes.map((n) => [n.name, n.batch, n.canary]);
    assert.deepEqual(order, [
      ["worker-1", 0, true],
      ["cp-1", 1, false],
      ["cp-2", 2, false],
      ["cp-3", 3, false],
      ["worker-2", 4, false],
      ["worker-3", 4, false],
    ]);
    const subnets = plan.nodes.map((n) => n.newPodCIDR);
    assert.equal(new Set(subnets).size, subnets.length);
    for (const s of subnets) assert.match(s, /^10\.48\.\d+\.0\/24$/);
  });

  it("honours a configured canary", () => {
    const plan = buildPlan(smallConfig((v) => ((v.nodeRollout as Record<string, unknown>).canary = "worker-3")), smallInventory());
    assert.deepEqual(plan.nodes.filter((n) => n.canary).map((n) => n.name), ["worker-3"]);
    assert.equal(plan.nodes[0].name, "worker-3");
  });

  it("chains node batches by dependsOn so the order is plain", () => {
    const plan = buildPlan(smallConfig(), smallInventory());
    const steps = new Map(plan.phases.flatMap((p) => p.steps).map((s) => [s.id, s]));
    assert.deepEqual(steps.get("nodes/cp-1")!.dependsOn, ["nodes/worker-1"]);
    assert.deepEqual(steps.get("nodes/worker-2")!.dependsOn, ["nodes/cp-3"]);
    assert.deepEqual(steps.get("nodes/worker-3")!.dependsOn, ["nodes/cp-3"]);
    assert.deepEqual(steps.get("nodes/enable-cidr-allocation/cp-1")!.dependsOn, ["nodes/worker-2", "nodes/worker-3"]);
    // KCM before the apiserver on every control-plane node, one node after another.
    assert.deepEqual(steps.get("control-plane/cp-1/kube-apiserver")!.dependsOn, ["control-plane/cp-1/kube-controller-manager"]);
    assert.deepEqual(steps.get("control-plane/cp-2/backup")!.dependsOn, ["control-plane/cp-1/kube-apiserver"]);
    // Serving certificates once every apiserver serves the new range, one node at a time.
    assert.deepEqual(steps.get("control-plane/cp-1/apiserver-cert")!.dependsOn, ["control-plane/cp-3/kube-apiserver"]);
    assert.deepEqual(steps.get("control-plane/cp-2/apiserver-cert")!.dependsOn, ["control-plane/cp-1/apiserver-cert"]);
    // The DNS Service moves last: its final swap waits for every node.
    assert.deepEqual(steps.get("dns/final-swap")!.dependsOn, ["nodes/enable-cidr-allocation/cp-3"]);
    assert.deepEqual(steps.get("cni/calico/remove-old-pool")!.dependsOn, ["kube-proxy/restart"]);
    assert.deepEqual(steps.get("verify/cluster")!.dependsOn, ["cni/calico/remove-old-pool"]);
    // Every dependency names a step that exists.
    for (const s of steps.values()) for (const d of s.dependsOn) assert.ok(steps.has(d), `${s.id} depends on missing ${d}`);
  });

  it("lists the phases in runbook order", () => {
    const plan = buildPlan(smallConfig(), smallInventory());
    assert.deepEqual(
      plan.phases.map((p) => p.name),
      ["preflight", "snapshot", "control-plane", "services", "dns", "cluster-config", "cni", "nodes", "kube-proxy", "verify"],
    );
  });

  it("reports the manual runbook's figures beside ours", () => {
    const plan = buildPlan(smallConfig(), smallInventory());
    // 40 control plane + 30 Services + 15 CNI + 15 kube-proxy + 30 verify + 5-8 per node for 6 nodes
    assert.deepEqual(plan.estimate.manualMinutes, { min: 130 + 30, max: 130 + 48 });
    assert.ok(plan.estimate.oursSeconds > 0);
    assert.equal(plan.estimate.oursSeconds, plan.phases.reduce((s, p) => s + p.estimateSeconds, 0));
  });

  it("leaves nodes and Services already in an expanded range alone", () => {
    const inventory = smallInventory();
    const config = smallConfig((v) => {
      v.podCidr = { from: "10.244.0.0/16", to: "10.240.0.0/12", nodeMaskSize: 24 };
      v.serviceCidr = { from: "10.96.0.0/13", to: "10.96.0.0/12" };
    }, inventory);
    const plan = buildPlan(config, inventory);
    assert.ok(plan.nodes.every((n) => n.action === "unchanged" && n.newPodCIDR === n.oldPodCIDR));
    assert.ok(plan.services.filter((s) => s.name !== "kubernetes").every((s) => s.action === "unchanged"));
  });

  it("uses the flannel steps when discovery finds flannel", () => {
    const inventory = smallInventory();
    inventory.cni = { detected: "flannel", calicoPools: [], flannelNetwork: "10.244.0.0/16" };
    const plan = buildPlan(smallConfig(undefined, inventory), inventory);
    assert.equal(plan.cni, "flannel");
    assert.deepEqual(plan.phases.find((p) => p.name === "cni")!.steps.map((s) => s.id), ["cni/flannel/net-conf", "cni/flannel/restart"]);
  });

  it("warns about nodes missing from config, a missing DNS Service and LoadBalancers without consent", () => {
    const inventory = smallInventory();
    inventory.services = inventory.services.filter((s) => s.name !== "kube-dns");
    inventory.nodes.push({ name: "worker-9", podCIDR: "10.244.9.0/24", internalIPs: ["192.168.10.29"], controlPlane: false, labels: {}, unschedulable: false });
    const plan = buildPlan(
      smallConfig((v) => ((v.services as Record<string, unknown>).allowLoadBalancerRecreate = false), inventory),
      inventory,
    );
    const codes = plan.warnings.map((w) => `${w.code} ${w.object}`);
    assert.ok(codes.includes("NODE_NOT_IN_CONFIG Node worker-9"), codes.join("\n"));
    assert.ok(codes.includes("DNS_SERVICE_MISSING Service kube-system/kube-dns"), codes.join("\n"));
    assert.ok(codes.includes("LOADBALANCER_NEEDS_CONSENT Service shop/edge"), codes.join("\n"));
    assert.equal(plan.dns.newClusterIP, "10.112.0.10");
  });
});
