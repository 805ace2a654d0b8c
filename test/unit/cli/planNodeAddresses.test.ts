import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { NodeAddressPlan } from "../../../lib/plan/nodeAddressPlan";
import { Plan } from "../../../lib/plan/planModel";
import { parse, stringify } from "yaml";
import { parsePlanDocument } from "../../../lib/gate/planDocument";
import { REPO, runCli } from "../../support/cli";

/** `cidr-migration plan` shows node address changes (issue 16), which every other command refuses before any change. */

const FIXTURES = path.join(REPO, "test", "fixtures", "plan");
const NODE_ADDRESSES = `  cidr-migration:nodeAddresses:
    - { name: worker-1, from: 192.168.10.21, to: 192.168.20.21 }
    - { name: cp-2, from: 192.168.10.12, to: 192.168.20.12 }
    - { name: worker-3, from: 192.168.10.23, to: 192.168.20.23 }
`;

describe("cidr-migration plan (CLI): node address changes", function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "plan-node-addresses-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("prints the node address plan after the CIDR plan, in text and as JSON", async () => {
    const stack = path.join(dir, "Pulumi.na.yaml");
    writeFileSync(stack, readFileSync(path.join(FIXTURES, "stack-small.yaml"), "utf8") + NODE_ADDRESSES);
    const inv = path.join(FIXTURES, "inventory-small.json");
    const [text, json] = await Promise.all([runCli(["plan", "--config", stack, "--inventory", inv]), runCli(["plan", "--config", stack, "--inventory", inv, "--json"])]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Node address changes \(nodeAddresses, issue 16\) — a worker's runs with the node rollout/);
    const batches = text.stdout.split("\n").filter((l) => /^ {2}batch \d+:/.test(l)).map((l) => l.trim().split(" (")[0]);
    assert.deepEqual(batches, ["batch 0: worker-1", "batch 1: worker-3", "batch 2: cp-2"]);
    assert.match(text.stdout, /Estimate: cidr-migration 20m; manual runbook 2h 0m to 6h 0m/);
    assert.equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout) as Plan & { nodeAddressPlan: NodeAddressPlan };
    assert.deepEqual(doc.nodeAddressPlan.steps.map((s) => [s.name, s.batch, s.from, s.to]), [
      ["worker-1", 0, "192.168.10.21", "192.168.20.21"],
      ["worker-3", 1, "192.168.10.23", "192.168.20.23"],
      ["cp-2", 2, "192.168.10.12", "192.168.20.12"],
    ]);
    assert.ok(doc.phases.length > 0);
  });

  it("platform openshift: prints only the oc runbook, marked as not executed, and no CIDR plan", async () => {
    const stack = path.join(dir, "Pulumi.os.yaml");
    writeFileSync(stack, readFileSync(path.join(FIXTURES, "stack-small.yaml"), "utf8") + "  cidr-migration:platform: openshift\n" + NODE_ADDRESSES);
    const inv = path.join(FIXTURES, "inventory-small.json");
    const [text, json] = await Promise.all([runCli(["plan", "--config", stack, "--inventory", inv]), runCli(["plan", "--config", stack, "--inventory", inv, "--json"])]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^OpenShift node address runbook \(platform: openshift, nodeAddresses\) — PLANNED ONLY: cidr-migration does not execute it/);
    assert.match(text.stdout, /oc adm drain worker-1 /);
    assert.match(text.stdout, /Machine API/);
    assert.doesNotMatch(text.stdout, /Service IP|Phase/i, "no CIDR plan");
    assert.equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout) as { platform: string; executes: boolean; openShiftRunbook: { sections: Array<{ title: string }> }; phases?: unknown };
    assert.equal(doc.platform, "openshift");
    assert.equal(doc.executes, false);
    assert.equal(doc.phases, undefined);
    assert.deepEqual(doc.openShiftRunbook.sections.map((s) => s.title.split(" (")[0]), ["Before the first node", "batch 0: worker-1", "batch 1: worker-3", "batch 2: cp-2", "After the last node"]);
  });

  it("nodeAddresses alone: the address plan is the whole run, saying what stays, in text; its JSON is a plan gate reads", async () => {
    const stack = path.join(dir, "Pulumi.only.yaml");
    const doc = parse(readFileSync(path.join(FIXTURES, "stack-small.yaml"), "utf8")) as { config: Record<string, unknown> };
    for (const key of ["serviceCidr", "podCidr", "services"]) delete doc.config[`cidr-migration:${key}`];
    writeFileSync(stack, stringify(doc) + NODE_ADDRESSES);
    const inv = path.join(FIXTURES, "inventory-small.json");
    const [text, json] = await Promise.all([runCli(["plan", "--config", stack, "--inventory", inv]), runCli(["plan", "--config", stack, "--inventory", inv, "--json"])]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Node addresses only: the Service range 10\.96\.0\.0\/12 and the Pod range 10\.244\.0\.0\/16 stay; no Service moves\./);
    assert.match(text.stdout, /kube-controller-manager gives it a new subnet of 10\.244\.0\.0\/16: worker-1 \(now 10\.244\.2\.0\/24\), worker-3 \(now 10\.244\.4\.0\/24\)\./);
    assert.doesNotMatch(text.stdout, /Service IP|Phase/i, "no CIDR plan");
    const batches = text.stdout.split("\n").filter((l) => /^ {2}batch \d+:/.test(l)).map((l) => l.trim().split(" (")[0]);
    assert.deepEqual(batches, ["batch 0: worker-1", "batch 1: worker-3", "batch 2: cp-2"]);
    assert.equal(json.code, 0, json.stderr);
    const plan = JSON.parse(json.stdout) as Plan & { nodeAddressPlan: NodeAddressPlan };
    assert.deepEqual(plan.services, []);
    assert.deepEqual(plan.phases.map((p) => p.name), ["preflight", "snapshot", "nodes", "verify"]);
    assert.deepEqual(plan.nodeAddressPlan.steps.map((s) => s.name), ["worker-1", "worker-3", "cp-2"]);
    assert.deepEqual(parsePlanDocument(json.stdout, "plan.json").nodes.map((n) => n.name), ["worker-1", "worker-3"]);
  });
});
