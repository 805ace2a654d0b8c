import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { action, EXIT_INTERNAL } from "../../../cli/run";
import { validateConfig } from "../../../lib/config/config";
import { UserError } from "../../../lib/config/errors";
import { Inventory } from "../../../lib/plan/inventory";
import { buildPlan } from "../../../lib/plan/plan";
import { assertPlanConsistent, PlanInconsistencyError, planInconsistencies } from "../../../lib/plan/planConsistency";
import { Plan } from "../../../lib/plan/planModel";
import { serviceMovesFromPlan } from "../../../lib/serviceMove/planMoves";
import { readStackFile } from "../../../lib/config/stackFile";

/** lib/plan/planConsistency: the one check that a plan's summary, tables, phases and graph agree, run on every plan built. */

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "plan");

function smallPlan(): Plan {
  const inventory = JSON.parse(readFileSync(path.join(FIXTURES, "inventory-small.json"), "utf8")) as Inventory;
  return buildPlan(validateConfig(readStackFile(path.join(FIXTURES, "stack-small.yaml")), { inventory }), inventory);
}

/** A fresh deep copy to tamper with. */
const copy = (plan: Plan): Plan => JSON.parse(JSON.stringify(plan)) as Plan;
const row = (plan: Plan, name: string) => plan.services.find((s) => s.name === name)!;
const steps = (plan: Plan, phase: string) => plan.phases.find((p) => p.name === phase)!.steps;

