/**
 * `cidr-migration fleet preview FLEET.yaml --out DIR`: previews every stack through the Automation API, runs the
 * gate on each against its plan, and writes what the reviewers sign off:
 *   DIR/fleet-summary.json   one row per cluster; `fleet up --summary` reads it back
 *   DIR/fleet-summary.html   the same as a page in the report's style
 *   DIR/previews/*.json      each stack's preview in the `pulumi preview --json` form (`cidr-migration gate` reads
 *                            it), and beside it its cluster's preflight report (*.preflight.json), which the gate read
 *   DIR/logs/*.log           each stack's engine output
 * A stack already done (its verify ran) is not previewed again: its row says so. Read-only on the clusters.
 * Exit 0 when every gate passes, 1 when any fails or a preview fails, 2 for bad input.
 */
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { previewStack, StackPreview } from "../engine/fleetWorkspace";
import { UserError } from "../lib/config/errors";
import { inLanes } from "../lib/concurrency/inLanes";
import { engineErrorLine } from "../lib/fleet/engineError";
import { FleetFile, FleetStack } from "../lib/fleet/fleetFile";
import { FleetSummary, FleetSummaryRow, fleetVerdict, previewFileName, renderFleetTable, SUMMARY_FILE, SUMMARY_HTML } from "../lib/fleet/fleetSummary";
import { renderFleetSummaryHtml } from "../lib/fleet/fleetSummaryHtml";
import { judgePreview } from "../lib/gate/judgePreview";
import { Plan } from "../lib/plan/planModel";
import { doneStacks, PlannedStack, planStacks, readFleet } from "./fleetStacks";
import { etcdAccessFromConfig, runPreflight } from "../lib/preflight";
import { FindingReport, renderFindingsJson } from "../lib/report/findings";
import { outputWidth } from "./run";

export const backendHash = (backend: string) => createHash("sha256").update(backend).digest("hex");

export function stackLogFile(dir: string, stack: FleetStack, what: string): string {
  return path.join(dir, "logs", `${stack.name}-${backendHash(stack.backend).slice(0, 8)}.${what}.log`);
}

/** Creates DIR (and its previews/ and logs/), or refuses naming --out. */
export function prepareOutDir(flag: string, dir: string): void {
  try {
    for (const sub of ["previews", "logs"]) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  } catch (err) {
    throw new UserError(`${flag} ${dir}: cannot create the directory (${(err as NodeJS.ErrnoException).code ?? String(err)}); pick a writable path`);
  }
}

const numberOr = (v: unknown) => (typeof v === "number" ? v : undefined);

/** A summary row from a stack's preview and the gate's verdict on it, with the preflight report's blockers. */
export function summaryRow(stack: FleetStack, plan: Plan, preview: StackPreview, preflight: FindingReport, previewFile: string): FleetSummaryRow {
  const gate = judgePreview(preview.digest, plan, preflight);
  const estimate = preview.outputs.estimate as { oursSeconds?: number; manualRunbookMinutes?: { min: number; max: number } } | undefined;
  return {
    stack: stack.name,
    wave: stack.wave,
    backend: stack.backend,
    verdict: gate.passed ? "pass" : "fail",
    servicesMoving: numberOr(preview.outputs.servicesMoving),
    nodesMoving: numberOr(preview.outputs.nodesMoving),
    estimate: typeof estimate?.oursSeconds === "number" && estimate.manualRunbookMinutes ? { oursSeconds: estimate.oursSeconds, manualRunbookMinutes: estimate.manualRunbookMinutes } : undefined,
    changes: preview.digest.changeSummary,
    findings: gate.reasons,
    notes: gate.notes,
    previewFile,
  };
}

/**
 * Previews one stack, its engine output to its log, and audits its cluster (`cidr-migration preflight`, read-only)
 * so the gate fails on blockers; a failed preview is a row with the engine's error.
 */
export async function previewRow(fleet: FleetFile, stack: FleetStack, planned: PlannedStack, outDir: string): Promise<FleetSummaryRow> {
  const log = fs.createWriteStream(stackLogFile(outDir, stack, "preview"));
  try {
    const preview = await previewStack(fleet, stack, { onOutput: (text) => log.write(text) });
    const previewFile = previewFileName(stack.name, backendHash(stack.backend));
    fs.writeFileSync(path.join(outDir, previewFile), `${JSON.stringify(preview.digest, null, 2)}\n`);
    const { report } = await runPreflight({ config: planned.config, kubeConfig: planned.kubeConfig, etcd: etcdAccessFromConfig(planned.config) });
    fs.writeFileSync(path.join(outDir, previewFile.replace(/\.json$/, ".preflight.json")), renderFindingsJson(report));
    return summaryRow(stack, planned.plan, preview, report, previewFile);
  } catch (err) {
    return { stack: stack.name, wave: stack.wave, backend: stack.backend, verdict: "error", changes: {}, findings: [], notes: [], error: `the preview failed: ${engineErrorLine(String((err as Error).message ?? err))}` };
  } finally {
    log.end();
  }
}

export async function fleetPreview(file: string, outDir: string, json: boolean): Promise<number> {
  const fleet = await readFleet(file);
  const done = await doneStacks(fleet);
  const todo = fleet.stacks.filter((s) => !done.has(s));
  const plans = await planStacks({ ...fleet, stacks: todo });
  prepareOutDir("--out", outDir);
  const rows = new Map<FleetStack, FleetSummaryRow>();
  for (const stack of done) rows.set(stack, { stack: stack.name, wave: stack.wave, backend: stack.backend, verdict: "done", changes: {}, findings: [], notes: [] });
  await inLanes(todo, fleet.concurrency, async (stack) => {
    process.stderr.write(`fleet: previewing ${stack.name} (wave ${stack.wave})\n`);
    rows.set(stack, await previewRow(fleet, stack, plans.get(stack)!, outDir));
  }, () => false);
  const ordered = fleet.stacks.map((s) => rows.get(s)!).sort((a, b) => a.wave - b.wave);
  const summary: FleetSummary = { fleetFile: path.resolve(file), generatedAt: new Date().toISOString(), rows: ordered };
  fs.writeFileSync(path.join(outDir, SUMMARY_FILE), `${JSON.stringify(summary, null, 2)}\n`);
  fs.writeFileSync(path.join(outDir, SUMMARY_HTML), renderFleetSummaryHtml(summary));
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else process.stdout.write(`${renderFleetTable(ordered, outputWidth())}\n\nsummary: ${path.join(outDir, SUMMARY_HTML)}\n`);
  return fleetVerdict(ordered) === "pass" ? 0 : 1;
}
