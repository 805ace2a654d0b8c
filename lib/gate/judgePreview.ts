import { FindingReport } from "../report/findings";
import { Plan } from "../plan/planModel";
import { GateReason } from "./gateReason";
import { judgeNodeOrder, rolloutResources } from "./nodeOrder";
import { ownershipOf } from "./ownership";
import { PreviewDigest, PreviewStep, STEP_OPS } from "./previewDigest";
import { judgeServiceMoves, serviceMovesIn } from "./serviceMoves";
import { stateOf } from "./stateValues";

/**
 * The CI gate's verdict on one `pulumi preview --json` document, given the reviewed Plan (and optionally the
 * preflight report). Pure. It fails when:
 * - a resource outside the migration would be deleted or replaced (OUTSIDE_RESOURCE_DELETED / _REPLACED);
 * - a Service would move that the plan does not re-create, or to another IP (serviceMoves.ts);
 * - the node rollout's order or subnets differ from the plan (nodeOrder.ts);
 * - preflight reported blockers (PREFLIGHT_BLOCKER);
 * - the preview itself reported errors (PREVIEW_ERROR), may have corrupt state, or used an op the gate does not
 *   know (UNKNOWN_STEP_OP: judged as a failure rather than guessed at).
 */

export interface GateSummary {
  /** The engine's own count per op. */
  changeSummary: Record<string, number>;
  steps: number;
  migrationSteps: number;
  serviceMoves: number;
  rolloutNodes: number;
  preflight?: { blocker: number; warning: number; info: number };
}

export interface GateResult {
  passed: boolean;
  exitCode: 0 | 1;
  reasons: GateReason[];
  notes: GateReason[];
  summary: GateSummary;
}

const DELETE_OPS = new Set(["delete", "delete-replaced"]);
const REPLACE_OPS = new Set(["replace", "create-replacement", "delete-replaced", "import-replacement"]);
const KNOWN_OPS = new Set<string>(STEP_OPS);

function judgeOutsideResources(steps: readonly PreviewStep[]): GateReason[] {
  const reasons: GateReason[] = [];
  const reported = new Set<string>();
  for (const step of steps) {
    if (ownershipOf(step.urn) !== "outside" || reported.has(step.urn)) continue;
    const type = stateOf(step)?.type ?? "resource";
    // With --show-replacement-steps a replacement is create-replacement + replace + delete-replaced: one reason.
    if (REPLACE_OPS.has(step.op)) {
      const why = step.replaceReasons?.length ? ` (changed: ${step.replaceReasons.join(", ")})` : "";
      reasons.push({ code: "OUTSIDE_RESOURCE_REPLACED", object: step.urn, message: `${type} is not part of the migration and would be replaced${why}; remove the change from this run` });
      reported.add(step.urn);
    } else if (DELETE_OPS.has(step.op)) {
      const retained = step.oldState?.retainOnDelete ? " (retainOnDelete: the object stays, but Pulumi forgets it)" : "";
      reasons.push({ code: "OUTSIDE_RESOURCE_DELETED", object: step.urn, message: `${type} is not part of the migration and would be deleted${retained}; remove the change from this run` });
      reported.add(step.urn);
    }
  }
  return reasons;
}

function judgeDiagnostics(digest: PreviewDigest): { reasons: GateReason[]; notes: GateReason[] } {
  const reasons: GateReason[] = [];
  const notes: GateReason[] = [];
  for (const d of digest.diagnostics) {
    const message = (d.message ?? "").trim().replace(/\s*\n\s*/g, " ").slice(0, 400);
    const object = d.urn || "preview";
    if (d.severity === "error") reasons.push({ code: "PREVIEW_ERROR", object, message: message || "the preview reported an error without a message" });
    else if (d.severity === "warning") notes.push({ code: "PREVIEW_WARNING", object, message });
  }
  if (digest.maybeCorrupt) reasons.push({ code: "PREVIEW_STATE_MAYBE_CORRUPT", object: "preview", message: "the engine reports that the stack's state may be corrupt; inspect it (pulumi stack export) before any run" });
  for (const step of digest.steps) {
    if (!KNOWN_OPS.has(step.op)) reasons.push({ code: "UNKNOWN_STEP_OP", object: step.urn, message: `op "${step.op}" is not one the gate knows; review this step by hand or update cidr-migration` });
  }
  return { reasons, notes };
}

function judgePreflight(preflight: FindingReport): { reasons: GateReason[]; notes: GateReason[] } {
  const reasons = preflight.findings
    .filter((f) => f.severity === "blocker")
    .map((f): GateReason => ({ code: "PREFLIGHT_BLOCKER", object: f.object, message: `${f.code}${f.path ? ` at ${f.path}` : ""}: ${f.message} -> ${f.action}` }));
  const warnings = preflight.findings.filter((f) => f.severity === "warning");
  const notes: GateReason[] = warnings.length
    ? [{ code: "PREFLIGHT_WARNINGS", object: "preflight", message: `${warnings.length} preflight warning(s): ${[...new Set(warnings.map((w) => w.code))].join(", ")}` }]
    : [];
  return { reasons, notes };
}

export function judgePreview(digest: PreviewDigest, plan: Plan, preflight?: FindingReport): GateResult {
  const parts = [
    judgeDiagnostics(digest),
    { reasons: judgeOutsideResources(digest.steps), notes: [] },
    judgeServiceMoves(serviceMovesIn(digest.steps), plan),
    judgeNodeOrder(digest.steps, plan),
    preflight
      ? judgePreflight(preflight)
      : { reasons: [], notes: [{ code: "PREFLIGHT_NOT_GIVEN", object: "preflight", message: "no preflight report was given; pass --preflight FILE (cidr-migration preflight --json) so blockers stop the run here" }] },
  ];
  const reasons = parts.flatMap((p) => p.reasons);
  const notes = parts.flatMap((p) => p.notes);
  const rollout = rolloutResources(digest.steps, plan.nodes.map((n) => n.name));
  const passed = reasons.length === 0;
  return {
    passed,
    exitCode: passed ? 0 : 1,
    reasons,
    notes,
    summary: {
      changeSummary: { ...digest.changeSummary },
      steps: digest.steps.length,
      migrationSteps: digest.steps.filter((s) => ownershipOf(s.urn) === "migration").length,
      serviceMoves: serviceMovesIn(digest.steps).length,
      rolloutNodes: new Set([...rollout.values()].map((r) => r.node)).size,
      preflight: preflight ? { ...preflight.summary } : undefined,
    },
  };
}
