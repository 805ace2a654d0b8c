import { EXIT_FINDINGS, EXIT_OK } from "../config/errors";
import { layoutTable, wrapWithPrefix } from "./textTable";

/**
 * What preflight and verify report: one problem (or fact) about one object, with what to do about it.
 * Rendered as a table for people and as JSON for machines; the exit code is derived from the severities.
 */

export type Severity = "blocker" | "warning" | "info";

export interface Finding {
  /** Stable, SCREAMING_SNAKE code, e.g. "HARDCODED_SERVICE_IP". */
  code: string;
  severity: Severity;
  /** "Kind namespace/name", "Node name", "etcd https://10.0.0.11:2379" or "cluster". */
  object: string;
  /** Where inside the object, e.g. `data["prometheus.yml"] line 12` or `spec.template.spec.containers[0].env[2].value`. */
  path?: string;
  message: string;
  /** What the operator should do. */
  action: string;
}

export interface FindingSummary {
  blocker: number;
  warning: number;
  info: number;
}

export interface FindingReport {
  /** "preflight" or "verify". */
  command: string;
  exitCode: number;
  summary: FindingSummary;
  findings: Finding[];
}

const SEVERITY_ORDER: Record<Severity, number> = { blocker: 0, warning: 1, info: 2 };

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Blockers first, then warnings, then info; within a severity by code, object and path, so output is stable. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return [...findings].sort(
    (a, b) =>
      SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity] ||
      compareText(a.code, b.code) ||
      compareText(a.object, b.object) ||
      compareText(a.path ?? "", b.path ?? ""),
  );
}

export function summarize(findings: readonly Finding[]): FindingSummary {
  const summary: FindingSummary = { blocker: 0, warning: 0, info: 0 };
  for (const f of findings) summary[f.severity]++;
  return summary;
}

/**
 * 0 when clean, 1 when there is any blocker or warning. Info findings never fail a run: they state facts
 * (versions, capacity) that need no action. A warning fails it because each one asks the operator to act or decide.
 */
export function exitCodeFor(findings: readonly Finding[]): number {
  return findings.some((f) => f.severity !== "info") ? EXIT_FINDINGS : EXIT_OK;
}

export function buildReport(command: string, findings: readonly Finding[]): FindingReport {
  const sorted = sortFindings(findings);
  return { command, exitCode: exitCodeFor(sorted), summary: summarize(sorted), findings: sorted };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * A table for people: one row per finding (severity, code, object, path), with the message and the action
 * indented below it, then a summary line. Columns are padded to the widest cell so rows line up. Within `width`
 * (the terminal's) when given: OBJECT and PATH wrap, PATH moves under the row, and the message and action wrap.
 */
export function renderFindingsTable(report: FindingReport, opts: { width?: number } = {}): string {
  const columns = [
    { header: "SEVERITY" },
    { header: "CODE", wrap: true, min: 12 },
    { header: "OBJECT", wrap: true, min: 16 },
    { header: "PATH", wrap: true, min: 12, detail: 1 },
  ];
  const rows = report.findings.map((f) => [f.severity.toUpperCase(), f.code, f.object, f.path ?? ""]);
  const table = layoutTable(columns, rows, opts.width);
  const out: string[] = [];
  if (report.findings.length > 0) {
    out.push(...table.header.slice(0, 1));
    report.findings.forEach((f, i) => {
      out.push(...table.rows[i]);
      out.push(...wrapWithPrefix("    ", f.message, opts.width));
      out.push(...wrapWithPrefix("    -> ", f.action, opts.width));
    });
    out.push("");
  }
  const { blocker, warning, info } = report.summary;
  const verdict = report.exitCode === EXIT_OK ? "clean" : "findings need attention";
  out.push(...wrapWithPrefix("", `${report.command}: ${plural(blocker, "blocker")}, ${plural(warning, "warning")}, ${info} info: ${verdict} (exit ${report.exitCode})`, opts.width, 2));
  return `${out.join("\n")}\n`;
}

export function renderFindingsJson(report: FindingReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}
