import { Finding } from "../report/findings";
import { objectLabel, PreflightInput } from "./checkInput";
import { DisruptionBudget } from "./clusterObjects";
import { isMirrorPod } from "./controlPlanePods";

/**
 * Drains: every node is drained before it moves, and this tool never forces a drain. A PodDisruptionBudget that
 * allows no eviction, or a pod no controller would re-create, stops the node rollout halfway, with the control
 * plane already on the new ranges. Better found now.
 */

function isZero(value: number | string | undefined): boolean {
  return value === 0 || value === "0" || value === "0%";
}

/** Why this PDB lets no pod be evicted, or undefined when it allows some. */
function blocksEviction(pdb: DisruptionBudget): string | undefined {
  const spec = pdb.spec ?? {};
  const status = pdb.status;
  // The disruption controller saw no pod under this budget: it protects nothing, so it stops no drain.
  if (status?.expectedPods === 0 && status.currentHealthy === 0) return undefined;
  if (isZero(spec.maxUnavailable)) return `maxUnavailable ${spec.maxUnavailable} never allows an eviction`;
  if (spec.minAvailable === "100%") return "minAvailable 100% never allows an eviction";
  if (status && (status.expectedPods ?? 0) > 0 && status.disruptionsAllowed === 0) {
    return `it allows 0 disruptions now (${status.currentHealthy ?? 0} healthy, ${status.desiredHealthy ?? 0} required, ${status.expectedPods} expected)`;
  }
  return undefined;
}

export function checkDrains(input: PreflightInput): Finding[] {
  const findings: Finding[] = [];
  const timeout = input.config.nodeRollout.drainTimeoutSeconds;
  for (const pdb of input.cluster.podDisruptionBudgets) {
    const why = blocksEviction(pdb);
    if (!why) continue;
    findings.push({
      code: "PDB_BLOCKS_DRAIN",
      severity: "blocker",
      object: objectLabel("PodDisruptionBudget", pdb.metadata),
      message: `a drain of any node running its pods would wait ${timeout} s and fail: ${why}`,
      action: "scale the workload up (or relax the budget) for the migration window, then restore it",
    });
  }
  for (const pod of input.cluster.pods) {
    const phase = pod.status?.phase;
    if (phase === "Succeeded" || phase === "Failed" || isMirrorPod(pod)) continue;
    if ((pod.metadata?.ownerReferences ?? []).some((o) => o.controller)) continue;
    findings.push({
      code: "BARE_POD_BLOCKS_DRAIN",
      severity: "warning",
      object: objectLabel("Pod", pod.metadata),
      message: `no controller re-creates this pod, so a drain of ${pod.spec?.nodeName ? `node ${pod.spec.nodeName}` : "its node"} refuses it (drains are never forced)`,
      action: "run it under a Deployment, StatefulSet or Job, or delete it before the migration",
    });
  }
  return findings;
}
