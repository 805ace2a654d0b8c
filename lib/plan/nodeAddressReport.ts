import { NodeAddressPlan } from "./nodeAddressPlan";
import { formatDuration, formatDurationRange } from "./planReport";

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
