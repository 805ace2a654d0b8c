import * as assert from "node:assert/strict";
import { validateConfig } from "../../../lib/config/config";
import { MANY_SERVICES } from "../../../lib/plan/largeServiceMove";
import { buildPlan } from "../../../lib/plan/plan";
import { syntheticConfigValues, syntheticInventory } from "../../../bench/syntheticCluster";

/** At thousands of Services the plan says how long the re-create takes and what the alternative costs. */

function planFor(services: number, edit: (values: Record<string, unknown>) => void = () => {}) {
  const inventory = syntheticInventory(3, services);
  const values = syntheticConfigValues(inventory);
  edit(values);
  return buildPlan(validateConfig({ values }, { inventory }), inventory);
}

describe("the plan on many Services (re-create)", () => {
  it("warns from 2,000 moving Services with the time it takes and the etcd-rewrite alternative", () => {
    const plan = planFor(10_000);
    const moving = plan.services.filter((s) => s.action === "recreate").length;
    assert.ok(moving >= MANY_SERVICES, `${moving} Services move`);
    const warning = plan.warnings.find((w) => w.code === "MANY_SERVICES_RECREATED");
    assert.ok(warning, "the warning is there");
    assert.equal(warning.object, "services.strategy");
    assert.match(warning.message, new RegExp(`^${moving} Services are re-created one by one: about ${Math.round(moving / 37 / 60)} min`));
    assert.match(warning.message, /services\.strategy etcd-rewrite moves them all in one apiserver stop/);
  });

  it("says nothing below 2,000, nor when the rewrite is chosen", () => {
    assert.equal(planFor(500).warnings.filter((w) => w.code === "MANY_SERVICES_RECREATED").length, 0);
    const rewrite = planFor(10_000, (v) => { v.services = { ...(v.services as object), strategy: "etcd-rewrite" }; });
    assert.equal(rewrite.warnings.filter((w) => w.code === "MANY_SERVICES_RECREATED").length, 0);
  });
});
