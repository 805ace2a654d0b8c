import { cniSummary } from "../plan/calicoPools";
import { FindingReport } from "./findings";
import { formatDuration, formatDurationRange } from "../plan/planReport";
import { esc } from "./htmlEscape";
import { REPORT_CSP as CSP, REPORT_CSS as CSS } from "./reportStyle";
import { phaseTimeline } from "./phaseTimeline";
import { ReportInput } from "./reportInput";
import { renderTimelineSvg } from "./timelineChart";

/**
 * The change ticket's report as one self-contained HTML page: inline CSS, the timeline as inline SVG, no script,
 * no font, image or link to fetch. A Content-Security-Policy of `default-src 'none'` makes the browser refuse any
 * request the page might still try, so opening it never touches the network.
 *
 * Sections: summary, timeline (ours beside the manual runbook), phases, Service IP map, node map, plan warnings,
 * preflight findings, verify results, and every plan step (folded). Every value is escaped (htmlEscape.esc).
 */

function table(id: string, headers: Array<string | [string, string]>, rows: string[][]): string {
  const th = headers.map((h) => (Array.isArray(h) ? `<th class="${h[1]}">${esc(h[0])}</th>` : `<th>${esc(h)}</th>`)).join("");
  const body = rows.map((cells) => `<tr>${cells.join("")}</tr>`).join("\n");
  return `<table id="${esc(id)}">\n<thead><tr>${th}</tr></thead>\n<tbody>\n${body}\n</tbody>\n</table>`;
}

const td = (value: string | number | undefined, cls?: string) => `<td${cls ? ` class="${cls}"` : ""}>${esc(value ?? "-")}</td>`;
const badge = (value: string) => `<td><span class="badge ${esc(value)}">${esc(value)}</span></td>`;

function manualText(min: number, max: number, perNode: boolean): string {
  if (max === 0) return "-";
  const range = min === max ? `${max} min` : `${min}-${max} min`;
  return perNode ? `${range} per node` : range;
}

function findingsSection(id: string, title: string, report: FindingReport | undefined, missing: string): string {
  const out = [`<section id="${id}-section">`, `<h2>${esc(title)}</h2>`];
  if (!report) {
    out.push(`<p class="empty">${esc(missing)}</p>`);
  } else {
    const { blocker, warning, info } = report.summary;
    const ok = report.exitCode === 0;
    out.push(`<p class="verdict ${ok ? "ok" : "bad"}">${esc(`${blocker} blocker(s), ${warning} warning(s), ${info} info: ${ok ? "clean" : "needs attention"} (exit ${report.exitCode})`)}</p>`);
    out.push(
      report.findings.length === 0
        ? `<p class="empty">No findings.</p>`
        : table(
            id,
            ["severity", "code", "object", "where", "finding", "what to do"],
            report.findings.map((f) => [badge(f.severity), td(f.code, "mono"), td(f.object), td(f.path), td(f.message), td(f.action)]),
          ),
    );
  }
  out.push("</section>");
  return out.join("\n");
}

