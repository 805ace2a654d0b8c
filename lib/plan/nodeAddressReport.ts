import { NodeAddressPlan } from "./nodeAddressPlan";
import { Plan } from "./planModel";
import { formatDuration, formatDurationRange } from "./planReport";

/** What a run that changes node addresses only leaves alone, and the one thing it changes besides the addresses. */
export function renderAddressRunHeader(plan: Plan): string {
  const workers = plan.nodes.filter((n) => n.action === "move").map((n) => `${n.name} (now ${n.oldPodCIDR ?? "no podCIDR"})`);
  return [
    `Node addresses only: the Service range ${plan.serviceCidr.to} and the Pod range ${plan.podCidr.to} stay; no Service moves.`,
    ...(workers.length > 0 ? [`Each worker whose address changes re-registers, and kube-controller-manager gives it a new subnet of ${plan.podCidr.to}: ${workers.join(", ")}.`] : []),
  ].join("\n") + "\n";
}

/** The node address plan as `cidr-migration plan` prints it: batches in order, each node's references, the estimate. */
export function renderNodeAddressPlan(plan: NodeAddressPlan): string {
  if (plan.steps.length === 0) return "";
  const lines = ["", "Node address changes (nodeAddresses, issue 16) — a worker's runs with the node rollout, in its wave, while the node re-registers; a control-plane node's after every other step, one node at a time, keeping its Node and its etcd member"];
  for (const s of plan.steps) {
    const tag = s.canary ? ", canary" : "";
    lines.push(`  batch ${s.batch}: ${s.name} (${s.role}${tag}) ${s.from} → ${s.to}, ~${formatDuration(s.estimateSeconds)}`);
    for (const r of s.references) lines.push(`      ${r.where}: ${r.what}`);
  }
  const m = plan.estimate.manualMinutes;
  lines.push(`  Estimate: cidr-migration ${formatDuration(plan.estimate.oursSeconds)}; manual runbook ${formatDurationRange(m.min * 60, m.max * 60)}`);
  for (const w of plan.warnings) lines.push(`  Warning: ${w}`);
  return `${lines.join("\n")}\n`;
}
