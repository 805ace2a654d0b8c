import { NodeMove, Plan } from "../plan/planModel";
import { DependencyGraph } from "./dependencyGraph";
import { GateReason } from "./gateReason";
import { isDynamicType, migrationModules } from "./ownership";
import { PreviewStep } from "./previewDigest";
import { stateOf, stringInput } from "./stateValues";
import { parseUrn } from "./urn";

/**
 * The node rollout as the preview declares it, judged against the plan's batches.
 *
 * Rollout resources are those inside a `cidr-migration:nodeRollout:*` component (components/nodeRollout.ts) and
 * the node API steps (dynamic-providers/nodeApiSteps.ts: NodeDrain, CalicoIpamRelease, NodeDeregister, NodeRejoin,
 * with inputs `step`, `node` and, for drain and rejoin, `plannedPodCIDR`). Each belongs to one node: its
 * `node` input when it has one, else the longest plan node name found in its URN name between separators
 * ("nodes-worker-1-drain" → worker-1, never worker-10).
 *
 * Order is read from the dependency graph, not from the position of steps in the preview (that is only one of
 * many orders the engine could take). Node B "waits for" node A when some rollout resource of B depends, directly
 * or through other resources, on a rollout resource of A. The plan's batches require:
 * - each node waits for the nodes of the previous batch (otherwise the two batches could drain together);
 * - no node waits for a node of a later batch (that is the plan's order reversed).
 * Two nodes of one batch waiting for each other is noted, not failed: slower than planned, never less safe.
 * A node the plan does not move, and a planned podCIDR other than the plan's, fail the gate.
 */

export const ROLLOUT_MODULE = "nodeRollout";
const NODE_API_STEP_NAMES = new Set(["drain", "release-calico-ipam", "delete-node", "rejoin"]);
const PODCIDR_INPUTS = ["plannedPodCIDR", "newPodCIDR"] as const;

export interface RolloutResource {
  urn: string;
  node: string;
  op?: string;
  plannedPodCIDR?: string;
}

/** The longest of `names` that appears in `text` with no letter or digit right before or after it. */
export function nodeNameIn(text: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  const alnum = /[A-Za-z0-9]/;
  for (const name of names) {
    if (best && name.length <= best.length) continue;
    for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
      const before = at === 0 ? "" : text[at - 1];
      const after = text[at + name.length] ?? "";
      if (!alnum.test(before) && !alnum.test(after)) {
        best = name;
        break;
      }
    }
  }
  return best;
}

function isRolloutUrn(urn: string): boolean {
  return migrationModules(urn).includes(ROLLOUT_MODULE);
}

function isNodeApiStep(step: PreviewStep): boolean {
  const state = stateOf(step);
  const stepName = stringInput(state, "step");
  return state !== undefined && isDynamicType(state.type) && stepName !== undefined && NODE_API_STEP_NAMES.has(stepName) && typeof state.inputs?.node === "string";
}

/** Rollout resources with a step in the preview, keyed by URN. */
export function rolloutResources(steps: readonly PreviewStep[], nodeNames: readonly string[]): Map<string, RolloutResource> {
  const out = new Map<string, RolloutResource>();
  for (const step of steps) {
    if (!isRolloutUrn(step.urn) && !isNodeApiStep(step)) continue;
    const state = stateOf(step);
    const node = stringInput(state, "node");
    const owner = node !== undefined && node !== "unknown" ? node : nodeNameIn(parseUrn(step.urn)?.name ?? "", nodeNames);
    if (!owner) continue;
    const podCidrKey = PODCIDR_INPUTS.find((key) => state?.inputs?.[key] !== undefined);
    out.set(step.urn, { urn: step.urn, node: owner, op: step.op, plannedPodCIDR: podCidrKey ? stringInput(state, podCidrKey) ?? "unknown" : undefined });
  }
  return out;
}

const DELETING_OPS = new Set(["delete", "delete-replaced", "discard", "discard-replaced", "read", "read-replacement", "refresh"]);

