/**
 * `cidr-migration fleet up FLEET.yaml --summary DIR/fleet-summary.json`: runs the reviewed fleet wave by wave
 * (lib/fleet/waveRun), through the Automation API. Before each wave every stack left in it is previewed again and
 * must be the reviewed change (lib/fleet/reviewedPreview) and pass the gate. A stack already done is skipped, so a
 * second `up` resumes. Ctrl-C: no new stack starts, and the running ones get one SIGINT (engine/sessionPulumi), so
 * the engine finishes the steps in flight and releases the stack.
 * Exit 0 when every stack is done, 1 when one failed or was refused, 2 for bad input, 130 when cancelled.
 */
import * as fs from "fs";
import * as path from "path";
import { previewStack, readStackRecord, upStack } from "../engine/fleetWorkspace";
import { ConfigError, ConfigProblem, EXIT_FINDINGS, UserError } from "../lib/config/errors";
import { engineErrorLine } from "../lib/fleet/engineError";
import { FleetFile, FleetStack } from "../lib/fleet/fleetFile";
import { parseFleetSummary } from "../lib/fleet/fleetSummary";
import { changesSinceReview } from "../lib/fleet/reviewedPreview";
import { stackPhase } from "../lib/fleet/stackPhase";
import { runWaves, StackOutcome } from "../lib/fleet/waveRun";
import { judgePreview } from "../lib/gate/judgePreview";
import { parsePreviewDigest, PreviewDigest } from "../lib/gate/previewDigest";
import { renderTable } from "../lib/report/textTable";
import { readInputFile } from "./context";
import { prepareOutDir, stackLogFile } from "./fleetPreview";
import { doneStacks, planStacks, readFleet } from "./fleetStacks";
import { outputWidth } from "./run";

const EXIT_CANCELLED = 130;

/**
 * Each stack's reviewed preview from the summary; a stack the summary lacks, or whose gate failed, is refused.
 * Only the stacks still to run need one: a done stack is skipped whatever the summary says of it.
 */
