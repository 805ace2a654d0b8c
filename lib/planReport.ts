import { Plan } from "./planModel";

/** Renders a Plan as the readable report `cidr-migration plan` prints: summary, phases, Service map, node map, warnings. */

export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? ` ${s % 60}s` : ""}`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** A plain-text table: columns padded to the widest cell. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => (c ?? "").padEnd(widths[i])).join("  ").trimEnd();
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

export function renderPlan(plan: Plan): string {
  const moving = plan.services.filter((s) => s.action === "recreate");
  const movingNodes = plan.nodes.filter((n) => n.action === "move");
  const batches = new Set(movingNodes.map((n) => n.batch)).size;
  const manual = plan.estimate.manualMinutes;
  const out: string[] = [];
  out.push("cidr-migration plan");
  out.push("");
  out.push(`Service CIDR  ${plan.serviceCidr.from} -> ${plan.serviceCidr.to}`);
  out.push(`Pod CIDR      ${plan.podCidr.from} -> ${plan.podCidr.to} (node mask /${plan.podCidr.nodeMaskSize})`);
  out.push(`CNI           ${plan.cni}`);
  out.push(`kubernetes    ${plan.kubernetesService.oldClusterIP} -> ${plan.kubernetesService.newClusterIP}`);
  out.push(`DNS           ${plan.dns.namespace}/${plan.dns.name} ${plan.dns.oldClusterIP ?? "(not found)"} -> ${plan.dns.newClusterIP}`);
  out.push(
    `Moves         ${moving.length} of ${plan.services.length} Services, ${movingNodes.length} of ${plan.nodes.length} nodes in ${batches} batches`,
  );
  out.push(`Estimate      ${formatDuration(plan.estimate.oursSeconds)} (manual runbook: ${formatDuration(manual.min * 60)} to ${formatDuration(manual.max * 60)})`);
  out.push("");
  out.push("Phases");
  out.push(
    table(
      ["phase", "steps", "estimate", "manual runbook"],
      plan.phases.map((p) => [
        p.name,
        String(p.steps.length),
        formatDuration(p.estimateSeconds),
        p.manualMinutes.max === 0 ? "-" : p.name === "nodes" ? `${p.manualMinutes.min}-${p.manualMinutes.max} min per node` : `${p.manualMinutes.max} min`,
      ]),
    ),
  );
  out.push("");
  out.push("Services");
  out.push(
    table(
      ["namespace/name", "type", "old IP", "new IP", "action", "reason"],
      plan.services.map((s) => [`${s.namespace}/${s.name}`, s.type, s.oldClusterIP ?? "-", s.newClusterIP ?? "-", s.action, s.reason]),
    ),
  );
  out.push("");
  out.push("Nodes");
  out.push(
    table(
      ["batch", "node", "role", "old podCIDR", "new podCIDR", "action"],
      plan.nodes.map((n) => [n.batch < 0 ? "-" : `${n.batch}${n.canary ? " (canary)" : ""}`, n.name, n.role, n.oldPodCIDR ?? "-", n.newPodCIDR, n.action]),
    ),
  );
  out.push("");
  if (plan.warnings.length === 0) {
    out.push("Warnings: none");
  } else {
    out.push(`Warnings (${plan.warnings.length})`);
    out.push(table(["code", "object", "message"], plan.warnings.map((w) => [w.code, w.object, w.message])));
  }
  return out.join("\n") + "\n";
}