export function renderReportHtml(input: ReportInput): string {
  const { plan } = input;
  const timeline = phaseTimeline(plan);
  const moving = plan.services.filter((s) => s.action === "recreate");
  const movingNodes = plan.nodes.filter((n) => n.action === "move");
  const batches = new Set(movingNodes.map((n) => n.batch)).size;
  const manual = plan.estimate.manualMinutes;
  const steps = plan.phases.flatMap((p) => p.steps.map((s) => ({ phase: p.name, ...s })));
  const parts: string[] = [];
  parts.push("<!DOCTYPE html>");
  parts.push('<html lang="en">');
  parts.push("<head>");
  parts.push('<meta charset="utf-8">');
  parts.push(`<meta http-equiv="Content-Security-Policy" content="${CSP}">`);
  parts.push('<meta name="viewport" content="width=device-width, initial-scale=1">');
  parts.push(`<title>${esc(`CIDR migration report: ${plan.serviceCidr.from} -> ${plan.serviceCidr.to}, ${plan.podCidr.from} -> ${plan.podCidr.to}`)}</title>`);
  parts.push(`<style>${CSS}</style>`);
  parts.push("</head>");
  parts.push("<body>");
  parts.push("<header>");
  parts.push("<h1>CIDR migration report</h1>");
  parts.push(`<p class="meta">${esc(`Plan from ${input.source}; generated ${input.generatedAt} by cidr-migration report.`)}</p>`);
  parts.push("</header>");

  parts.push('<section id="summary">');
  parts.push("<h2>Summary</h2>");
  parts.push('<dl class="summary">');
  const row = (k: string, v: string) => parts.push(`<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`);
  row("Service CIDR", `${plan.serviceCidr.from} -> ${plan.serviceCidr.to}`);
  row("Pod CIDR", `${plan.podCidr.from} -> ${plan.podCidr.to} (node mask /${plan.podCidr.nodeMaskSize})`);
  row("CNI", cniSummary(plan));
  row("kubernetes Service", `${plan.kubernetesService.oldClusterIP} -> ${plan.kubernetesService.newClusterIP}`);
  row("DNS Service", `${plan.dns.namespace}/${plan.dns.name} ${plan.dns.oldClusterIP ?? "(not found)"} -> ${plan.dns.newClusterIP}`);
  parts.push("</dl>");
  parts.push('<div class="figures">');
  const figure = (value: string, label: string) => parts.push(`<div class="figure"><b>${esc(value)}</b><span>${esc(label)}</span></div>`);
  figure(formatDuration(plan.estimate.oursSeconds), "cidr-migration estimate");
  figure(formatDurationRange(manual.min * 60, manual.max * 60), "manual runbook");
  figure(`${moving.length} of ${plan.services.length}`, "Services re-created");
  figure(`${movingNodes.length} of ${plan.nodes.length}`, `nodes moved, in ${batches} batches`);
  figure(String(plan.warnings.length), "plan warnings");
  parts.push("</div>");
  parts.push("</section>");

  parts.push('<section id="timeline-section">');
  parts.push("<h2>Timeline</h2>");
  parts.push(`<div class="chart">${renderTimelineSvg(timeline)}</div>`);
  parts.push(
    table(
      "phases",
      ["phase", ["steps", "num"], ["cidr-migration", "num"], "manual runbook"],
      plan.phases.map((p) => [td(p.name), td(p.steps.length, "num"), td(p.steps.length ? formatDuration(p.estimateSeconds) : "no steps", "num"), td(manualText(p.manualMinutes.min, p.manualMinutes.max, p.name === "nodes"))]),
    ),
  );
  parts.push("</section>");

  parts.push('<section id="services-section">');
  parts.push("<h2>Service IP map</h2>");
  parts.push(
    table(
      "services",
      ["namespace/name", "type", "old ClusterIP", "new ClusterIP", "action", "reason"],
      plan.services.map((s) => [td(`${s.namespace}/${s.name}`, "mono"), td(s.type), td(s.oldClusterIP, "mono"), td(s.newClusterIP, "mono"), badge(s.action), td(s.reason)]),
    ),
  );
  parts.push("</section>");

  parts.push('<section id="nodes-section">');
  parts.push("<h2>Node map</h2>");
  parts.push(
    table(
      "nodes",
      ["batch", "node", "role", "old podCIDR", "new podCIDR", "action"],
      plan.nodes.map((n) => [td(n.batch < 0 ? "-" : `${n.batch}${n.canary ? " (canary)" : ""}`), td(n.name, "mono"), td(n.role), td(n.oldPodCIDR, "mono"), td(n.newPodCIDR, "mono"), badge(n.action)]),
    ),
  );
  parts.push("</section>");

  parts.push('<section id="warnings-section">');
  parts.push("<h2>Plan warnings</h2>");
  parts.push(plan.warnings.length === 0 ? '<p class="empty">None.</p>' : table("warnings", ["code", "object", "warning"], plan.warnings.map((w) => [td(w.code, "mono"), td(w.object), td(w.message)])));
  parts.push("</section>");

  parts.push(findingsSection("preflight", "Preflight findings", input.preflight, "No preflight report was given. Run `cidr-migration preflight --json > preflight.json` and pass --preflight preflight.json."));
  parts.push(findingsSection("verify", "Verify results", input.verify, "Not run yet. After `pulumi up`, run `cidr-migration verify --json > verify.json` and make the report again with --verify verify.json."));

  parts.push('<section id="steps-section">');
  parts.push("<h2>Plan steps</h2>");
  parts.push(`<details><summary>${esc(`All ${steps.length} steps, in runbook order, with what each waits for`)}</summary>`);
  parts.push(
    table(
      "steps",
      ["phase", "step", "action", "target", "waits for", ["estimate", "num"]],
      steps.map((s) => [td(s.phase), td(s.id, "mono"), td(s.action), td(s.target), td(s.dependsOn.join(", ") || "-", "mono"), td(formatDuration(s.estimateSeconds), "num")]),
    ),
  );
  parts.push("</details>");
  parts.push("</section>");
  parts.push("</body>");
  parts.push("</html>");
  return `${parts.join("\n")}\n`;
}
