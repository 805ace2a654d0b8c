import * as path from "path";
import { Command } from "commander";
import { checkStacksExist, readStackRecord } from "../engine/fleetWorkspace";
import { parseFleetFile } from "../lib/fleet/fleetFile";
import { stackPhase } from "../lib/fleet/stackPhase";
import { renderTable } from "../lib/report/textTable";
import { readInputFile } from "./context";
import { action, outputWidth, writeJson } from "./run";

/**
 * `cidr-migration fleet status FILE`: each stack of a fleet file, wave by wave, with its phase as its backend
 * records it (lib/fleet/stackPhase), read through the Automation API. Changes nothing. Exit 0, or 2 for a fleet
 * file that is invalid or names a stack its backend does not have.
 */
export function registerFleetCommand(program: Command): void {
  const fleet = program.command("fleet").description("many clusters, one stack each, in waves (fleet file: see README)");
  fleet
    .command("status")
    .description("each stack's phase from its outputs and state, without changing anything")
    .argument("<file>", "the fleet file")
    .option("--json", "print the statuses as JSON")
    .action(
      action(async (file: string, opts: { json?: boolean }) => {
        const parsed = parseFleetFile(readInputFile("fleet file", file), path.resolve(file));
        await checkStacksExist(parsed);
        const rows = [];
        for (const stack of [...parsed.stacks].sort((a, b) => a.wave - b.wave)) {
          const record = await readStackRecord(parsed, stack);
          rows.push({ stack: stack.name, wave: stack.wave, backend: stack.backend, ...stackPhase(record), servicesMoving: record.outputs.servicesMoving, nodesMoving: record.outputs.nodesMoving });
        }
        if (opts.json) {
          writeJson({ stacks: rows });
          return 0;
        }
        const columns = [{ header: "wave" }, { header: "stack", wrap: true, min: 8 }, { header: "phase" }, { header: "detail", wrap: true, min: 20 }, { header: "backend", detail: 2 }];
        process.stdout.write(`${renderTable(columns, rows.map((r) => [String(r.wave), r.stack, r.phase, r.detail, r.backend]), outputWidth())}\n`);
        return 0;
      }),
    );
}
