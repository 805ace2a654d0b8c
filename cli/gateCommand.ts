import { Command } from "commander";
import { writeFileSync } from "fs";
import { UserError } from "../lib/config/errors";
import { FindingReport } from "../lib/report/findings";
import { parseFindingsDocument } from "../lib/gate/findingsDocument";
import { renderGateMarkdown } from "../lib/gate/gateMarkdown";
import { judgePreview } from "../lib/gate/judgePreview";
import { parsePlanDocument } from "../lib/gate/planDocument";
import { parsePreviewDigest } from "../lib/gate/previewDigest";
import { planRun } from "../lib/plan/runPlan";
import { Plan } from "../lib/plan/planModel";
import { addSourceOptions, loadConfigAndInventory, readInputFile, SourceOptions } from "./context";
import { action } from "./run";
import { ensureSandboxRunning } from "./sandboxCommand";

/**
 * `cidr-migration gate PREVIEW.json`: the CI gate on `pulumi preview --json`. Prints the verdict as markdown (fit
 * for a pull-request comment; also written to --markdown FILE) and exits 0 when the preview does only what the
 * plan explains, 1 when it does not, 2 for bad input, 3 when the cluster (needed only without --plan) is
 * unreachable. Read-only.
 */

export interface GateOptions extends SourceOptions {
  plan?: string;
  preflight?: string;
  markdown?: string;
}

/** The plan from --plan FILE, else built from the stack config and the live cluster (or --inventory). */
export async function loadPlan(opts: SourceOptions & { plan?: string }): Promise<Plan> {
  if (opts.plan) {
    const also = (["stack", "config", "kubeconfig", "inventory"] as const).filter((k) => opts[k] !== undefined);
    if (also.length > 0) throw new UserError(`--plan and --${also[0]} are two sources of the plan; pass only one`);
    return parsePlanDocument(readInputFile("--plan", opts.plan), opts.plan);
  }
  const { config, inventory } = await loadConfigAndInventory(opts, ensureSandboxRunning);
  return planRun(config, inventory);
}

export function loadFindings(flag: string, file: string | undefined, command: "preflight" | "verify"): FindingReport | undefined {
  return file === undefined ? undefined : parseFindingsDocument(readInputFile(flag, file), file, command);
}

export function registerGateCommand(program: Command): void {
  addSourceOptions(
    program
      .command("gate")
      .description("judge `pulumi preview --json` output against the plan: exit 1 when it does something the plan does not explain (read-only)")
      .argument("<preview>", "the output of `pulumi preview --json --show-sames`"),
  )
    .option("--plan <file>", "the reviewed plan, from `cidr-migration plan --json` (default: plan now from the stack and cluster)")
    .option("--preflight <file>", "the report of `cidr-migration preflight --json`: any blocker fails the gate")
    .option("--markdown <file>", "also write the markdown summary (a PR comment) to this file")
    .action(
      action(async (previewFile: string, opts: GateOptions) => {
        const digest = parsePreviewDigest(readInputFile("preview", previewFile), previewFile);
        const preflight = loadFindings("--preflight", opts.preflight, "preflight");
        const plan = await loadPlan(opts);
        const result = judgePreview(digest, plan, preflight);
        const markdown = renderGateMarkdown(result);
        if (opts.markdown) {
          try {
            writeFileSync(opts.markdown, markdown);
          } catch (err) {
            throw new UserError(`--markdown ${opts.markdown}: cannot write the file (${(err as NodeJS.ErrnoException).code ?? String(err)}); pick a writable path`);
          }
        }
        process.stdout.write(markdown);
        return result.exitCode;
      }),
    );
}