describe("lib/plan/planConsistency", () => {
  const good = smallPlan();

  it("finds nothing wrong with a plan the planner built, whose services phase is the graph's bulk moves", () => {
    assert.deepEqual(planInconsistencies(good), []);
    assert.doesNotThrow(() => assertPlanConsistent(good));
    // the check leaves the bulk to this: serviceMovesFromPlan (what index.ts declares) takes the phase's Services
    const graph = serviceMovesFromPlan(good);
    assert.deepEqual(
      Object.entries(graph.moves).map(([key, m]) => `Service ${key}: ${m.fromIP} -> ${m.toIP}`),
      steps(good, "services").filter((s) => s.action === "recreate").map((s) => s.target),
    );
  });

  it("no two objects get one address: two Services, or two nodes", () => {
    const p = copy(good);
    row(p, "legacy").newClusterIP = row(p, "web").newClusterIP;
    steps(p, "services").find((s) => s.id === "services/shop/legacy")!.target = `Service shop/legacy: 10.96.0.20 -> ${row(p, "web").newClusterIP}`;
    assert.deepEqual(planInconsistencies(p), ["Services shop/legacy and shop/web both get 10.116.12.7"]);
    const q = copy(good);
    q.nodes[1].newPodCIDR = q.nodes[0].newPodCIDR;
    q.phases.find((ph) => ph.name === "nodes")!.steps.find((s) => s.id === `nodes/${q.nodes[1].name}`)!.target = `Node ${q.nodes[1].name}: ${q.nodes[1].oldPodCIDR} -> ${q.nodes[0].newPodCIDR}`;
    assert.deepEqual(planInconsistencies(q), [`Nodes ${q.nodes[0].name} and ${q.nodes[1].name} both get ${q.nodes[0].newPodCIDR}`]);
  });

  it("the DNS address is nobody else's (issue 20, defect 1: kube-dns and a missing coredns both at 10.112.0.10)", () => {
    const p = copy(good);
    p.dns = { namespace: "kube-system", name: "coredns", newClusterIP: "10.112.0.10" };
    const dnsSteps = steps(p, "dns");
    for (const s of dnsSteps) s.target = "Service kube-system/coredns: ? -> 10.112.0.10";
    const found = planInconsistencies(p);
    assert.ok(found.includes("the dns phase has dns/temporary-service, dns/final-swap but Service kube-system/coredns does not exist"), found.join("\n"));
    assert.ok(found.some((f) => /step services\/kube-system\/kube-dns re-creates Service kube-system\/kube-dns|Service kube-system\/kube-dns moves but no step moves it/.test(f)), found.join("\n"));
  });

  it("every Service step is a planned move and every planned move has its step", () => {
    const p = copy(good);
    row(p, "web").action = "unchanged";
    row(p, "web").newClusterIP = undefined;
    const found = planInconsistencies(p);
    assert.ok(found.includes('step services/shop/web re-creates Service shop/web, which the plan has as "unchanged"'), found.join("\n"));
    const q = copy(good);
    steps(q, "services").splice(steps(q, "services").findIndex((s) => s.id === "services/shop/legacy"), 1);
    assert.ok(planInconsistencies(q).includes("Service shop/legacy moves but no step moves it"));
  });

  it("the summary equals the tables (issue 20, defect 4: kubernetes 10.200.0.1 in the summary, 10.96.0.1 in the table)", () => {
    const p = copy(good);
    p.kubernetesService.oldClusterIP = "10.200.0.1";
    assert.ok(planInconsistencies(p).includes("the summary says kubernetes 10.200.0.1 -> 10.112.0.1, the table 10.96.0.1 -> 10.112.0.1"));
    const q = copy(good);
    q.dns.newClusterIP = "10.112.0.53";
    assert.ok(planInconsistencies(q).some((f) => f.startsWith("the summary says DNS 10.96.0.10 -> 10.112.0.53, the table 10.96.0.10 -> 10.112.0.10")));
    const r = copy(good);
    r.estimate.oursSeconds += 60;
    assert.deepEqual(planInconsistencies(r), [`the estimate says ${good.estimate.oursSeconds + 60} s, its phases add up to ${good.estimate.oursSeconds} s`]);
  });

  it("steps exist exactly when their object moves (issue 20, defect 2: re-create steps for what stays)", () => {
    const p = copy(good);
    const dns = row(p, "kube-dns");
    dns.action = "unchanged";
    dns.newClusterIP = dns.oldClusterIP;
    p.dns.newClusterIP = dns.oldClusterIP!;
    const found = planInconsistencies(p);
    assert.ok(found.includes('the dns phase has dns/temporary-service, dns/final-swap but Service kube-system/kube-dns is "unchanged"'), found.join("\n"));
    const q = copy(good);
    q.nodes[0].action = "unchanged";
    assert.ok(planInconsistencies(q).some((f) => f.startsWith(`step nodes/${q.nodes[0].name} moves Node ${q.nodes[0].name}, which the plan has as "unchanged"`)));
  });

  it("dependencies exist and never loop", () => {
    const p = copy(good);
    steps(p, "snapshot")[0].dependsOn = ["verify/cluster"];
    assert.deepEqual(planInconsistencies(p), ["step snapshot/etcd waits on itself"]);
    const q = copy(good);
    steps(q, "verify")[0].dependsOn = ["nodes/nowhere"];
    assert.deepEqual(planInconsistencies(q), ["step verify/cluster waits on nodes/nowhere, which is no step"]);
  });

  it("a bulk Service step is checked like any other: named twice, or waited on alone", () => {
    const p = copy(good);
    steps(p, "verify").push({ id: "services/shop/web", action: "verify", target: "cluster", dependsOn: ["verify/cluster"], estimateSeconds: 1 });
    assert.deepEqual(planInconsistencies(p), ["two steps are named services/shop/web"]);
    const q = copy(good);
    steps(q, "verify")[0].dependsOn = ["services/shop/web"];
    assert.deepEqual(planInconsistencies(q), []);
    steps(q, "services").find((s) => s.id === "services/shop/web")!.dependsOn = ["verify/cluster"];
    assert.deepEqual(planInconsistencies(q), ["step services/shop/web waits on itself"]);
  });

  it("addresses that are not canonical IPv4 are compared too", () => {
    const p = copy(good);
    for (const name of ["db-headless", "payments-external"]) row(p, name).oldClusterIP = "fd00::5";
    assert.deepEqual(planInconsistencies(p), ["Services shop/db-headless and shop/payments-external both get fd00::5"]);
  });

  it("fails closed as an internal error (exit 70, one line), never as the user's invalid input", async () => {
    const p = copy(good);
    p.estimate.manualMinutes.max = 1;
    assert.throws(() => assertPlanConsistent(p), (err: Error) => {
      assert.ok(err instanceof PlanInconsistencyError && !(err instanceof UserError));
      assert.match(err.message, /^the plan contradicts itself: the manual runbook says .*; it was not used\. This is a bug in cidr-migration/);
      assert.equal(err.message.split("\n").length, 1);
      return true;
    });
    const written: string[] = [];
    const write = process.stderr.write;
    const before = process.exitCode;
    process.stderr.write = ((chunk: string) => {
      written.push(String(chunk));
      return true;
    }) as typeof process.stderr.write;
    try {
      await action(async () => assertPlanConsistent(p))();
      assert.equal(process.exitCode, EXIT_INTERNAL);
    } finally {
      process.stderr.write = write;
      process.exitCode = before;
    }
    assert.equal(written.length, 1);
    assert.match(written[0], /^cidr-migration: internal error: the plan contradicts itself: /);
  });
});
