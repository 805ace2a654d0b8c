import { NodeAddressPlan } from "./nodeAddressPlan";
import { OpenShiftRunbook } from "./openShiftRunbook";
import { formatDurationRange } from "./planReport";

/** The OpenShift runbook as `cidr-migration plan` prints it for a `platform: openshift` stack. */
export function renderOpenShiftRunbook(plan: NodeAddressPlan, runbook: OpenShiftRunbook): string {
  if (plan.steps.length === 0) return "OpenShift (platform: openshift): nodeAddresses lists no node, so there is nothing to plan. cidr-migration plans node address changes only on OpenShift, and runs nothing there.\n";
  const lines = ["OpenShift node address runbook (platform: openshift, nodeAddresses) — PLANNED ONLY: cidr-migration does not execute it; run each step by hand"];
  for (const w of runbook.warnings) lines.push(`  Warning: ${w}`);
  for (const section of runbook.sections) {
    lines.push("", `  ${section.title}`);
    for (const c of section.commands) lines.push(`      ${c}`);
  }
  const m = plan.estimate.manualMinutes;
  lines.push("", `  Estimate: the published manual runbook's ${formatDurationRange(m.min * 60, m.max * 60)}; cidr-migration runs none of it on OpenShift`);
  for (const w of plan.warnings) lines.push(`  Warning: ${w}`);
  return `${lines.join("\n")}\n`;
}
