import * as assert from "node:assert/strict";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError, UserError } from "../../../lib/config/errors";
import { MigrationConfig } from "../../../lib/config/migrationConfig";
import { Inventory } from "../../../lib/plan/inventory";
import {
  assertNodeAddressBatches,
  NODE_ADDRESS_ESTIMATE_SECONDS,
  NODE_ADDRESS_MANUAL_MINUTES,
  NodeAddressStep,
  nodeAddressRefusals,
  planNodeAddresses,
} from "../../../lib/plan/nodeAddressPlan";
import { renderNodeAddressPlan } from "../../../lib/plan/nodeAddressReport";
import { baseValues } from "../../support/stackValues";

/** cp-1..3 (10.0.0.11-13) and worker-1..5 (10.0.0.21-25); every node's address moves from 10.0.0.x to 10.1.0.x. */
function config(opts: { changes?: string[]; controlPlanes?: number; maxUnavailable?: number; canary?: string } = {}): MigrationConfig {
  const values = baseValues();
  const cps = opts.controlPlanes ?? 3;
  const nodes = [
    ...Array.from({ length: cps }, (_, i) => ({ name: `cp-${i + 1}`, host: `10.0.0.${11 + i}`, role: "control-plane" })),
    ...Array.from({ length: 5 }, (_, i) => ({ name: `worker-${i + 1}`, host: `10.0.0.${21 + i}`, role: "worker" })),
  ];
  values.nodes = nodes;
  const changes = opts.changes ?? nodes.map((n) => n.name);
  values.nodeAddresses = changes.map((name) => {
    const host = nodes.find((n) => n.name === name)!.host;
    return { name, from: host, to: host.replace("10.0.0.", "10.1.0.") };
  });
  values.nodeRollout = { maxUnavailable: opts.maxUnavailable ?? 2, ...(opts.canary ? { canary: opts.canary } : {}) };
  return validateConfig({ values }, { planOnly: true });
}

const order = (steps: NodeAddressStep[]) => steps.map((s) => `${s.batch}:${s.name}${s.canary ? "*" : ""}`);

