import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO, runCli } from "../../support/cli";

/** `cidr-migration report` in its own process: files written, the plan from --plan or from --config + --inventory, bad input exit 2. */

const FIXTURES = path.join(REPO, "test", "fixtures");
/** The real `bin/cidr-migration report`, in its own process. */
const report = (args: string[]) => runCli(["report", ...args]);

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
