import { Command } from "commander";
import { buildPlan } from "../lib/plan";
import { renderPlan } from "../lib/planReport";
import { loadConfigAndInventory, SourceOptions } from "./context";
import { action, writeJson } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

export function addSourceOptions(cmd: Command): Command {
  return cmd
    .option("--stack <name>", "read Pulumi.<name>.yaml (default: the local sandbox stack)")
    .option("--config <file>", "read this Pulumi.<stack>.yaml file")
    .option("--kubeconfig <file>", "admin kubeconfig (default: the stack's cidr-migration:kubeconfig)")
    .option("--inventory <file>", "plan from an inventory JSON written by `cidr-migration inventory`");
}

export function registerPlanCommand(program: Command): void {
  addSourceOptions(program.command("plan").description("print the migration plan: phases, Service IP map, node map (read-only)"))
    .option("--json", "print the plan as JSON")
    .action(
      action(async (opts: SourceOptions & { json?: boolean }) => {
        const { config, inventory } = await loadConfigAndInventory(opts, ensureSandboxRunning);
        const plan = buildPlan(config, inventory);
        if (opts.json) writeJson(plan);
        else process.stdout.write(renderPlan(plan));
      }),
    );
}
