import { UserError } from "../config/errors";
import { FindingReport, Severity, buildReport } from "../report/findings";

/**
 * A FindingReport read back from `cidr-migration preflight --json` or `cidr-migration verify --json`
 * (lib/report/findings renderFindingsJson). The summary and exit code are recomputed from the findings, so an edited
 * or truncated summary cannot hide a blocker.
 */

const SEVERITIES: readonly Severity[] = ["blocker", "warning", "info"];
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function parseFindingsDocument(text: string, source: string, command: "preflight" | "verify"): FindingReport {
  const fix = `write it with: cidr-migration ${command} --stack NAME --json > ${source}`;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${source}: not JSON (${(err as Error).message.split("\n")[0]}); ${fix}`);
  }
  if (!isObject(data) || !Array.isArray(data.findings)) throw new UserError(`${source}: not a ${command} report (no findings list); ${fix}`);
  if (data.command !== undefined && data.command !== command) {
    throw new UserError(`${source}: this is a ${String(data.command)} report, expected ${command}; ${fix}`);
  }
  data.findings.forEach((f, i) => {
    if (!isObject(f) || typeof f.code !== "string" || typeof f.object !== "string" || typeof f.message !== "string" || !SEVERITIES.includes(f.severity as Severity)) {
      throw new UserError(`${source}: findings[${i}] needs code, object, message and a severity of blocker, warning or info; ${fix}`);
    }
  });
  const findings = (data.findings as Record<string, unknown>[]).map((f) => ({
    code: f.code as string,
    severity: f.severity as Severity,
    object: f.object as string,
    path: typeof f.path === "string" ? f.path : undefined,
    message: f.message as string,
    action: typeof f.action === "string" ? f.action : "",
  }));
  return buildReport(command, findings);
}
