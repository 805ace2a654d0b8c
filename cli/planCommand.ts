import { Command } from "commander";
import { buildPlan } from "../lib/plan/plan";
import { renderPlan } from "../lib/plan/planReport";
import { addSourceOptions, loadConfigAndInventory, SourceOptions } from "./context";
import { action, outputWidth, writeJson } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

export function registerPlanCommand(program: Command): void {
  addSourceOptions(program.command("plan").description("print the migration plan: phases, Service IP map, node map (read-only)"))
    .option("--json", "print the plan as JSON")
    .action(
      action(async (opts: SourceOptions & { json?: boolean }) => {
        const { config, inventory } = await loadConfigAndInventory(opts, ensureSandboxRunning);
        const plan = buildPlan(config, inventory);
        if (opts.json) writeJson(plan);
        else process.stdout.write(renderPlan(plan, { width: outputWidth() }));
      }),
    );
}
