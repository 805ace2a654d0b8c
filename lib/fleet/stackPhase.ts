/**
 * Where one fleet stack stands, from what its backend records (read-only): its last update and its outputs.
 * A stack is done when an `up` succeeded and the verify step ran (index.ts exports verifyWarnings only then).
 */

export type Phase = "not started" | "running or interrupted" | "failed" | "applied, not verified" | "done";

export interface StackRecord {
  /** The newest update, if any: its kind ("update", "preview", "refresh", "destroy" ...) and result. */
  lastUpdate?: { kind: string; result: string; endTime?: string };
  /** Stack outputs as the backend holds them (values only). */
  outputs: Record<string, unknown>;
  /** Resources in the state, and operations a killed run left pending. */
  resourceCount: number;
  pendingOperations: number;
}

export interface StackStatus {
  phase: Phase;
  /** One short line: what the phase rests on. */
  detail: string;
}

export function stackPhase(record: StackRecord): StackStatus {
  const { lastUpdate, outputs } = record;
  if (record.pendingOperations > 0) return { phase: "running or interrupted", detail: `${record.pendingOperations} pending operation(s) in the state; if no run is going on, see the README's crash recovery` };
  if (!lastUpdate) return { phase: "not started", detail: "no update in the stack's history" };
  if (lastUpdate.result === "in-progress") return { phase: "running or interrupted", detail: `a ${lastUpdate.kind} is in progress` };
  if (lastUpdate.result !== "succeeded") return { phase: "failed", detail: `the last ${lastUpdate.kind} ${lastUpdate.result}${lastUpdate.endTime ? ` at ${lastUpdate.endTime}` : ""}; ${record.resourceCount} resource(s) in the state; pulumi up resumes it` };
  if (lastUpdate.kind !== "update") return { phase: "applied, not verified", detail: `the last operation was a ${lastUpdate.kind}` };
  if (outputs.verifyWarnings === undefined) return { phase: "applied, not verified", detail: "the last up succeeded but did not reach the verify step" };
  // verifyWarnings is the verify step's count of warnings (dynamic-providers/clusterAudit.ts).
  const warnings = typeof outputs.verifyWarnings === "number" ? outputs.verifyWarnings : 0;
  return { phase: "done", detail: `verified${warnings > 0 ? ` with ${warnings} warning(s)` : ""}` };
}
