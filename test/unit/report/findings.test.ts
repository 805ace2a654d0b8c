import * as assert from "assert";
import { buildReport, exitCodeFor, Finding, renderFindingsJson, renderFindingsTable } from "../../../lib/report/findings";

const info: Finding = { code: "APISERVER_VERSION", severity: "info", object: "cluster", message: "kube-apiserver v1.20.2", action: "none" };
const warning: Finding = { code: "HARDCODED_SERVICE_IP", severity: "warning", object: "ConfigMap monitoring/prom", path: 'data["prometheus.yml"] line 3', message: "10.96.5.5 is in the old Service range", action: "use the DNS name" };
const blocker: Finding = { code: "KCM_CRASH_PREDICTED", severity: "blocker", object: "Node worker-9", path: "spec.podCIDR", message: "podCIDR outside", action: "add it" };

describe("findings: report, exit code, table and JSON", () => {
  it("exit code: 0 with info only, 1 with any warning or blocker", () => {
    assert.strictEqual(exitCodeFor([]), 0);
    assert.strictEqual(exitCodeFor([info]), 0);
    assert.strictEqual(exitCodeFor([info, warning]), 1);
    assert.strictEqual(exitCodeFor([blocker]), 1);
  });

  it("sorts blockers, then warnings, then info, and counts them", () => {
    const report = buildReport("preflight", [info, warning, blocker]);
    assert.deepStrictEqual(report.findings.map((f) => f.code), ["KCM_CRASH_PREDICTED", "HARDCODED_SERVICE_IP", "APISERVER_VERSION"]);
    assert.deepStrictEqual(report.summary, { blocker: 1, warning: 1, info: 1 });
    assert.strictEqual(report.exitCode, 1);
  });

  it("renders an aligned table with message and action under each row, and a summary line", () => {
    const table = renderFindingsTable(buildReport("preflight", [info, blocker]));
    assert.strictEqual(
      table,
      [
        "SEVERITY  CODE                 OBJECT         PATH",
        "BLOCKER   KCM_CRASH_PREDICTED  Node worker-9  spec.podCIDR",
        "    podCIDR outside",
        "    -> add it",
        "INFO      APISERVER_VERSION    cluster",
        "    kube-apiserver v1.20.2",
        "    -> none",
        "",
        "preflight: 1 blocker, 0 warnings, 1 info: findings need attention (exit 1)",
        "",
      ].join("\n"),
    );
    assert.strictEqual(renderFindingsTable(buildReport("verify", [])), "verify: 0 blockers, 0 warnings, 0 info: clean (exit 0)\n");
  });

  it("JSON carries the command, exit code, summary and every field", () => {
    const parsed = JSON.parse(renderFindingsJson(buildReport("verify", [warning])));
    assert.deepStrictEqual(parsed, { command: "verify", exitCode: 1, summary: { blocker: 0, warning: 1, info: 0 }, findings: [warning] });
  });
});
