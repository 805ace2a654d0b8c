/**
 * The order of the node rollout, read from the plan's node moves: one wave per plan batch, run one after another.
 *
 * The planner puts the canary alone in batch 0, each control-plane node alone in its own batch (etcd keeps its
 * quorum when one member at a time is away) and the workers in batches of nodeRollout.maxUnavailable. The waves
 * re-check those rules, because a plan that breaks them must not reach the cluster: a wave with the canary or a
 * control-plane node and anything else, or batches out of order, is refused with one line naming the nodes.
 *
 * `rolloutEstimate` reports the plan's estimate per node and for the rollout (the nodes of one wave move together,
 * so a wave costs its slowest node) beside the manual runbook's 5 to 8 minutes per node, one node after another.
 */
import { UserError } from "../config/errors";
import { NodeMove } from "../plan/planModel";

export interface RolloutWave {
  index: number;
  nodes: NodeMove[];
  canary: boolean;
  controlPlane: boolean;
}

export function rolloutWaves(moves: readonly NodeMove[]): RolloutWave[] {
  const moving = moves.filter((m) => m.action === "move");
  const batches = new Map<number, NodeMove[]>();
  for (const m of moving) {
    if (!Number.isInteger(m.batch) || m.batch < 0) throw new UserError(`node move ${m.name}: batch ${m.batch} is not a wave number (0, 1, ...); re-run the planner`);
    batches.set(m.batch, [...(batches.get(m.batch) ?? []), m]);
  }
  const order = [...batches.keys()].sort((a, b) => a - b);
  const waves = order.map((batch, index) => {
    const nodes = batches.get(batch)!;
    const canary = nodes.some((n) => n.canary);
    const controlPlane = nodes.some((n) => n.role === "control-plane");
    if ((canary || controlPlane) && nodes.length > 1) {
      const why = canary ? "the canary goes alone" : "control-plane nodes go one at a time (etcd quorum)";
      throw new UserError(`node rollout batch ${batch} holds ${nodes.map((n) => n.name).join(", ")}: ${why}; re-run the planner`);
    }
    return { index, nodes, canary, controlPlane };
  });
  const canaryWave = waves.findIndex((w) => w.canary);
  if (canaryWave > 0) throw new UserError(`node rollout: the canary ${waves[canaryWave].nodes[0].name} is in wave ${canaryWave}, it must be first; re-run the planner`);
  const names = new Set<string>();
  for (const m of moving) {
    if (names.has(m.name)) throw new UserError(`node rollout: node ${m.name} is planned twice; re-run the planner`);
    names.add(m.name);
  }
  return waves;
}

export interface RolloutEstimate {
  perNode: Array<{ node: string; wave: number; seconds: number }>;
  totalSeconds: number;
  nodes: number;
  /** The manual runbook: 5 to 8 minutes per node, serially. */
  manualMinutes: { min: number; max: number };
  summary: string;
}

export const MANUAL_MINUTES_PER_NODE = { min: 5, max: 8 } as const;

/** `secondsFor(node)` is the plan's estimate of one node's move (the "nodes/<name>" step). */
export function rolloutEstimate(waves: readonly RolloutWave[], secondsFor: (node: string) => number, manualPerNode: { min: number; max: number } = MANUAL_MINUTES_PER_NODE): RolloutEstimate {
  const perNode = waves.flatMap((w) => w.nodes.map((n) => ({ node: n.name, wave: w.index, seconds: secondsFor(n.name) })));
  const totalSeconds = waves.reduce((sum, w) => sum + Math.max(0, ...perNode.filter((p) => p.wave === w.index).map((p) => p.seconds)), 0);
  const nodes = perNode.length;
  const manualMinutes = { min: manualPerNode.min * nodes, max: manualPerNode.max * nodes };
  const minutes = (s: number) => `${Math.round((s / 60) * 10) / 10} min`;
  const summary = `node rollout: ${nodes} node(s) in ${waves.length} wave(s), estimated ${minutes(totalSeconds)} (${perNode.map((p) => `${p.node} ${minutes(p.seconds)}`).join(", ") || "none"}); the manual runbook takes ${manualMinutes.min}-${manualMinutes.max} min (${manualPerNode.min}-${manualPerNode.max} min per node, one after another)`;
  return { perNode, totalSeconds, nodes, manualMinutes, summary };
}
