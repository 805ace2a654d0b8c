/**
 * The fleet preview's summary: one row per cluster (stack), as a table for the terminal and as a JSON document that
 * `fleet up` reads back to know what was reviewed. Pure. The HTML page is fleetSummaryHtml.ts.
 */
import { ConfigError, UserError } from "../config/errors";
import { GateReason } from "../gate/gateReason";
import { formatDuration } from "../plan/planReport";
import { renderTable } from "../report/textTable";

export const SUMMARY_FILE = "fleet-summary.json";
export const SUMMARY_HTML = "fleet-summary.html";

/** The gate's verdict on a stack's preview; "done" for a stack whose verify already ran, which is not previewed. */
export type Verdict = "pass" | "fail" | "error" | "done";

export interface FleetSummaryRow {
  stack: string;
  wave: number;
  backend: string;
  verdict: Verdict;
  servicesMoving?: number;
  nodesMoving?: number;
  /** Our estimate, and the manual runbook's, from the preview's stack outputs. */
  estimate?: { oursSeconds: number; manualRunbookMinutes: { min: number; max: number } };
  /** The engine's count per op. */
  changes: Record<string, number>;
  /** The gate's reasons to fail, and its notes (which do not fail it). */
  findings: GateReason[];
  notes: GateReason[];
  /** Why there is no verdict on the preview (verdict "error"): the preview or the plan failed. */
  error?: string;
  /** The saved preview document (the `pulumi preview --json` form), relative to the summary's directory. */
  previewFile?: string;
}

export interface FleetSummary {
  fleetFile: string;
  generatedAt: string;
  rows: FleetSummaryRow[];
}

/** The file name a stack's saved preview gets: its name and a short hash of its backend (names repeat across backends). */
export function previewFileName(stack: string, backendHash: string): string {
  return `previews/${stack}-${backendHash.slice(0, 8)}.json`;
}

function estimateText(row: FleetSummaryRow): string {
  if (!row.estimate) return "-";
  const m = row.estimate.manualRunbookMinutes;
  return `${formatDuration(row.estimate.oursSeconds)} (manual ${m.min}-${m.max} min)`;
}

function findingsText(row: FleetSummaryRow): string {
  if (row.error) return row.error;
  if (row.verdict === "done") return "done: verified by an earlier up; not previewed again";
  if (row.findings.length === 0) return row.notes.length > 0 ? `${row.notes.length} note(s)` : "none";
  return row.findings.map((f) => `${f.code}: ${f.message}`).join("; ");
}

const count = (n: number | undefined) => (n === undefined ? "-" : String(n));

export function renderFleetTable(rows: readonly FleetSummaryRow[], width?: number): string {
  const columns = [
    { header: "wave" },
    { header: "stack", wrap: true, min: 8 },
    { header: "gate" },
    { header: "services" },
    { header: "nodes" },
    { header: "estimate", wrap: true, min: 10 },
    { header: "findings", wrap: true, min: 20 },
  ];
  return renderTable(columns, rows.map((r) => [String(r.wave), r.stack, r.verdict, count(r.servicesMoving), count(r.nodesMoving), estimateText(r), findingsText(r)]), width);
}

export function fleetVerdict(rows: readonly FleetSummaryRow[]): Verdict {
  if (rows.some((r) => r.verdict === "error")) return "error";
  return rows.every((r) => r.verdict === "pass" || r.verdict === "done") ? "pass" : "fail";
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Reads a summary written by `fleet preview`; anything else is bad input naming the file and what to do. */
export function parseFleetSummary(text: string, file: string): FleetSummary {
  const redo = `; write it with: cidr-migration fleet preview FLEET.yaml --out DIR`;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UserError(`--summary ${file}: not JSON (${(err as Error).message.split("\n")[0]})${redo}`);
  }
  if (!isObject(data) || !Array.isArray(data.rows) || typeof data.fleetFile !== "string") throw new UserError(`--summary ${file}: not a fleet summary (needs fleetFile and rows)${redo}`);
  const problems = data.rows.flatMap((r, i) =>
    isObject(r) && typeof r.stack === "string" && typeof r.backend === "string" && typeof r.verdict === "string" ? [] : [{ key: `--summary ${file}: rows[${i}]`, message: `is not a summary row (stack, backend, verdict)${redo}` }],
  );
  if (problems.length > 0) throw new ConfigError(problems);
  return data as unknown as FleetSummary;
}
