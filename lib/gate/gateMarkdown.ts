import { mdCell, mdCode, mdTable } from "../report/markdownTable";
import { GateReason } from "./gateReason";
import { GateResult } from "./judgePreview";
import { parseUrn } from "./urn";

/**
 * The gate's verdict as markdown for a pull-request comment: the verdict first, one table row per reason (what,
 * which object, why and what to do), then the notes and the preview's counts. The first line is a fixed HTML
 * comment so a CI step can find and update its previous comment instead of adding another.
 */

export const GATE_COMMENT_MARKER = "<!-- cidr-migration-gate -->";

/** A URN as "name (type)", the way a reviewer recognises it; other objects as they are. */
export function describeObject(object: string): string {
  const urn = parseUrn(object);
  return urn ? `${urn.name} (${urn.type})` : object;
}

function reasonRows(reasons: readonly GateReason[]): string[][] {
  return reasons.map((r) => [mdCode(r.code), mdCell(describeObject(r.object)), mdCell(r.message)]);
}

function counts(changeSummary: Record<string, number>): string {
  const entries = Object.entries(changeSummary).filter(([, n]) => n > 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([op, n]) => `${n} ${op}`).join(", ") : "no changes";
}

export function renderGateMarkdown(result: GateResult): string {
  const { summary } = result;
  const out: string[] = [GATE_COMMENT_MARKER];
  const n = result.reasons.length;
  out.push(result.passed ? "## cidr-migration gate: PASS" : `## cidr-migration gate: FAIL (${n} reason${n === 1 ? "" : "s"})`);
  out.push("");
  out.push(
    result.passed
      ? "The preview does only what the reviewed plan explains."
      : "The preview does something the reviewed plan does not explain. Fix each reason below, then preview again.",
  );
  out.push("");
  out.push(`- Preview: ${summary.steps} steps shown (${counts(summary.changeSummary)}); ${summary.migrationSteps} belong to the migration.`);
  out.push(`- Service moves in the preview: ${summary.serviceMoves}; nodes in the rollout: ${summary.rolloutNodes}.`);
  if (summary.preflight) out.push(`- Preflight: ${summary.preflight.blocker} blocker(s), ${summary.preflight.warning} warning(s), ${summary.preflight.info} info.`);
  if (!result.passed) {
    out.push("");
    out.push("### Why it fails");
    out.push("");
    out.push(mdTable(["code", "object", "reason"], reasonRows(result.reasons)));
  }
  if (result.notes.length > 0) {
    out.push("");
    out.push("### Notes (do not fail the gate)");
    out.push("");
    out.push(mdTable(["code", "object", "note"], reasonRows(result.notes)));
  }
  out.push("");
  out.push(`Exit code ${result.exitCode}.`);
  return `${out.join("\n")}\n`;
}
