import * as assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { validateConfig } from "../../../lib/config/config";
import { UserError } from "../../../lib/config/errors";
import { Inventory } from "../../../lib/plan/inventory";
import { buildPlan, planAsFound } from "../../../lib/plan/plan";
import { renderPlan } from "../../../lib/plan/planReport";
import { planInconsistencies } from "../../../lib/plan/planConsistency";
import { Plan, PlanStep } from "../../../lib/plan/planModel";
import { serviceMovesFromPlan } from "../../../lib/serviceMove/planMoves";
import { readStackFile } from "../../../lib/config/stackFile";
import { coveringRange } from "../../../lib/net/coveringRange";

/** Whether step `id` waits, directly or through other steps, for step `on`. */
function dependsTransitively(steps: Map<string, PlanStep>, id: string, on: string, seen = new Set<string>()): boolean {
  for (const dep of steps.get(id)?.dependsOn ?? []) {
    if (dep === on) return true;
    if (!seen.has(dep)) {
      seen.add(dep);
      if (dependsTransitively(steps, dep, on, seen)) return true;
    }
  }
  return false;
}

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "plan");
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

  it("services.moveInPlace: names each move that goes in place, in the Service's row and the rendered table; DNS, kubernetes, NodePort, LoadBalancer and selector-less ones stay re-creates", () => {
    const plan = buildPlan(smallConfig((v) => { v.services = { allowLoadBalancerRecreate: true, moveInPlace: true }; }), smallInventory());
    const inPlace = plan.services.filter((s) => s.inPlace).map((s) => `${s.namespace}/${s.name}`);
    assert.deepEqual(inPlace, ["monitoring/prometheus", "shop/web"]);
    for (const s of plan.services.filter((s) => s.inPlace)) assert.equal(s.action, "recreate"); // what the graph and gate count as a move
    const webRow = renderPlan(plan).split("\n").find((l) => l.startsWith("shop/web "))!;
    assert.match(webRow, /in place/);
    assert.match(plan.services.find((s) => s.name === "web-nodeport")!.reason, /re-created: only a single-stack ClusterIP Service with a selector/);
    assert.deepEqual(planInconsistencies(plan), []);
    // the default is the same; false re-creates every one
    assert.deepEqual(buildPlan(smallConfig(), smallInventory()).services.filter((s) => s.inPlace).map((s) => `${s.namespace}/${s.name}`), ["monitoring/prometheus", "shop/web"]);
    assert.equal(buildPlan(smallConfig((v) => { v.services = { moveInPlace: false }; }), smallInventory()).services.some((s) => s.inPlace), false);
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

  it("services.strategy etcd-rewrite: certificates while the apiservers run, every apiserver and KCM stopped, one rewrite of every Service (DNS too), each node started apiserver first, nodes restarted after", () => {
    const config = smallConfig((v) => ((v.services as Record<string, unknown>).strategy = "etcd-rewrite"));
    assert.equal(config.nodeRollout.strategy, "etcd-rewrite");
    assert.equal(config.services.bridgeOldIps, true);
    const plan = buildPlan(config, smallInventory());
    assert.equal(plan.strategy, "etcd-rewrite");
    assert.deepEqual(planInconsistencies(plan), []);
    const steps = new Map(plan.phases.flatMap((p) => p.steps).map((s) => [s.id, s]));
    const cp = plan.phases.find((p) => p.name === "control-plane")!.steps.map((s) => s.id);
    assert.deepEqual(cp, [
      "control-plane/cp-1/backup", "control-plane/cp-2/backup", "control-plane/cp-3/backup",
      "control-plane/cp-1/apiserver-cert", "control-plane/cp-2/apiserver-cert", "control-plane/cp-3/apiserver-cert",
      "control-plane/cp-1/stop", "control-plane/cp-2/stop", "control-plane/cp-3/stop",
      "control-plane/etcd-rewrite",
      "control-plane/cp-1/kube-apiserver", "control-plane/cp-1/kube-controller-manager",
      "control-plane/cp-2/kube-apiserver", "control-plane/cp-2/kube-controller-manager",
      "control-plane/cp-3/kube-apiserver", "control-plane/cp-3/kube-controller-manager",
    ]);
    // each step waits for the one before it
    cp.slice(1).forEach((id, i) => assert.deepEqual(steps.get(id)!.dependsOn, [cp[i]], id));
    // every moving Service is a step of the rewrite, the DNS and kubernetes Services among them; no DNS stand-in
    const moving = plan.services.filter((s) => s.action === "recreate");
    const serviceSteps = plan.phases.find((p) => p.name === "services")!.steps;
    assert.equal(serviceSteps.length, moving.length);
    for (const s of serviceSteps) {
      assert.equal(s.action, "rewrite-in-etcd");
      assert.deepEqual(s.dependsOn, ["control-plane/etcd-rewrite"]);
    }
    assert.ok(steps.has("services/kube-system/kube-dns"));
    assert.deepEqual(plan.phases.find((p) => p.name === "dns")!.steps, []);
    // the cluster config after the last start; KCM starts with allocation on, so no enable-cidr-allocation steps
    assert.deepEqual(steps.get("cluster-config/kubeadm-config")!.dependsOn, ["control-plane/cp-3/kube-controller-manager"]);
    assert.deepEqual([...steps.keys()].filter((id) => id.includes("enable-cidr-allocation")), []);
    assert.deepEqual(steps.get("kube-proxy/config")!.dependsOn, ["nodes/worker-2", "nodes/worker-3"]);
    for (const s of steps.values()) for (const d of s.dependsOn) assert.ok(steps.has(d), `${s.id} depends on missing ${d}`);
  });

  it("refuses an etcd rewrite of the Services with a node strategy that re-registers, and the reverse, naming the key", () => {
    const mixed = () => smallConfig((v) => {
      (v.services as Record<string, unknown>).strategy = "etcd-rewrite";
      (v.nodeRollout as Record<string, unknown>).strategy = "reregister";
    });
    assert.throws(mixed, /nodeRollout\.strategy: "reregister" cannot follow services\.strategy "etcd-rewrite"/);
    const reverse = () => smallConfig((v) => ((v.nodeRollout as Record<string, unknown>).strategy = "etcd-rewrite"));
    assert.throws(reverse, /nodeRollout\.strategy: "etcd-rewrite" needs services\.strategy "etcd-rewrite" too/);
    assert.throws(() => smallConfig((v) => ((v.services as Record<string, unknown>).strategy = "rewrite")), /services\.strategy/);
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
    const steps = plan.phases.find((p) => p.name === "cni")!.steps;
    assert.deepEqual(steps.map((s) => s.id), ["cni/flannel/net-conf", "cni/flannel/restart", "cni/flannel/net-conf-final", "cni/flannel/restart-final"]);
    // while nodes move, Network covers both ranges (flanneld refuses a Node podCIDR outside it); the new range after
    const byId = new Map(steps.map((s) => [s.id, s]));
    assert.ok(byId.get("cni/flannel/net-conf")!.target.includes(`Network ${coveringRange(plan.podCidr.from, plan.podCidr.to)} `), byId.get("cni/flannel/net-conf")!.target);
    assert.ok(byId.get("cni/flannel/net-conf-final")!.target.endsWith(`Network ${plan.podCidr.to}`), byId.get("cni/flannel/net-conf-final")!.target);
    const allSteps = new Map(plan.phases.flatMap((p) => p.steps).map((s) => [s.id, s]));
    const nodeSteps = [...allSteps.keys()].filter((id) => id.startsWith("nodes/"));
    assert.ok(nodeSteps.length > 0);
    assert.ok(nodeSteps.every((id) => dependsTransitively(allSteps, id, "cni/flannel/restart")), "every node moves after the transition Network");
    assert.ok(dependsTransitively(allSteps, "cni/flannel/net-conf-final", "kube-proxy/restart"), "the final Network waits for every node (and kube-proxy)");
    assert.ok(nodeSteps.every((id) => dependsTransitively(allSteps, "cni/flannel/net-conf-final", id)));
    assert.ok(dependsTransitively(allSteps, "verify/cluster", "cni/flannel/restart-final"));
  });

  it("the plan as found (verify's) warns about nodes missing from config, a missing DNS Service and LoadBalancers without consent", () => {
    const inventory = smallInventory();
    inventory.services = inventory.services.filter((s) => s.name !== "kube-dns");
    inventory.nodes.push({ name: "worker-9", podCIDR: "10.244.9.0/24", internalIPs: ["192.168.10.29"], controlPlane: false, labels: {}, unschedulable: false });
    const plan = planAsFound(
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

describe("lib/plan buildPlan refuses what the cluster contradicts or could not finish (issue 20)", () => {
  const refusal = (fn: () => unknown): string => {
    let message = "";
    assert.throws(fn, (err: Error) => {
      assert.ok(err instanceof UserError, `expected a UserError, got ${err}`);
      assert.equal((err as UserError).exitCode, 2);
      message = err.message;
      return true;
    });
    return message;
  };
  const keys = (plan: Plan) => plan.services.map((s) => `${s.namespace}/${s.name}`);
  const finalAddresses = (plan: Plan) => plan.services.map((s) => s.newClusterIP ?? (s.oldClusterIP && s.oldClusterIP !== "None" ? s.oldClusterIP : undefined)).filter((ip) => ip !== undefined);

  it("1: a dns.service naming a missing Service is an error naming cidr-migration:dns.service and the likely Service; no two Services share an address", () => {
    const inventory = smallInventory();
    const config = smallConfig((v) => (v.dns = { service: "kube-system/coredns" }), inventory);
    const message = refusal(() => buildPlan(config, inventory));
    assert.equal(
      message,
      "cidr-migration:dns.service: Service kube-system/coredns does not exist in the cluster; set cidr-migration:dns.service to the cluster DNS Service as NAMESPACE/NAME, e.g. kube-system/kube-dns (it holds 10.96.0.10)",
    );
    // verify's plan of the same cluster: no DNS phase for a Service that does not exist, and one address per object
    const asFound = planAsFound(config, inventory);
    assert.deepEqual(asFound.phases.find((p) => p.name === "dns")!.steps, []);
    assert.equal(new Set(finalAddresses(asFound)).size, finalAddresses(asFound).length);
    assert.deepEqual(planInconsistencies(asFound), []);
  });

  it("1: a DNS Service without a ClusterIP is refused too", () => {
    const inventory = smallInventory();
    const config = smallConfig((v) => (v.dns = { service: "shop/db-headless" }), inventory);
    assert.match(refusal(() => buildPlan(config, inventory)), /^cidr-migration:dns\.service: Service shop\/db-headless has no ClusterIP \(headless\); .*e\.g\. kube-system\/kube-dns/);
  });

  it("1: a re-run between the DNS stand-in and the final swap plans DNS onto the stand-in's IP, not around it", () => {
    const inventory = smallInventory();
    inventory.services.push({ namespace: "kube-system", name: "kube-dns-cidr-migration-temp", type: "ClusterIP", clusterIP: "10.112.0.10", hasSelector: true });
    const plan = buildPlan(smallConfig(undefined, inventory), inventory);
    assert.deepEqual(plan.dns, { namespace: "kube-system", name: "kube-dns", oldClusterIP: "10.96.0.10", newClusterIP: "10.112.0.10" });
    assert.equal(plan.services.find((s) => s.name === "kube-dns-cidr-migration-temp")!.action, "unchanged");
    // interrupted inside the final swap: the DNS Service deleted, its stand-in still there — a re-run must not be refused
    inventory.services = inventory.services.filter((s) => s.name !== "kube-dns");
    const resumed = buildPlan(smallConfig(undefined, inventory), inventory);
    assert.equal(resumed.dns.newClusterIP, "10.112.0.10");
    assert.deepEqual(resumed.phases.find((p) => p.name === "dns")!.steps, []);
  });

  it("2: a Service-range expansion moves nothing: no kubernetes re-create, no DNS stand-in or swap, and the graph's moves agree", () => {
    // A cluster on 10.96.0.0/16 widened to 10.96.0.0/15: every Service, the kubernetes and DNS ones too, stays.
    const inventory = smallInventory();
    for (const s of inventory.services) {
      if (s.clusterIP && s.clusterIP !== "None") s.clusterIP = s.clusterIP.replace(/^10\.\d+\./, "10.96.");
    }
    inventory.kubeadmConfig!.serviceSubnet = "10.96.0.0/16";
    const config = smallConfig((v) => (v.serviceCidr = { from: "10.96.0.0/16", to: "10.96.0.0/15" }), inventory);
    const plan = buildPlan(config, inventory);
    assert.deepEqual(plan.services.filter((s) => s.action === "recreate").map((s) => s.name), []);
    assert.deepEqual(plan.kubernetesService, { oldClusterIP: "10.96.0.1", newClusterIP: "10.96.0.1" });
    assert.deepEqual(plan.dns, { namespace: "kube-system", name: "kube-dns", oldClusterIP: "10.96.0.10", newClusterIP: "10.96.0.10" });
    const stepsOf = (name: string) => plan.phases.find((p) => p.name === name)!.steps;
    assert.deepEqual(stepsOf("services"), []);
    assert.deepEqual(stepsOf("dns"), []);
    const steps = new Map(plan.phases.flatMap((p) => p.steps).map((s) => [s.id, s]));
    // the phases still chain: cluster config after the control plane, kube-proxy after the nodes
    assert.deepEqual(steps.get("cluster-config/kubeadm-config")!.dependsOn, ["control-plane/cp-3/apiserver-cert"]);
    assert.deepEqual(steps.get("kube-proxy/config")!.dependsOn, ["nodes/enable-cidr-allocation/cp-3"]);
    for (const s of steps.values()) for (const d of s.dependsOn) assert.ok(steps.has(d), `${s.id} depends on missing ${d}`);
    assert.deepEqual(serviceMovesFromPlan(plan), { moves: {} });
    assert.ok(keys(plan).includes("default/kubernetes"));
  });

  it("3: a configured cni that discovery contradicts is an error naming both", () => {
    const inventory = smallInventory();
    assert.equal(
      refusal(() => buildPlan(smallConfig((v) => (v.cni = "flannel"), inventory), inventory)),
      'cidr-migration:cni: is "flannel" but discovery finds Calico (IPPool default-ipv4-ippool 10.244.0.0/16), so the pod network would not be switched; set it to "calico" or "auto"',
    );
    assert.match(refusal(() => buildPlan(smallConfig((v) => (v.cni = "none"), inventory), inventory)), /^cidr-migration:cni: is "none" but discovery finds Calico/);
    assert.equal(buildPlan(smallConfig((v) => (v.cni = "calico"), inventory), inventory).cni, "calico");
  });

  it("a worker's address changes with the rollout: a worker the run does not move is refused, one that moved already (a re-run) is not", () => {
    const inventory = smallInventory();
    const withChange = (v: Record<string, unknown>) => {
      v.nodeAddresses = [{ name: "worker-2", from: "192.168.10.22", to: "192.168.20.22" }];
      v.hostAddress = { persistence: "none", prefix: 24 };
    };
    assert.equal(buildPlan(smallConfig(withChange, inventory), inventory).nodes.find((n) => n.name === "worker-2")?.action, "move");
    // worker-2's subnet in the new range already (a re-run after its move), its address not yet changed
    const moved = smallInventory();
    moved.nodes.find((n) => n.name === "worker-2")!.podCIDR = "10.48.3.0/24";
    moved.nodes.find((n) => n.name === "worker-2")!.podCIDRs = ["10.48.3.0/24"];
    assert.match(refusal(() => buildPlan(smallConfig(withChange, moved), moved)), /^cidr-migration:nodeAddresses\[0\]\.name: worker-2's address changes while the node rollout re-registers it, but this run does not move worker-2/);
    // the move changed its address too: nothing left to refuse
    moved.nodes.find((n) => n.name === "worker-2")!.internalIPs = ["192.168.20.22"];
    assert.equal(buildPlan(smallConfig(withChange, moved), moved).nodes.find((n) => n.name === "worker-2")?.action, "unchanged");
  });

  it("4: a serviceCidr.from that is not the cluster's range is refused, naming what says otherwise", () => {
    const inventory = smallInventory();
    const message = refusal(() => buildPlan(smallConfig((v) => (v.serviceCidr = { from: "10.200.0.0/16", to: "10.112.0.0/12" }), inventory), inventory));
    assert.match(message, /^cidr-migration:serviceCidr\.from: 10\.200\.0\.0\/16 is not the cluster's Service range: Service default\/kubernetes holds 10\.96\.0\.1, not 10\.200\.0\.1; kubeadm-config networking\.serviceSubnet is 10\.96\.0\.0\/12; 6 of 6 Services lie outside/);
    assert.equal(message.split("\n").length, 1);
    // a live ServiceCIDR alone is witness enough
    delete inventory.kubeadmConfig;
    inventory.services = inventory.services.filter((s) => s.name !== "kubernetes");
    inventory.serviceCidrs = [{ name: "kubernetes", cidrs: ["10.96.0.0/12"], terminating: false }];
    assert.match(refusal(() => buildPlan(smallConfig((v) => (v.serviceCidr = { from: "10.200.0.0/16", to: "10.112.0.0/12" }), inventory), inventory)), /ServiceCIDR kubernetes is 10\.96\.0\.0\/12/);
  });

  it("4: part-way through, the new range is the cluster's too: a re-run is planned, not refused", () => {
    const inventory = smallInventory();
    inventory.services.find((s) => s.name === "kubernetes")!.clusterIP = "10.112.0.1";
    inventory.kubeadmConfig!.serviceSubnet = "10.112.0.0/12";
    inventory.serviceCidrs = [{ name: "kubernetes", cidrs: ["10.96.0.0/12"], terminating: true }, { name: "cidr-migration-new", cidrs: ["10.112.0.0/12"], terminating: false }];
    const plan = buildPlan(smallConfig(undefined, inventory), inventory);
    assert.deepEqual(plan.kubernetesService, { oldClusterIP: "10.112.0.1", newClusterIP: "10.112.0.1" });
    assert.equal(plan.phases.find((p) => p.name === "services")!.steps.some((s) => s.id === "services/default/kubernetes"), false);
  });

  it("5: a cluster node missing from cidr-migration:nodes is refused, naming the node and what to add", () => {
    const inventory = smallInventory();
    const config = smallConfig((v) => (v.nodes = (v.nodes as Array<{ name: string }>).filter((n) => n.name !== "worker-3")), inventory);
    assert.equal(
      refusal(() => buildPlan(config, inventory)),
      "cidr-migration:nodes: Node worker-3 is in the cluster but not listed, and its podCIDR 10.244.4.0/24 must move to 10.48.5.0/24; add { name: worker-3, host: 192.168.10.23, role: worker } (a node that cannot be rolled leaves the migration unfinishable)",
    );
  });

  it("5: a worker that keeps its podCIDR (a pod-range expansion) may stay unlisted; a control-plane node may not", () => {
    const inventory = smallInventory();
    const expand = (drop: string) =>
      smallConfig((v) => {
        v.podCidr = { from: "10.244.0.0/16", to: "10.240.0.0/12", nodeMaskSize: 24 };
        v.nodes = (v.nodes as Array<{ name: string }>).filter((n) => n.name !== drop);
      }, inventory);
    const plan = buildPlan(expand("worker-3"), inventory);
    assert.ok(plan.warnings.some((w) => w.code === "NODE_NOT_IN_CONFIG" && w.object === "Node worker-3"));
    assert.match(refusal(() => buildPlan(expand("cp-2"), inventory)), /^cidr-migration:nodes: Node cp-2 is in the cluster but not listed, and its control-plane manifests must change; add \{ name: cp-2, host: 192\.168\.10\.12, role: control-plane \}/);
  });
});
