import { Command } from "commander";
import { readFileSync } from "fs";
import { UserError } from "../lib/errors";
import { renderFindingsJson, renderFindingsTable } from "../lib/findings";
import { Plan } from "../lib/planModel";
import { runVerify } from "../lib/verify";
import { addClusterSourceOptions, ClusterSourceOptions, loadConfigAndCluster } from "./preflightCommand";
import { action } from "./run";

/**
 * `cidr-migration verify`: read-only proof after a migration that nothing is left in the old ranges. Exit 0 when
 * clean, 1 with the list of leftovers, 2 for invalid input, 3 when the cluster cannot be reached.
 */

interface VerifyOptions extends ClusterSourceOptions {
  json?: boolean;
  plan?: string;
}

function readPlanFile(file: string): Plan {
  let plan: Partial<Plan>;
  try {
    plan = JSON.parse(readFileSync(file, "utf8")) as Partial<Plan>;
  } catch (err) {
    throw new UserError(`--plan ${file}: not a readable JSON file (${(err as Error).message.split("\n")[0]}); write one before the run with: cidr-migration plan --json > ${file}`);
  }
  if (typeof plan?.dns?.newClusterIP !== "string") {
    throw new UserError(`--plan ${file}: not a plan (no dns.newClusterIP); write one before the run with: cidr-migration plan --json > ${file}`);
  }
  return plan as Plan;
}

export function registerVerifyCommand(program: Command): void {
  addClusterSourceOptions(
    program
      .command("verify")
      .description("read-only check after migrating that nothing is left in the old ranges; exit 0 clean, 1 leftovers, 2 invalid input, 3 unreachable"),
  )
    .option("--plan <file>", "the plan JSON reviewed before the run (cidr-migration plan --json): the DNS Service's planned address")
    .action(
      action(async (opts: VerifyOptions) => {
        const reviewedPlan = opts.plan ? { plan: readPlanFile(opts.plan), source: `the plan file ${opts.plan}` } : undefined;
        const { config, kubeConfig } = await loadConfigAndCluster(opts);
        const report = await runVerify({ config, kubeConfig, reviewedPlan });
        process.stdout.write(opts.json ? renderFindingsJson(report) : renderFindingsTable(report));
        return report.exitCode;
      }),
    );
}
