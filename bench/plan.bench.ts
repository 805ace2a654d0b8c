import { performance } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import { validateConfig } from "../lib/config/config";
import { Inventory } from "../lib/plan/inventory";
import { buildPlan } from "../lib/plan/plan";
import { syntheticConfigValues, syntheticInventory } from "./syntheticCluster";

/**
 * `npm run bench:plan`: validation + plan time for 5,000 nodes and 50,000 Services, and for ten times that, with the
 * Services in two orders: as discovery returns them (the apiserver lists in etcd key order, namespace/name) and
 * interleaved across namespaces (the planner must sort). Prints figures only; the targets (under 2 s, at most 12x
 * for 10x) are for the reader, never asserted. npm runs it with an 8 GB heap and --expose-gc: each run starts from a
 * clean heap, so one run's garbage does not bill the next.
 */

type Order = "api" | "interleaved";

const collectGarbage = (globalThis as { gc?: () => void }).gc ?? (() => {});

function inApiOrder(inventory: Inventory): Inventory {
  const key = (s: { namespace: string; name: string }) => `${s.namespace}/${s.name}`;
  return { ...inventory, services: [...inventory.services].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)) };
}

function measure(nodes: number, services: number, order: Order): { validateMs: number; planMs: number; moves: number } {
  const generated = syntheticInventory(nodes, services);
  const inventory = order === "api" ? inApiOrder(generated) : generated;
  const values = syntheticConfigValues(inventory);
  collectGarbage();
  const t0 = performance.now();
  const config = validateConfig({ values }, { inventory });
  const t1 = performance.now();
  const plan = buildPlan(config, inventory);
  const t2 = performance.now();
  return { validateMs: t1 - t0, planMs: t2 - t1, moves: plan.services.filter((s) => s.action === "recreate").length };
}

const total = (r: { validateMs: number; planMs: number }) => r.validateMs + r.planMs;

function best(runs: number, nodes: number, services: number, order: Order) {
  return Array.from({ length: runs }, () => measure(nodes, services, order)).reduce((a, b) => (total(a) <= total(b) ? a : b));
}

const row = (label: string, r: ReturnType<typeof measure>) =>
  `  ${label.padEnd(32)} validate ${r.validateMs.toFixed(0).padStart(5)} ms   plan ${r.planMs.toFixed(0).padStart(5)} ms   total ${total(r).toFixed(0).padStart(5)} ms   (${r.moves} Service moves)`;

measure(500, 5000, "interleaved"); // warm up the JIT
console.log(`bench:plan (best of runs, wall clock, heap limit ${Math.round(getHeapStatistics().heap_size_limit / 1048576)} MB)`);
for (const order of ["api", "interleaved"] as const) {
  const base = best(5, 5_000, 50_000, order);
  const tenfold = best(3, 50_000, 500_000, order);
  console.log(order === "api" ? "Services in the order discovery returns them (namespace/name):" : "Services interleaved across namespaces (the planner sorts):");
  console.log(row("5,000 nodes / 50,000 Services", base));
  console.log(row("50,000 nodes / 500,000 Services", tenfold));
  console.log(`  ratio for 10x the inventory: ${(total(tenfold) / total(base)).toFixed(2)}x (target <= 12x); 1x total ${(total(base) / 1000).toFixed(2)} s (target < 2 s)`);
}
