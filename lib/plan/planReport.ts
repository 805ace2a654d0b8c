import { cniSummary } from "./calicoPools";
import { familyOf } from "../net/cidr";
import { Plan } from "./planModel";
import { renderTable, TextColumn, wrapWithPrefix } from "../report/textTable";

/** Renders a Plan as the readable report `cidr-migration plan` prints: summary, phases, Service map, node map, warnings. */

export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${s % 60 ? ` ${s % 60}s` : ""}`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** "2h 30m to 2h 42m", or one duration when both ends are the same. */
export function formatDurationRange(minSeconds: number, maxSeconds: number): string {
  const [min, max] = [formatDuration(minSeconds), formatDuration(maxSeconds)];
  return min === max ? max : `${min} to ${max}`;
}

/** A plain-text table: columns padded to the widest cell; within `width` when given (see lib/report/textTable). */
export function table(headers: Array<string | TextColumn>, rows: string[][], width?: number): string {
  return renderTable(headers.map((h) => (typeof h === "string" ? { header: h } : h)), rows, width);
}

export interface RenderOptions {
  /** The terminal's width: tables wrap or move columns under their rows to fit; undefined means no limit. */
  width?: number;
}

export function renderPlan(plan: Plan, opts: RenderOptions = {}): string {
  const width = opts.width;
  const moving = plan.services.filter((s) => s.action === "recreate");
  const movingNodes = plan.nodes.filter((n) => n.action === "move");
  const batches = new Set(movingNodes.map((n) => n.batch)).size;
  const manual = plan.estimate.manualMinutes;
  const out: string[] = [];
  out.push("cidr-migration plan");
  out.push("");
  const second = plan.secondFamily;
  if (!second) {
    out.push(`Service CIDR  ${plan.serviceCidr.from} -> ${plan.serviceCidr.to}`);
    out.push(`Pod CIDR      ${plan.podCidr.from} -> ${plan.podCidr.to} (node mask /${plan.podCidr.nodeMaskSize})`);
  } else {
    // one line per family: the primary family first, as the flags list them
    const primary = familyOf(plan.serviceCidr.to);
    const unchanged = (from: string, to: string) => (from === to ? `${to} (kept)` : `${from} -> ${to}`);
    const added = (from: string | undefined, to: string) => (from === undefined ? `${to} (added)` : `${from} -> ${to}`);
    out.push(`Service CIDR  ${primary}: ${unchanged(plan.serviceCidr.from, plan.serviceCidr.to)}`);
    out.push(`              ${second.family}: ${added(second.serviceCidr.from, second.serviceCidr.to)}`);
    out.push(`Pod CIDR      ${primary}: ${unchanged(plan.podCidr.from, plan.podCidr.to)} (node mask /${plan.podCidr.nodeMaskSize})`);
    out.push(`              ${second.family}: ${added(second.podCidr.from, second.podCidr.to)} (node mask /${second.podCidr.nodeMaskSize})`);
  }
  out.push(`CNI           ${cniSummary(plan)}`);
  if (plan.calicoPools) out.push(`Calico pools  ${plan.calicoPools.reason}`);
  out.push(`kubernetes    ${plan.kubernetesService.oldClusterIP} -> ${plan.kubernetesService.newClusterIP}`);
  out.push(`DNS           ${plan.dns.namespace}/${plan.dns.name} ${plan.dns.oldClusterIP ?? "(not found)"} -> ${plan.dns.newClusterIP}`);
  out.push(
    `Moves         ${moving.length} of ${plan.services.length} Services, ${movingNodes.length} of ${plan.nodes.length} nodes in ${batches} batches`,
  );
  out.push(`Estimate      ${formatDuration(plan.estimate.oursSeconds)} (manual runbook: ${formatDurationRange(manual.min * 60, manual.max * 60)})`);
  // The summary lines wrap under their value, past the 14-column label.
  out.splice(2, out.length - 2, ...out.slice(2).flatMap((l) => wrapWithPrefix(l.slice(0, 14), l.slice(14), width)));
  out.push("");
  out.push("Phases");
  out.push(
    table(
      ["phase", "steps", "estimate", { header: "manual runbook", wrap: true, min: 14 }],
      plan.phases.map((p) => [
        p.name,
        String(p.steps.length),
        formatDuration(p.estimateSeconds),
        p.manualMinutes.max === 0 ? "-" : p.name === "nodes" ? `${p.manualMinutes.min}-${p.manualMinutes.max} min per node` : `${p.manualMinutes.max} min`,
      ]),
      width,
    ),
  );
  out.push("");
  out.push("Services");
  out.push(
    table(
      [
        { header: "namespace/name", wrap: true, min: 20 },
        { header: "type", detail: 2 },
        "old IP",
        "new IP",
        "action",
        { header: "reason", wrap: true, min: 20, detail: 1 },
      ],
      // a dual-stack Service lists both of its ClusterIPs, in its own family order
      plan.services.map((s) => [`${s.namespace}/${s.name}`, s.type, s.oldClusterIPs?.join(", ") ?? s.oldClusterIP ?? "-", s.newClusterIPs?.join(", ") ?? s.newClusterIP ?? "-", s.inPlace ? "in place" : s.action, s.reason]),
      width,
    ),
  );
  out.push("");
  out.push("Nodes");
  out.push(
    table(
      [{ header: "batch", wrap: true, min: 5 }, { header: "node", wrap: true, min: 12 }, { header: "role", detail: 1 }, "old podCIDR", "new podCIDR", "action"],
      plan.nodes.map((n) => [n.batch < 0 ? "-" : `${n.batch}${n.canary ? " (canary)" : ""}`, n.name, n.role, (n.oldPodCIDRs?.join(", ") || n.oldPodCIDR) ?? "-", n.newPodCIDRs?.join(", ") ?? n.newPodCIDR, n.action]),
      width,
    ),
  );
  out.push("");
  if (plan.warnings.length === 0) {
    out.push("Warnings: none");
  } else {
    out.push(`Warnings (${plan.warnings.length})`);
    out.push(
      table(
        [{ header: "code", wrap: true, min: 12 }, { header: "object", wrap: true, min: 16 }, { header: "message", wrap: true, min: 20, detail: 1 }],
        plan.warnings.map((w) => [w.code, w.object, w.message]),
        width,
      ),
    );
  }
  return out.join("\n") + "\n";
}
