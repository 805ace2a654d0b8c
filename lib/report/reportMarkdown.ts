import { cniSummary } from "../plan/calicoPools";
import { FindingReport } from "./findings";
import { formatDuration, formatDurationRange } from "../plan/planReport";
import { mdCell, mdCode, mdTable } from "./markdownTable";
import { phaseTimeline } from "./phaseTimeline";
import { ReportInput } from "./reportInput";

/**
 * The same report as markdown, for a change ticket or a wiki: summary, the timeline as a table with text bars on
 * one scale (ours and the manual runbook's), the Service IP map, the node map, plan warnings, preflight findings
 * and verify results. Plan steps are left to the HTML report and `cidr-migration plan`.
 */

const BAR_WIDTH = 40;

function bar(seconds: number, scale: number): string {
  if (seconds <= 0) return "";
  return "█".repeat(Math.max(1, Math.round((seconds / scale) * BAR_WIDTH)));
}

function barCell(seconds: number, scale: number): string {
  const text = bar(seconds, scale);
  return text ? mdCode(text) : "";
}

function manualText(minSeconds: number, maxSeconds: number): string {
  if (maxSeconds === 0) return "-";
  return minSeconds === maxSeconds ? formatDuration(maxSeconds) : `${formatDuration(minSeconds)} to ${formatDuration(maxSeconds)}`;
}

function findings(title: string, report: FindingReport | undefined, missing: string): string[] {
  const out = [`## ${title}`, ""];
  if (!report) return [...out, `_${missing}_`, ""];
  const { blocker, warning, info } = report.summary;
  out.push(`${blocker} blocker(s), ${warning} warning(s), ${info} info: ${report.exitCode === 0 ? "clean" : "needs attention"} (exit ${report.exitCode}).`, "");
  if (report.findings.length > 0) {
    out.push(
      mdTable(
        ["severity", "code", "object", "where", "finding", "what to do"],
        report.findings.map((f) => [f.severity.toUpperCase(), mdCode(f.code), mdCell(f.object), mdCell(f.path ?? "-"), mdCell(f.message), mdCell(f.action)]),
      ),
      "",
    );
  }
  return out;
}

export function renderReportMarkdown(input: ReportInput): string {
  const { plan } = input;
  const timeline = phaseTimeline(plan);
  const scale = Math.max(timeline.oursTotalSeconds, timeline.manualTotalMaxSeconds, 1);
  const moving = plan.services.filter((s) => s.action === "recreate");
  const movingNodes = plan.nodes.filter((n) => n.action === "move");
  const batches = new Set(movingNodes.map((n) => n.batch)).size;
  const out: string[] = [];
  out.push("# CIDR migration report", "");
  out.push(`Plan from ${mdCell(input.source)}; generated ${mdCell(input.generatedAt)} by cidr-migration report.`, "");
  out.push(
    mdTable(["", ""], [
      ["Service CIDR", mdCode(`${plan.serviceCidr.from} -> ${plan.serviceCidr.to}`)],
      ["Pod CIDR", mdCode(`${plan.podCidr.from} -> ${plan.podCidr.to}`) + ` (node mask /${plan.podCidr.nodeMaskSize})`],
      ["CNI", cniSummary(plan)],
      ["kubernetes Service", mdCode(`${plan.kubernetesService.oldClusterIP} -> ${plan.kubernetesService.newClusterIP}`)],
      ["DNS Service", `${mdCell(`${plan.dns.namespace}/${plan.dns.name}`)} ${mdCode(`${plan.dns.oldClusterIP ?? "(not found)"} -> ${plan.dns.newClusterIP}`)}`],
      ["Services re-created", `${moving.length} of ${plan.services.length}`],
      ["Nodes moved", `${movingNodes.length} of ${plan.nodes.length}, in ${batches} batches`],
      ["Estimate", `cidr-migration ${formatDuration(plan.estimate.oursSeconds)}; manual runbook ${formatDurationRange(plan.estimate.manualMinutes.min * 60, plan.estimate.manualMinutes.max * 60)}`],
    ]),
    "",
  );

  out.push("## Timeline", "");
  out.push(`Each phase on one scale (${BAR_WIDTH} characters = ${formatDuration(scale)}); the manual bar is the runbook's high figure.`, "");
  out.push(
    mdTable(
      ["phase", "steps", "cidr-migration", "", "manual runbook", ""],
      [
        ...timeline.spans.map((s) => [
          s.phase,
          String(s.steps),
          s.steps ? formatDuration(s.oursSeconds) : "no steps",
          barCell(s.oursSeconds, scale),
          manualText(s.manualMinSeconds, s.manualMaxSeconds),
          barCell(s.manualMaxSeconds, scale),
        ]),
        [
          "**total**",
          String(timeline.spans.reduce((n, s) => n + s.steps, 0)),
          `**${formatDuration(timeline.oursTotalSeconds)}**`,
          barCell(timeline.oursTotalSeconds, scale),
          `**${manualText(timeline.manualTotalMinSeconds, timeline.manualTotalMaxSeconds)}**`,
          barCell(timeline.manualTotalMaxSeconds, scale),
        ],
      ],
    ),
    "",
  );

  out.push("## Service IP map", "");
  out.push(
    mdTable(
      ["namespace/name", "type", "old ClusterIP", "new ClusterIP", "action", "reason"],
      plan.services.map((s) => [mdCode(`${s.namespace}/${s.name}`), s.type, mdCell(s.oldClusterIP ?? "-"), mdCell(s.newClusterIP ?? "-"), s.action, mdCell(s.reason)]),
    ),
    "",
  );

  out.push("## Node map", "");
  out.push(
    mdTable(
      ["batch", "node", "role", "old podCIDR", "new podCIDR", "action"],
      plan.nodes.map((n) => [n.batch < 0 ? "-" : `${n.batch}${n.canary ? " (canary)" : ""}`, mdCode(n.name), n.role, mdCell(n.oldPodCIDR ?? "-"), mdCell(n.newPodCIDR), n.action]),
    ),
    "",
  );

  out.push("## Plan warnings", "");
  out.push(plan.warnings.length === 0 ? "None." : mdTable(["code", "object", "warning"], plan.warnings.map((w) => [mdCode(w.code), mdCell(w.object), mdCell(w.message)])), "");

  out.push(...findings("Preflight findings", input.preflight, "No preflight report was given (cidr-migration preflight --json, then --preflight FILE)."));
  out.push(...findings("Verify results", input.verify, "Not run yet: after pulumi up, run cidr-migration verify --json and make the report again with --verify FILE."));
  return `${out.join("\n").trimEnd()}\n`;
}
