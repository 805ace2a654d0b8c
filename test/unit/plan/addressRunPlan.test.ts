import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError, UserError } from "../../../lib/config/errors";
import { planAddressRun } from "../../../lib/plan/addressRunPlan";
import { Inventory } from "../../../lib/plan/inventory";
import { planNodeAddresses } from "../../../lib/plan/nodeAddressPlan";
import { buildPlan } from "../../../lib/plan/plan";
import { planRun } from "../../../lib/plan/runPlan";
import { REPO } from "../../support/cli";
import { baseValues } from "../../support/stackValues";

// A run that changes node addresses only (nodeAddresses without serviceCidr and podCidr): its plan keeps the
// cluster's ranges, rolls the moved workers in the address plan's batches and moves no Service.

const inventory = (): Inventory => JSON.parse(readFileSync(path.join(REPO, "test", "fixtures", "plan", "inventory-small.json"), "utf8"));

function addressConfig(changes: unknown[], edit: (values: Record<string, unknown>) => void = () => {}) {
  const values = baseValues();
  delete values.serviceCidr;
  delete values.podCidr;
  values.nodes = inventory().nodes.map((n) => ({ name: n.name, host: n.internalIPs[0], role: n.controlPlane || n.name.startsWith("cp-") ? "control-plane" : "worker" }));
  values.nodeAddresses = changes;
  values.hostAddress = { persistence: "netplan", prefix: 24 };
  edit(values);
  return validateConfig({ values }, { inventory: inventory() });
}

const changes = [
  { name: "worker-1", from: "192.168.10.21", to: "192.168.20.21" },
  { name: "cp-2", from: "192.168.10.12", to: "192.168.20.12" },
  { name: "worker-3", from: "192.168.10.23", to: "192.168.20.23" },
];

describe("lib/plan addressRunPlan: node addresses alone", () => {
  it("keeps the cluster's ranges (kubeadm-config), moves no Service, and rolls the workers in the address plan's batches with their subnet from kube-controller-manager", () => {
    const config = addressConfig(changes);
    const addressPlan = planNodeAddresses(config, inventory());
    const plan = planAddressRun(config, inventory(), addressPlan);
    assert.deepEqual(plan.serviceCidr, { from: "10.96.0.0/12", to: "10.96.0.0/12" });
    assert.deepEqual(plan.podCidr, { from: "10.244.0.0/16", to: "10.244.0.0/16", nodeMaskSize: 24 });
    assert.deepEqual(plan.services, []);
    assert.deepEqual(plan.kubernetesService, { oldClusterIP: "10.96.0.1", newClusterIP: "10.96.0.1" });
    assert.deepEqual([plan.dns.oldClusterIP, plan.dns.newClusterIP], ["10.96.0.10", "10.96.0.10"]);
    assert.deepEqual(plan.nodes.map((n) => [n.name, n.batch, n.canary, n.oldPodCIDR, n.newPodCIDR, n.podCidrAllocation, n.action]), [
      ["worker-1", 0, true, "10.244.2.0/24", "10.244.0.0/16", "controller", "move"],
      ["worker-3", 1, false, "10.244.4.0/24", "10.244.0.0/16", "controller", "move"],
    ], "the workers only: cp-2 changes after the rollout, keeping its Node");
    assert.deepEqual(plan.phases.map((p) => [p.name, p.steps.map((s) => s.id)]), [
      ["preflight", ["preflight/audit"]],
      ["snapshot", ["snapshot/etcd"]],
      ["nodes", ["nodes/worker-1", "nodes/worker-3"]],
      ["verify", ["verify/cluster"]],
    ]);
    assert.deepEqual(plan.phases[2].steps[1].dependsOn, ["nodes/worker-1"], "the canary first, then the next batch");
    // the phases, then cp-2's own ten minutes
    assert.equal(plan.estimate.oursSeconds, 30 + 60 + 240 + 240 + 60 + 600);
    assert.deepEqual(plan.estimate.manualMinutes, { min: 120, max: 360 });
    assert.equal(plan.cni, "calico");
  });

  it("planRun dispatches on the config; the CIDR plan refuses a run without ranges, naming it", () => {
    const config = addressConfig(changes);
    assert.deepEqual(planRun(config, inventory()).nodes.map((n) => n.name), ["worker-1", "worker-3"]);
    assert.throws(() => buildPlan(config, inventory()), (e: Error) => e instanceof UserError && /changes node addresses only .* no Service or Pod range plan/.test(e.message));
  });

  it("refuses a new address inside the cluster's own Service or Pod range, naming the entry", () => {
    const config = addressConfig([{ name: "worker-1", from: "192.168.10.21", to: "10.96.3.3" }, { name: "worker-3", from: "192.168.10.23", to: "10.244.200.9" }]);
    assert.throws(() => planAddressRun(config, inventory(), planNodeAddresses(config, inventory())), (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.deepEqual(e.problems.map((p) => p.key), ["cidr-migration:nodeAddresses[0].to", "cidr-migration:nodeAddresses[1].to"]);
      assert.match(e.problems[0].message, /10\.96\.3\.3 lies in the cluster's Service range 10\.96\.0\.0\/12 \(kubeadm-config\)/);
      assert.match(e.problems[1].message, /10\.244\.200\.9 lies in the cluster's Pod range 10\.244\.0\.0\/16/);
      return true;
    });
  });

  it("refuses a cluster whose kubeadm-config holds no ranges, saying where they are read and what to do", () => {
    const config = addressConfig(changes);
    const without = { ...inventory(), kubeadmConfig: { serviceSubnet: "10.96.0.0/12" } };
    assert.throws(() => planAddressRun(config, without, planNodeAddresses(config, without)), (e: Error) =>
      e instanceof UserError && /kubeadm-config has no networking\.podSubnet: .*set it in kubeadm-config's ClusterConfiguration .*, or give serviceCidr and podCidr/.test(e.message));
  });

  it("refuses a worker whose Node has no podCIDR (kube-controller-manager does not allocate), naming the entry", () => {
    const config = addressConfig(changes);
    const without = inventory();
    without.nodes = without.nodes.map((n) => (n.name === "worker-3" ? { ...n, podCIDR: undefined } : n));
    assert.throws(() => planAddressRun(config, without, planNodeAddresses(config, without)), (e: Error) => {
      assert.ok(e instanceof ConfigError);
      assert.deepEqual(e.problems.map((p) => p.key), ["cidr-migration:nodeAddresses[2].name"]);
      assert.match(e.problems[0].message, /Node worker-3 has no podCIDR: kube-controller-manager does not allocate node subnets here/);
      return true;
    });
  });
});
