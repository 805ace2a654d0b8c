// components/planOrder: the check that the graph index.ts declares carries out every plan step in the plan's order.
import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { PlanOrder } from "../../../components/planOrder";
import { Plan, PlanStep } from "../../../lib/plan/planModel";
import { captureGraph } from "../../support/pulumiMocks";

/** A plan of one phase whose steps wait as given: [id, dependsOn]. */
function planOf(steps: Array<[string, string[]]>): Plan {
  const planSteps: PlanStep[] = steps.map(([id, dependsOn]) => ({ id, action: "a", target: "t", dependsOn, estimateSeconds: 1 }));
  return { phases: [{ name: "services", steps: planSteps, estimateSeconds: 0, manualMinutes: { min: 0, max: 0 } }] } as unknown as Plan;
}

const resource = (name: string) => (o: { dependsOn: pulumi.Resource[] }) => new pulumi.ComponentResource("test:index:Step", name, {}, o);

async function disagreementsOf(build: (order: PlanOrder) => void, plan: Plan): Promise<string[]> {
  let found: string[] = [];
  await captureGraph(() => {
    const order = new PlanOrder(plan);
    build(order);
    found = order.disagreements();
  }, { preview: true });
  return found;
}

describe("components/planOrder PlanOrder", () => {
  const plan = planOf([["a", []], ["b", ["a"]], ["c", ["b"]]]);

  it("agrees with a graph that waits as the plan does, directly or through a resource the plan has no step for", async () => {
    assert.deepEqual(await disagreementsOf((order) => {
      const a = order.declare("A", ["a"], [], resource("A"));
      const between = order.declare("between", [], [a], resource("between"));
      const b = order.declare("B", ["b"], [between], resource("B"));
      order.declare("C", ["c"], [b], resource("C"));
    }, plan), []);
  });

  it("names the resource that does not wait for its plan predecessor, and a step no resource carries out", async () => {
    assert.deepEqual(await disagreementsOf((order) => {
      const a = order.declare("A", ["a"], [], resource("A"));
      order.declare("B", ["b"], [], resource("B"));
      void a;
    }, plan), ["B (plan step b) does not wait for A (plan step a)", "plan step c has no resource in the graph"]);
  });

  it("a skipped step passes its own prerequisites on: what waits for it must wait for those", async () => {
    assert.deepEqual(await disagreementsOf((order) => {
      order.declare("A", ["a"], [], resource("A"));
      order.skip(["b"], "done already");
      order.declare("C", ["c"], [], resource("C"));
    }, plan), ["C (plan step c) does not wait for A (plan step a)"]);
    assert.deepEqual(await disagreementsOf((order) => {
      const a = order.declare("A", ["a"], [], resource("A"));
      order.skip(["b"], "done already");
      order.declare("C", ["c"], [a], resource("C"));
    }, plan), []);
  });

  it("waiting for a component's last children counts as waiting for the component (finishedBy)", async () => {
    assert.deepEqual(await disagreementsOf((order) => {
      order.declare("A", ["a"], [], resource("A"));
      const b = order.declare("B", ["b"], [], (o) => new pulumi.ComponentResource("test:index:Step", "B", {}, o));
      const last = new pulumi.ComponentResource("test:index:Last", "B-last", {}, { parent: b });
      order.finishedBy(b, [last]);
      order.declare("C", ["c"], [last], resource("C"));
    }, plan), ["B (plan step b) does not wait for A (plan step a)"]);
  });

  it("refuses one step carried out by two resources", async () => {
    await assert.rejects(disagreementsOf((order) => {
      order.declare("A", ["a"], [], resource("A"));
      order.declare("A2", ["a"], [], resource("A2"));
    }, plan), /plan step a is carried out by both A and A2/);
  });
});
