import { Command } from "commander";
import { mkdirSync, writeFileSync } from "fs";
import * as path from "path";
import { UserError } from "../lib/config/errors";
import { renderReportHtml } from "../lib/report/reportHtml";
import { renderReportMarkdown } from "../lib/report/reportMarkdown";
import { ReportInput } from "../lib/report/reportInput";
import { addSourceOptions, SourceOptions } from "./context";
import { loadFindings, loadPlan } from "./gateCommand";
import { action } from "./run";

/**
 * `cidr-migration report --out DIR`: writes DIR/report.html (self-contained: opens with no network) and
 * DIR/report.md for the change ticket: the plan, the timeline beside the manual runbook, the Service and node
 * maps, preflight findings and, after `up`, verify results. Read-only towards the cluster.
 */

export interface ReportOptions extends SourceOptions {
  plan?: string;
  preflight?: string;
  verify?: string;
  out: string;
}

function writeReportFile(dir: string, name: string, content: string): string {
  const file = path.join(dir, name);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, content);
  } catch (err) {
    throw new UserError(`--out ${dir}: cannot write ${name} (${(err as NodeJS.ErrnoException).code ?? String(err)}); pick a writable directory`);
  }
  return file;
}

export function registerReportCommand(program: Command): void {
  addSourceOptions(program.command("report").description("write the change ticket's report: report.html (self-contained) and report.md"))
    .option("--plan <file>", "the plan, from `cidr-migration plan --json` (default: plan now from the stack and cluster)")
    .option("--preflight <file>", "include the findings of `cidr-migration preflight --json`")
    .option("--verify <file>", "include the results of `cidr-migration verify --json` (after pulumi up)")
    .requiredOption("--out <dir>", "directory for report.html and report.md (created if missing)")
    .action(
      action(async (opts: ReportOptions) => {
        const preflight = loadFindings("--preflight", opts.preflight, "preflight");
        const verify = loadFindings("--verify", opts.verify, "verify");
        const plan = await loadPlan(opts);
        const input: ReportInput = {
          plan,
          preflight,
          verify,
          source: opts.plan ? path.basename(opts.plan) : opts.config ? path.basename(opts.config) : `stack ${opts.stack ?? "sandbox"}`,
          generatedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
        };
        const html = writeReportFile(opts.out, "report.html", renderReportHtml(input));
        const markdown = writeReportFile(opts.out, "report.md", renderReportMarkdown(input));
        process.stdout.write(`wrote ${html}\nwrote ${markdown}\n`);
      }),
    );
}
