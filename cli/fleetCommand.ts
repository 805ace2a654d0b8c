import { Command } from "commander";
import { readStackRecord } from "../engine/fleetWorkspace";
import { EXIT_FINDINGS, UserError } from "../lib/config/errors";
import { stackPhase } from "../lib/fleet/stackPhase";
import { renderTable } from "../lib/report/textTable";
import { fleetPreview } from "./fleetPreview";
import { readFleet } from "./fleetStacks";
import { fleetUp } from "./fleetUp";
import { action, outputWidth, writeJson } from "./run";

/**
 * `cidr-migration fleet preview|up|status FILE`: a fleet of clusters, one stack each, in waves (cli/fleetPreview.ts,
 * cli/fleetUp.ts). `fleet status` shows each stack of a fleet file (or of one wave), wave by wave, with its phase as its backend
 * records it (lib/fleet/stackPhase), read through the Automation API. Changes nothing. Exit 0 (1 with --expect-done
 * when a stack shown is not done), or 2 for a fleet file that is invalid or names a stack its backend lacks.
 */
export function registerFleetCommand(program: Command): void {
  const fleet = program.command("fleet").description("many clusters, one stack each, in waves (fleet file: see README)");
  fleet
    .command("preview")
    .description("preview every stack, gate each, and write the summary to review (read-only on the clusters)")
    .argument("<file>", "the fleet file")
    .requiredOption("--out <dir>", "where the summary (fleet-summary.json, .html), the previews and the logs go")
    .option("--json", "print the summary as JSON")
    .action(action((file: string, opts: { out: string; json?: boolean }) => fleetPreview(file, opts.out, opts.json === true)));
  fleet
    .command("up")
    .description("run the reviewed fleet wave by wave, stopping at the first failure; a second run resumes")
    .argument("<file>", "the fleet file")
    .requiredOption("--summary <file>", "the reviewed fleet-summary.json that fleet preview wrote")
    .option("--stack <name>", "only this stack (one CI job per stack), once the waves before it are done")
    .action(action((file: string, opts: { summary: string; stack?: string }) => fleetUp(file, opts.summary, opts.stack)));
  fleet
    .command("status")
    .description("each stack's phase from its outputs and state, without changing anything")
    .argument("<file>", "the fleet file")
    .option("--wave <n>", "only the stacks of this wave")
    .option("--expect-done", "exit 1 unless every stack shown is done (verified): the gate between two CI waves")
    .option("--json", "print the statuses as JSON")
    .action(
      action(async (file: string, opts: { wave?: string; expectDone?: boolean; json?: boolean }) => {
        const parsed = await readFleet(file);
        const wave = opts.wave === undefined ? undefined : Number(opts.wave);
        if (wave !== undefined && !parsed.stacks.some((s) => s.wave === wave)) {
          throw new UserError(`--wave ${opts.wave}: the fleet file has no such wave; its waves are ${[...new Set(parsed.stacks.map((s) => s.wave))].sort((a, b) => a - b).join(", ")}`);
        }
        const rows = [];
        for (const stack of [...parsed.stacks].filter((s) => wave === undefined || s.wave === wave).sort((a, b) => a.wave - b.wave)) {
          const record = await readStackRecord(parsed, stack);
          rows.push({ stack: stack.name, wave: stack.wave, backend: stack.backend, ...stackPhase(record), servicesMoving: record.outputs.servicesMoving, nodesMoving: record.outputs.nodesMoving });
        }
        const code = opts.expectDone && rows.some((r) => r.phase !== "done") ? EXIT_FINDINGS : 0;
        if (opts.json) {
          writeJson({ stacks: rows });
          return code;
        }
        const columns = [{ header: "wave" }, { header: "stack", wrap: true, min: 8 }, { header: "phase" }, { header: "detail", wrap: true, min: 20 }, { header: "backend", detail: 2 }];
        process.stdout.write(`${renderTable(columns, rows.map((r) => [String(r.wave), r.stack, r.phase, r.detail, r.backend]), outputWidth())}\n`);
        return code;
      }),
    );
}