describe("lib/plan nodeAddressPlan", () => {
  it("plans nothing when no address changes", () => {
    const plan = planNodeAddresses(config({ changes: [] }));
    assert.deepEqual(plan.steps, []);
    assert.equal(plan.estimate.oursSeconds, 0);
    assert.equal(renderNodeAddressPlan(plan), "");
  });

  it("orders workers first (the first worker alone as the canary, then batches of maxUnavailable), then control-plane nodes one at a time", () => {
    const plan = planNodeAddresses(config({ maxUnavailable: 2 }));
    assert.deepEqual(order(plan.steps), ["0:worker-1*", "1:worker-2", "1:worker-3", "2:worker-4", "2:worker-5", "3:cp-1", "4:cp-2", "5:cp-3"]);
    assert.deepEqual(plan.steps.find((s) => s.name === "worker-3")!.to, "10.1.0.23");
  });

  it("uses maxUnavailable for the worker batches only", () => {
    const plan = planNodeAddresses(config({ maxUnavailable: 10 }));
    assert.deepEqual(order(plan.steps), ["0:worker-1*", "1:worker-2", "1:worker-3", "1:worker-4", "1:worker-5", "2:cp-1", "3:cp-2", "4:cp-3"]);
  });

  it("takes nodeRollout.canary when it changes", () => {
    const plan = planNodeAddresses(config({ maxUnavailable: 3, canary: "worker-4" }));
    assert.deepEqual(order(plan.steps), ["0:worker-4*", "1:worker-1", "1:worker-2", "1:worker-3", "2:worker-5", "3:cp-1", "4:cp-2", "5:cp-3"]);
  });

  it("keeps a control-plane canary alone and first, then workers, then the other control-plane nodes alone", () => {
    const plan = planNodeAddresses(config({ maxUnavailable: 5, canary: "cp-2" }));
    assert.deepEqual(order(plan.steps), ["0:cp-2*", "1:worker-1", "1:worker-2", "1:worker-3", "1:worker-4", "1:worker-5", "2:cp-1", "3:cp-3"]);
  });

  it("makes the first control-plane node the canary when no worker changes", () => {
    const plan = planNodeAddresses(config({ changes: ["cp-3", "cp-1"] }));
    assert.deepEqual(order(plan.steps), ["0:cp-1*", "1:cp-3"]);
  });

  it("refuses a control-plane change on a cluster with exactly 2 control-plane nodes, naming the entry", () => {
    const c = config({ controlPlanes: 2, changes: ["worker-1", "cp-2"] });
    assert.deepEqual(
      nodeAddressRefusals(c).map((p) => p.key),
      ["cidr-migration:nodeAddresses[1].name"],
    );
    assert.throws(
      () => planNodeAddresses(c),
      (err: unknown) => err instanceof ConfigError && err.problems.length === 1 && /cp-2 is one of 2 control-plane nodes/.test(err.problems[0].message) && /quorum/.test(err.problems[0].message),
    );
  });

  it("counts the inventory's control-plane Nodes too", () => {
    const c = config({ controlPlanes: 1, changes: ["cp-1"] });
    assert.deepEqual(nodeAddressRefusals(c), []);
    const inventory: Inventory = {
      serverVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" },
      services: [],
      nodes: [
        { name: "cp-1", internalIPs: ["10.0.0.11"], controlPlane: true, labels: {}, unschedulable: false },
        { name: "cp-9", internalIPs: ["10.0.0.19"], controlPlane: true, labels: {}, unschedulable: false },
      ],
      cni: { detected: "calico", calicoPools: [] },
    };
    assert.deepEqual(nodeAddressRefusals(c, inventory).map((p) => p.key), ["cidr-migration:nodeAddresses[0].name"]);
  });

  it("accepts worker changes on a cluster with 2 control-plane nodes", () => {
    const plan = planNodeAddresses(config({ controlPlanes: 2, changes: ["worker-2", "worker-1"], maxUnavailable: 1 }));
    assert.deepEqual(order(plan.steps), ["0:worker-1*", "1:worker-2"]);
  });

  it("warns when the only control-plane node changes", () => {
    const plan = planNodeAddresses(config({ controlPlanes: 1, changes: ["cp-1"] }));
    assert.match(plan.warnings.join("\n"), /cp-1 is the only control-plane node/);
  });

  it("lists the worker references, and the control-plane ones on top", () => {
    const plan = planNodeAddresses(config({ changes: ["worker-1", "cp-1"] }));
    const worker = plan.steps.find((s) => s.name === "worker-1")!.references.map((r) => r.where);
    assert.deepEqual(worker, ["/var/lib/kubelet/kubeadm-flags.env", "Node worker-1", "/var/lib/cni"]);
    const cp = plan.steps.find((s) => s.name === "cp-1")!.references;
    const text = cp.map((r) => `${r.where}: ${r.what}`).join("\n");
    assert.deepEqual(cp.slice(0, 3).map((r) => r.where), worker.map((w) => w.replace("worker-1", "cp-1")));
    for (const expected of [
      /etcd member cp-1: peer URL https:\/\/10\.0\.0\.11:2380.*client URL https:\/\/10\.0\.0\.11:2379/,
      /etcd\/server\.crt.*etcd\/peer\.crt: SAN 10\.0\.0\.11/,
      /apiserver\.crt: SAN 10\.0\.0\.11/,
      /kube-apiserver\.yaml: --advertise-address 10\.0\.0\.11/,
      /etcd\.yaml: --advertise-client-urls.*--initial-advertise-peer-urls/,
      /\.conf: server: https:\/\/10\.0\.0\.11:6443/,
      /ConfigMap kube-system\/kubeadm-config: .*10\.0\.0\.11/,
    ]) {
      assert.match(text, expected);
    }
  });

  it("lists this stack's own etcd endpoint when it names the old address", () => {
    const plan = planNodeAddresses(config({ changes: ["cp-1", "cp-2"] }));
    const endpointRefs = (name: string) => plan.steps.find((s) => s.name === name)!.references.filter((r) => r.where === "cidr-migration:etcd.endpoints");
    assert.deepEqual(endpointRefs("cp-1").map((r) => r.what), ["https://10.0.0.11:2379: this stack's own etcd endpoint"]);
    assert.deepEqual(endpointRefs("cp-2"), []);
  });

  it("brackets IPv6 addresses in the URLs it lists", () => {
    const refs = planNodeAddresses({ ...config({ changes: [] }), nodeAddresses: [{ name: "cp-1", from: "fd00:1::11", to: "fd00:2::11", role: "control-plane" }] }).steps[0].references;
    assert.ok(refs.some((r) => r.what.includes("https://[fd00:1::11]:2380")), JSON.stringify(refs));
  });

  it("estimates each batch at its slowest node, beside the manual runbook's 2-6 h", () => {
    const plan = planNodeAddresses(config({ maxUnavailable: 2 }));
    // 3 worker batches and 3 control-plane batches
    assert.equal(plan.estimate.oursSeconds, 3 * NODE_ADDRESS_ESTIMATE_SECONDS.worker + 3 * NODE_ADDRESS_ESTIMATE_SECONDS.controlPlane);
    assert.equal(plan.estimate.oursSeconds, 2700);
    assert.deepEqual(plan.estimate.manualMinutes, { min: 120, max: 360 });
    assert.deepEqual(NODE_ADDRESS_MANUAL_MINUTES, { min: 120, max: 360 });
    const text = renderNodeAddressPlan(plan);
    assert.match(text, /Estimate: cidr-migration 45m; manual runbook 2h 0m to 6h 0m/);
    assert.match(text, /batch 0: worker-1 \(worker, canary\) 10\.0\.0\.21 → 10\.1\.0\.21/);
    assert.match(text, /a worker's runs with the node rollout, in its wave, while the node re-registers; a control-plane node's after every other step, one node at a time, keeping its Node and its etcd member/);
  });

  describe("assertNodeAddressBatches", () => {
    const step = (name: string, role: "worker" | "control-plane", batch: number, canary = false): NodeAddressStep => ({
      name,
      role,
      from: "10.0.0.1",
      to: "10.1.0.1",
      batch,
      canary,
      references: [],
      estimateSeconds: 1,
    });
    const refuses = (steps: NodeAddressStep[], pattern: RegExp) => assert.throws(() => assertNodeAddressBatches(steps), (err: unknown) => err instanceof UserError && pattern.test(err.message));

    it("accepts the planner's order", () =>
      assert.doesNotThrow(() => assertNodeAddressBatches([step("w1", "worker", 0, true), step("w2", "worker", 1), step("w3", "worker", 1), step("cp-1", "control-plane", 2)])));
    it("refuses two control-plane nodes in one batch", () =>
      refuses([step("w1", "worker", 0, true), step("cp-1", "control-plane", 1), step("cp-2", "control-plane", 1)], /batch 1 holds control-plane nodes cp-1, cp-2/));
    it("refuses a control-plane node batched with a worker", () => refuses([step("w1", "worker", 0, true), step("cp-1", "control-plane", 1), step("w2", "worker", 1)], /a control-plane node goes alone/));
    it("refuses a control-plane canary with company", () => refuses([step("cp-1", "control-plane", 0, true), step("w1", "worker", 0)], /a control-plane node goes alone/));
    it("refuses a worker canary with company", () => refuses([step("w1", "worker", 0, true), step("w2", "worker", 0)], /the canary goes alone/));
    it("refuses a canary after batch 0", () => refuses([step("w1", "worker", 0), step("w2", "worker", 1, true)], /canary w2 is in batch 1/));
    it("refuses workers after a control-plane node", () => refuses([step("w1", "worker", 0, true), step("cp-1", "control-plane", 1), step("w2", "worker", 2)], /workers w2 after a control-plane node/));
    it("refuses a gap in the batches", () => refuses([step("w1", "worker", 0, true), step("w2", "worker", 2)], /batch 2 follows batch 0/));
    it("refuses a node planned twice", () => refuses([step("w1", "worker", 0, true), step("w1", "worker", 1)], /w1 is planned twice/));
  });
});
