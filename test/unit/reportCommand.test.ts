import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** `cidr-migration report` in its own process: files written, the plan from --plan or from --config + --inventory, bad input exit 2. */

const REPO = path.resolve(__dirname, "..", "..");
const FIXTURES = path.join(REPO, "test", "fixtures");
const PROGRAM = `
  const { Command } = require("commander");
  const program = new Command("cidr-migration").exitOverride();
  require(${JSON.stringify(path.join(REPO, "cli", "reportCommand.ts"))}).registerReportCommand(program);
  for (const sub of program.commands) sub.exitOverride();
  program.parseAsync(process.argv.slice(1), { from: "user" }).catch((err) => { process.exitCode = err.exitCode === 0 ? 0 : 2; });
`;

function report(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", PROGRAM, "report", ...args], { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("cidr-migration report (CLI)", function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "report-cli-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes the same report from --plan as from --config + --inventory (the plan is rebuilt, not read back)", async () => {
    const fromPlan = path.join(dir, "from-plan");
    const fromConfig = path.join(dir, "from-config");
    const a = await report(["--plan", path.join(FIXTURES, "preview", "plan.json"), "--out", fromPlan]);
    const b = await report(["--config", path.join(FIXTURES, "plan", "stack-small.yaml"), "--inventory", path.join(FIXTURES, "plan", "inventory-small.json"), "--out", fromConfig]);
    assert.deepEqual([a.code, a.stderr, b.code, b.stderr], [0, "", 0, ""]);
    assert.equal(a.stdout, `wrote ${path.join(fromPlan, "report.html")}\nwrote ${path.join(fromPlan, "report.md")}\n`);
    const body = (file: string) => readFileSync(file, "utf8").replace(/Plan from [^;]*; generated \S+/, "");
    assert.equal(body(path.join(fromConfig, "report.md")), body(path.join(fromPlan, "report.md")));
    assert.match(readFileSync(path.join(fromPlan, "report.md"), "utf8"), /^# CIDR migration report\n\nPlan from plan\.json; generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ by cidr-migration report\./);
  });

  it("exits 2 with one line for a verify file that is a preflight report, and without --out", async () => {
    const wrong = await report(["--plan", path.join(FIXTURES, "preview", "plan.json"), "--verify", path.join(FIXTURES, "preview", "preflight-clean.json"), "--out", path.join(dir, "x")]);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /^cidr-migration: .*preflight-clean\.json: this is a preflight report, expected verify; write it with: cidr-migration verify --stack NAME --json > .*\n$/);
    const noOut = await report(["--plan", path.join(FIXTURES, "preview", "plan.json")]);
    assert.equal(noOut.code, 2);
    assert.match(noOut.stderr, /required option '--out <dir>' not specified/);
  });
});
