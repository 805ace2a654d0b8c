import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { REPO, runCli } from "../../support/cli";

/** `cidr-migration gate` in its own process, as CI runs it: the real bin, so exit codes and output are the real ones. */

const FIXTURES = path.join(REPO, "test", "fixtures", "preview");
const fixture = (name: string) => path.join(FIXTURES, name);
/** The real `bin/cidr-migration gate`, in its own process. */
const gate = (args: string[]) => runCli(["gate", ...args]);

describe("cidr-migration gate (CLI)", function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "gate-cli-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("exits 0 and prints the PASS summary for the planned preview", async () => {
    const r = await gate([fixture("pass.json"), "--plan", fixture("plan.json"), "--preflight", fixture("preflight-clean.json")]);
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^<!-- cidr-migration-gate -->\n## cidr-migration gate: PASS\n/);
  });

  it("plans itself from --config and --inventory when no --plan is given (the same plan: PASS)", async () => {
    const PLAN_FIXTURES = path.join(REPO, "test", "fixtures", "plan");
    const r = await gate([fixture("pass.json"), "--config", path.join(PLAN_FIXTURES, "stack-small.yaml"), "--inventory", path.join(PLAN_FIXTURES, "inventory-small.json"), "--preflight", fixture("preflight-clean.json")]);
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    assert.match(r.stdout, /## cidr-migration gate: PASS/);
  });

  it("exits 1, prints the reasons and writes the same markdown to --markdown", async () => {
    const out = path.join(dir, "gate.md");
    const r = await gate([fixture("outside-delete-replace.json"), "--plan", fixture("plan.json"), "--markdown", out]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /## cidr-migration gate: FAIL \(2 reasons\)/);
    assert.match(r.stdout, /`OUTSIDE_RESOURCE_DELETED` \| shop-web \(kubernetes:core\/v1:Service\)/);
    assert.equal(readFileSync(out, "utf8"), r.stdout);
  });

  it("exits 1 on preflight blockers", async () => {
    const r = await gate([fixture("pass.json"), "--plan", fixture("plan.json"), "--preflight", fixture("preflight-blocker.json")]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /`PREFLIGHT_BLOCKER` \| ConfigMap monitoring\/prometheus-config/);
  });

  for (const [what, args, message] of [
    ["a missing preview file", [path.join(FIXTURES, "nope.json"), "--plan", fixture("plan.json")], /^cidr-migration: preview .*nope\.json: cannot read the file \(ENOENT\); check the path\n$/],
    ["the streaming event log", [fixture("streaming-events.jsonl"), "--plan", fixture("plan.json")], /^cidr-migration: .*streaming-events\.jsonl: this is the streaming event log.*PULUMI_ENABLE_STREAMING_JSON_PREVIEW.*\n$/],
    ["a plan file that is a preview", [fixture("pass.json"), "--plan", fixture("pass.json")], /^cidr-migration: .*pass\.json: not a plan \(no serviceCidr.*\n$/],
    ["--plan together with --stack", [fixture("pass.json"), "--plan", fixture("plan.json"), "--stack", "prod"], /^cidr-migration: --plan and --stack are two sources of the plan; pass only one\n$/],
    ["a verify report passed as --preflight", [fixture("pass.json"), "--plan", fixture("plan.json"), "--preflight", fixture("verify-after-up.json")], /^cidr-migration: .*verify-after-up\.json: this is a verify report, expected preflight; .*\n$/],
  ] as const) {
    it(`exits 2 with one line for ${what}`, async () => {
      const r = await gate([...args]);
      assert.equal(r.code, 2);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, message);
    });
  }
});
