import { Command } from "commander";
import { renderFindingsJson, renderFindingsTable } from "../lib/report/findings";
import { parsePlanDocument } from "../lib/gate/planDocument";
import { runVerify } from "../lib/verify";
import { addStackOptions, loadConfigAndKubeConfig, readInputFile, SourceOptions } from "./context";
import { action, outputWidth } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

/**
 * `cidr-migration verify`: read-only proof after a migration that nothing is left in the old ranges. Exit 0 when
 * clean, 1 with the list of leftovers, 2 for invalid input, 3 when the cluster cannot be reached.
 */

interface VerifyOptions extends SourceOptions {
  json?: boolean;
  plan?: string;
}

export function registerVerifyCommand(program: Command): void {
  addStackOptions(
    program
      .command("verify")
      .description("read-only check after migrating that nothing is left in the old ranges; exit 0 clean, 1 leftovers, 2 invalid input, 3 unreachable"),
  )
    .option("--json", "print the findings as JSON")
    .option("--plan <file>", "the plan JSON reviewed before the run (cidr-migration plan --json): the DNS Service's planned address")
    .action(
      action(async (opts: VerifyOptions) => {
        const reviewedPlan = opts.plan ? { plan: parsePlanDocument(readInputFile("--plan", opts.plan), opts.plan), source: `the plan file ${opts.plan}` } : undefined;
        const { config, kubeConfig } = await loadConfigAndKubeConfig(opts, ensureSandboxRunning);
        const report = await runVerify({ config, kubeConfig, reviewedPlan });
        process.stdout.write(opts.json ? renderFindingsJson(report) : renderFindingsTable(report, { width: outputWidth() }));
        return report.exitCode;
      }),
    );
}