export function judgeNodeOrder(steps: readonly PreviewStep[], plan: Plan): { reasons: GateReason[]; notes: GateReason[] } {
  const reasons: GateReason[] = [];
  const notes: GateReason[] = [];
  const planNames = plan.nodes.map((n) => n.name);
  const resources = rolloutResources(steps, planNames);
  const active = [...resources.values()].filter((r) => !DELETING_OPS.has(r.op ?? ""));
  const moving = new Map<string, NodeMove>(plan.nodes.filter((n) => n.action === "move").map((n) => [n.name, n]));
  const inPreview = new Set(active.map((r) => r.node));

  for (const node of [...inPreview].sort()) {
    if (!moving.has(node)) {
      const entry = plan.nodes.find((n) => n.name === node);
      const why = entry ? "the plan keeps its subnet (it already lies in the new range)" : "the plan has no such node";
      reasons.push({ code: "NODE_MOVE_NOT_IN_PLAN", object: `Node ${node}`, message: `the preview rolls this node, but ${why}; re-plan from the live cluster or fix the program` });
    }
  }
  const subnetSeen = new Set<string>();
  for (const r of active) {
    const entry = moving.get(r.node);
    if (!entry || r.plannedPodCIDR === undefined) continue;
    // a dual-stack node's subnets, as the rollout carries them: comma-separated, primary family first
    const planned = entry.newPodCIDRs?.join(",") ?? entry.newPodCIDR;
    // Several steps of one node carry the subnet (drain, rejoin): one reason per node and value.
    if (subnetSeen.has(`${r.node} ${r.plannedPodCIDR}`)) continue;
    subnetSeen.add(`${r.node} ${r.plannedPodCIDR}`);
    if (r.plannedPodCIDR === "unknown") {
      reasons.push({ code: "NODE_SUBNET_UNKNOWN", object: r.urn, message: `the podCIDR for node ${r.node} is unknown at preview time; the plan says ${planned}, which the gate cannot prove` });
    } else if (r.plannedPodCIDR !== planned) {
      reasons.push({ code: "NODE_SUBNET_DIFFERS", object: `Node ${r.node}`, message: `the preview gives it ${r.plannedPodCIDR}, the plan ${planned}; re-plan or fix the program so both agree` });
    }
  }

  const absent = [...moving.keys()].filter((n) => !inPreview.has(n));
  if (absent.length > 0) {
    notes.push({ code: "PLANNED_NODE_MOVES_NOT_IN_PREVIEW", object: "preview", message: `${absent.length} planned node move(s) have no rollout step in the preview (done already, or hidden without --show-sames): ${absent.join(", ")}` });
  }

  // waitsFor(B) = nodes whose rollout resources some rollout resource of B depends on.
  const graph = new DependencyGraph(steps);
  const rolloutNodeOf = (urn: string): string | undefined => resources.get(urn)?.node ?? (isRolloutUrn(urn) ? nodeNameIn(parseUrn(urn)?.name ?? "", planNames) : undefined);
  const waitsFor = new Map<string, Set<string>>();
  for (const r of active) {
    const set = waitsFor.get(r.node) ?? new Set<string>();
    for (const urn of graph.ancestors(r.urn)) {
      const other = rolloutNodeOf(urn);
      if (other && other !== r.node) set.add(other);
    }
    waitsFor.set(r.node, set);
  }

  const batchesInPreview = [...new Set([...inPreview].filter((n) => moving.has(n)).map((n) => moving.get(n)!.batch))].sort((a, b) => a - b);
  for (const node of [...inPreview].filter((n) => moving.has(n)).sort()) {
    const batch = moving.get(node)!.batch;
    const waits = waitsFor.get(node) ?? new Set<string>();
    const previousBatch = batchesInPreview.filter((b) => b < batch).pop();
    if (previousBatch !== undefined) {
      const previous = [...inPreview].filter((n) => moving.get(n)?.batch === previousBatch).sort();
      const notWaited = previous.filter((n) => !waits.has(n));
      if (notWaited.length > 0) {
        reasons.push({
          code: "NODE_ORDER_DIFFERS",
          object: `Node ${node}`,
          message: `planned in batch ${batch}, but its rollout does not wait for ${notWaited.join(", ")} (batch ${previousBatch}); they could be drained at the same time`,
        });
      }
    }
    const later = [...waits].filter((n) => (moving.get(n)?.batch ?? -1) > batch).sort();
    if (later.length > 0) {
      reasons.push({
        code: "NODE_ORDER_DIFFERS",
        object: `Node ${node}`,
        message: `planned in batch ${batch}, but its rollout waits for ${later.map((n) => `${n} (batch ${moving.get(n)!.batch})`).join(", ")}: the plan's order reversed`,
      });
    }
    const sameBatch = [...waits].filter((n) => n !== node && moving.get(n)?.batch === batch).sort();
    if (sameBatch.length > 0) {
      notes.push({ code: "NODE_BATCH_SERIALIZED", object: `Node ${node}`, message: `waits for ${sameBatch.join(", ")} of its own batch ${batch}: slower than planned, not less safe` });
    }
  }
  return { reasons, notes };
}
