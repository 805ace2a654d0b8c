import { Command } from "commander";
import { buildPlan } from "../lib/plan/plan";
import { planAddressRun } from "../lib/plan/addressRunPlan";
import { movesRanges } from "../lib/config/migrationConfig";
import { planNodeAddresses } from "../lib/plan/nodeAddressPlan";
import { renderAddressRunHeader, renderNodeAddressPlan } from "../lib/plan/nodeAddressReport";
import { renderPlan } from "../lib/plan/planReport";
import { openShiftRunbook } from "../lib/plan/openShiftRunbook";
import { renderOpenShiftRunbook } from "../lib/plan/openShiftRunbookReport";
import { addSourceOptions, loadConfigAndInventory, SourceOptions } from "./context";
import { action, outputWidth, writeJson } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

export function registerPlanCommand(program: Command): void {
  addSourceOptions(program.command("plan").description("print the migration plan: phases, Service IP map, node map (read-only)"))
    .option("--json", "print the plan as JSON")
    .action(
      action(async (opts: SourceOptions & { json?: boolean }) => {
        // plan changes nothing: node address changes are shown here, while every other command refuses them
        const { config, inventory } = await loadConfigAndInventory(opts, ensureSandboxRunning, { planOnly: true });
        if (config.platform === "openshift") {
          // OpenShift's operators own its ranges, etcd and certificates: only the node address runbook, never run
          const nodeAddressPlan = planNodeAddresses(config, inventory);
          const runbook = openShiftRunbook(nodeAddressPlan, config, new Date().toISOString().slice(0, 10).replace(/-/g, ""));
          if (opts.json) writeJson({ platform: "openshift", executes: false, nodeAddressPlan, openShiftRunbook: runbook });
          else process.stdout.write(renderOpenShiftRunbook(nodeAddressPlan, runbook));
          return;
        }
        const nodeAddressPlan = planNodeAddresses(config, inventory);
        if (!movesRanges(config)) {
          // nodeAddresses alone: the address plan is the whole run (its JSON is the plan `gate --plan` reads)
          const plan = planAddressRun(config, inventory, nodeAddressPlan);
          if (opts.json) writeJson({ ...plan, nodeAddressPlan });
          else process.stdout.write(`${renderAddressRunHeader(plan)}${renderNodeAddressPlan(nodeAddressPlan)}`);
          return;
        }
        const plan = buildPlan(config, inventory);
        if (opts.json) writeJson(nodeAddressPlan.steps.length > 0 ? { ...plan, nodeAddressPlan } : plan);
        else process.stdout.write(renderPlan(plan, { width: outputWidth() }) + renderNodeAddressPlan(nodeAddressPlan));
      }),
    );
}