function reviewedPreviews(stacks: FleetStack[], summaryFile: string): Map<FleetStack, PreviewDigest> {
  const summary = parseFleetSummary(readInputFile("--summary", summaryFile), summaryFile);
  const dir = path.dirname(summaryFile);
  const reviewed = new Map<FleetStack, PreviewDigest>();
  const problems: ConfigProblem[] = [];
  for (const stack of stacks) {
    const key = `stack ${stack.name} (wave ${stack.wave})`;
    const row = summary.rows.find((r) => r.stack === stack.name && r.backend === stack.backend);
    if (!row) problems.push({ key, message: `is not in the reviewed summary ${summaryFile}; run fleet preview again and review it` });
    else if (row.wave !== stack.wave) problems.push({ key, message: `was reviewed in wave ${row.wave}; run fleet preview again and review the new order` });
    else if (row.verdict === "done") problems.push({ key, message: "was done when reviewed but is not done now; run fleet preview again and review it" });
    else if (row.verdict !== "pass" || !row.previewFile) problems.push({ key, message: `did not pass the gate in the reviewed summary (${row.error ?? row.findings.map((f) => f.code).join(", ")}); fix it, then run fleet preview again` });
    else {
      const file = path.join(dir, row.previewFile);
      reviewed.set(stack, parsePreviewDigest(readInputFile("reviewed preview", file), file));
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return reviewed;
}

function outcomeTable(outcomes: StackOutcome[]): string {
  const columns = [{ header: "wave" }, { header: "stack", wrap: true, min: 8 }, { header: "result" }, { header: "reason", wrap: true, min: 20 }];
  return renderTable(columns, outcomes.map((o) => [String(o.stack.wave), o.stack.name, o.result, "reason" in o ? o.reason : ""]), outputWidth());
}

/**
 * `--stack NAME` (one CI job per stack): only that stack, and only once every stack of the waves before it is done,
 * so a CI matrix cannot start a wave early either.
 */
async function onlyStack(fleet: FleetFile, name: string): Promise<FleetFile> {
  const matches = fleet.stacks.filter((s) => s.name === name);
  if (matches.length !== 1) throw new UserError(`--stack ${name}: ${matches.length === 0 ? "the fleet file lists no such stack" : "the fleet file lists it on more than one backend"}; the stacks are ${fleet.stacks.map((s) => s.name).join(", ")}`);
  const [stack] = matches;
  const waiting: string[] = [];
  for (const earlier of fleet.stacks.filter((s) => s.wave < stack.wave)) {
    const { phase } = stackPhase(await readStackRecord(fleet, earlier));
    if (phase !== "done") waiting.push(`${earlier.name} (wave ${earlier.wave}) is ${phase}`);
  }
  if (waiting.length > 0) throw new UserError(`--stack ${name} is in wave ${stack.wave}, and the waves before it are not done: ${waiting.join("; ")}; finish them first`, EXIT_FINDINGS);
  return { ...fleet, stacks: [stack] };
}

export async function fleetUp(file: string, summaryFile: string, stackName?: string): Promise<number> {
  const whole = await readFleet(file);
  const fleet = stackName === undefined ? whole : await onlyStack(whole, stackName);
  const done = await doneStacks(fleet);
  const todo = fleet.stacks.filter((s) => !done.has(s));
  const reviewed = reviewedPreviews(todo, summaryFile);
  const plans = await planStacks({ ...fleet, stacks: todo });
  const logDir = path.dirname(summaryFile);
  prepareOutDir("--summary", logDir);
  const controller = new AbortController();
  // Every Ctrl-C is caught while engines run: they are in sessions of their own, so killing this process would
  // leave them running unseen. The first cancels; a later one only says that the cancel is under way.
  const onSigint = () => {
    process.stderr.write(controller.signal.aborted
      ? "fleet: still cancelling: waiting for the running engines to finish their steps in flight\n"
      : "fleet: cancelling: no new stack starts; the running ones finish their steps in flight\n");
    controller.abort();
  };
  process.on("SIGINT", onSigint);
  const appendTo = (stack: FleetStack) => {
    const log = stackLogFile(logDir, stack, "up");
    return (text: string) => fs.appendFileSync(log, text);
  };
  let outcomes: StackOutcome[];
  try {
    outcomes = await runWaves(fleet, {
      isDone: async (stack) => done.has(stack),
      refusal: async (stack) => {
        let now;
        try {
          now = await previewStack(fleet, stack, { signal: controller.signal, onOutput: appendTo(stack) });
        } catch (err) {
          return `its preview failed: ${engineErrorLine(String((err as Error).message ?? err))}`;
        }
        const changes = changesSinceReview(reviewed.get(stack)!, now.digest);
        if (changes.length > 0) return `its preview changed since the review (${summaryFile}): ${changes.join("; ")}; run fleet preview again and review it`;
        // The preflight audit runs again as the graph's first step (PreflightGate), so it is not repeated here.
        const gate = judgePreview(now.digest, plans.get(stack)!.plan);
        if (!gate.passed) return `the gate fails it: ${gate.reasons.map((r) => `${r.code}: ${r.message}`).join("; ")}`;
        return undefined;
      },
      up: (stack) => upStack(fleet, stack, { signal: controller.signal, onOutput: appendTo(stack) }).catch((err) => {
        throw new Error(engineErrorLine(String((err as Error).message ?? err)));
      }),
      cancelled: () => controller.signal.aborted,
      log: (line) => process.stderr.write(`fleet: ${line}\n`),
    });
  } finally {
    process.removeListener("SIGINT", onSigint);
  }
  process.stdout.write(`${outcomeTable(outcomes)}\n`);
  if (controller.signal.aborted) return EXIT_CANCELLED;
  return outcomes.every((o) => o.result === "succeeded" || o.result === "done before") ? 0 : 1;
}
