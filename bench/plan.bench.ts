import { performance } from "node:perf_hooks";
import { validateConfig } from "../lib/config";
import { buildPlan } from "../lib/plan";
import { syntheticConfigValues, syntheticInventory } from "./syntheticCluster";

/**
 * `npm run bench:plan`: plan time for 5,000 nodes and 50,000 Services, and for ten times that.
 * Prints figures only; the targets (under 2 s, at most 12x for 10x) are for the reader, never asserted.
 * npm runs it with an 8 GB heap: at 500,000 Services the default heap spends most of its time collecting garbage,
 * which measures V8's heap limit rather than the planner.
 */

/** Exposed by `--expose-gc` (npm run bench:plan): each run starts from a clean heap, not the last run's garbage. */
const collectGarbage = (globalThis as { gc?: () => void }).gc ?? (() => {});

function measure(nodes: number, services: number): { validateMs: number; planMs: number; moves: number } {
  const inventory = syntheticInventory(nodes, services);
  const values = syntheticConfigValues(inventory);
  collectGarbage();
  const t0 = performance.now();
  const config = validateConfig({ values }, { inventory });
  const t1 = performance.now();
  const plan = buildPlan(config, inventory);
  const t2 = performance.now();
  return { validateMs: t1 - t0, planMs: t2 - t1, moves: plan.services.filter((s) => s.action === "recreate").length };
}

function best(runs: number, nodes: number, services: number) {
  const results = Array.from({ length: runs }, () => measure(nodes, services));
  return results.reduce((a, b) => (a.planMs + a.validateMs <= b.planMs + b.validateMs ? a : b));
}

measure(500, 5000); // warm up the JIT
const base = best(5, 5_000, 50_000);
const tenfold = best(3, 50_000, 500_000);
const total = (r: { validateMs: number; planMs: number }) => r.validateMs + r.planMs;
const row = (label: string, r: ReturnType<typeof measure>) =>
  `${label.padEnd(34)} validate ${r.validateMs.toFixed(0).padStart(6)} ms   plan ${r.planMs.toFixed(0).padStart(6)} ms   total ${total(r).toFixed(0).padStart(6)} ms   (${r.moves} Service moves)`;
const heapMb = Math.round(require("node:v8").getHeapStatistics().heap_size_limit / 1048576);
console.log(`bench:plan (best of runs, wall clock, heap limit ${heapMb} MB)`);
console.log(row("5,000 nodes / 50,000 Services", base));
console.log(row("50,000 nodes / 500,000 Services", tenfold));
console.log(`ratio for 10x the inventory: ${(total(tenfold) / total(base)).toFixed(2)}x (target <= 12x); 1x total ${(total(base) / 1000).toFixed(2)} s (target < 2 s)`);
