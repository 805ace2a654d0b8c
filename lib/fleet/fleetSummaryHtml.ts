/**
 * The fleet preview's summary as one self-contained HTML page, in the report's style (lib/report/reportStyle): the
 * fleet's figures, one row per cluster (wave, gate verdict, Services and nodes moving, the estimate beside the
 * manual runbook's), then each cluster's gate findings. Every value is escaped.
 */
import { esc } from "../report/htmlEscape";
import { REPORT_CSP, REPORT_CSS } from "../report/reportStyle";
import { formatDuration } from "../plan/planReport";
import { FleetSummary, FleetSummaryRow, fleetVerdict } from "./fleetSummary";

const VERDICT_CLASS = { pass: "ok", fail: "bad", error: "bad", done: "ok" } as const;

function clusterRow(r: FleetSummaryRow): string {
  const m = r.estimate?.manualRunbookMinutes;
  const cells = [
    `<td class="num">${esc(r.wave)}</td>`,
    `<td class="mono">${esc(r.stack)}</td>`,
    `<td><span class="verdict ${VERDICT_CLASS[r.verdict]}">${esc(r.verdict)}</span></td>`,
    `<td class="num">${esc(r.servicesMoving ?? "-")}</td>`,
    `<td class="num">${esc(r.nodesMoving ?? "-")}</td>`,
    `<td class="num">${esc(r.estimate ? formatDuration(r.estimate.oursSeconds) : "-")}</td>`,
    `<td class="num">${esc(m ? `${m.min}-${m.max} min` : "-")}</td>`,
    `<td class="num">${esc(r.error ? "-" : r.findings.length)}</td>`,
    `<td class="mono">${esc(r.backend)}</td>`,
  ];
  return `<tr>${cells.join("")}</tr>`;
}

function findingsOf(r: FleetSummaryRow): string {
  const items = r.error
    ? [`<li><span class="badge blocker">error</span> ${esc(r.error)}</li>`]
    : [...r.findings.map((f) => `<li><span class="badge blocker">${esc(f.code)}</span> <code>${esc(f.object)}</code>: ${esc(f.message)}</li>`),
       ...r.notes.map((f) => `<li><span class="badge info">${esc(f.code)}</span> <code>${esc(f.object)}</code>: ${esc(f.message)}</li>`)];
  return `<h3>${esc(r.stack)} <small class="meta">wave ${esc(r.wave)}</small></h3>\n${items.length > 0 ? `<ul>\n${items.join("\n")}\n</ul>` : '<p class="empty">No findings.</p>'}`;
}

export function renderFleetSummaryHtml(summary: FleetSummary): string {
  const rows = [...summary.rows].sort((a, b) => a.wave - b.wave);
  const verdict = fleetVerdict(rows);
  const sum = (f: (r: FleetSummaryRow) => number | undefined) => rows.reduce((n, r) => n + (f(r) ?? 0), 0);
  const figure = (value: string | number, label: string) => `<div class="figure"><b>${esc(value)}</b><span>${esc(label)}</span></div>`;
  const headers = ["wave", "stack", "gate", "Services moving", "nodes moving", "estimate", "manual runbook", "findings", "backend"];
  return [
    "<!DOCTYPE html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(`CIDR migration fleet preview: ${rows.length} cluster(s), ${verdict}`)}</title>`,
    `<style>${REPORT_CSS}</style>`,
    "</head>",
    "<body>",
    "<header>",
    "<h1>CIDR migration fleet preview</h1>",
    `<p class="meta">${esc(`Fleet file ${summary.fleetFile}; generated ${summary.generatedAt} by cidr-migration fleet preview.`)}</p>`,
    "</header>",
    '<section id="summary">',
    "<h2>Summary</h2>",
    '<div class="figures">',
    figure(rows.length, "clusters"),
    figure(new Set(rows.map((r) => r.wave)).size, "waves"),
    figure(sum((r) => r.servicesMoving), "Services moving"),
    figure(sum((r) => r.nodesMoving), "nodes moving"),
    "</div>",
    `<p>Gate: <span class="verdict ${VERDICT_CLASS[verdict]}">${esc(verdict)}</span></p>`,
    "</section>",
    '<section id="clusters">',
    "<h2>Clusters</h2>",
    `<table id="fleet">\n<thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join("")}</tr></thead>\n<tbody>\n${rows.map(clusterRow).join("\n")}\n</tbody>\n</table>`,
    "</section>",
    '<section id="findings">',
    "<h2>Gate findings</h2>",
    ...rows.map(findingsOf),
    "</section>",
    "</body>",
    "</html>",
    "",
  ].join("\n");
}
