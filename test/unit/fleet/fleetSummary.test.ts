/** The fleet preview's summary (lib/fleet/fleetSummary, fleetSummaryHtml): the table, the JSON read back, the page. */
import { strict as assert } from "assert";
import { ConfigError, UserError } from "../../../lib/config/errors";
import { FleetSummary, fleetVerdict, parseFleetSummary, renderFleetTable } from "../../../lib/fleet/fleetSummary";
import { renderFleetSummaryHtml } from "../../../lib/fleet/fleetSummaryHtml";
import { engineErrorLine } from "../../../lib/fleet/engineError";

const SUMMARY: FleetSummary = {
  fleetFile: "/srv/fleet.yaml",
  generatedAt: "2026-12-03T10:00:00.000Z",
  rows: [
    { stack: "dev-a", wave: 1, backend: "file:///state", verdict: "pass", servicesMoving: 12, nodesMoving: 4, estimate: { oursSeconds: 1410, manualRunbookMinutes: { min: 150, max: 162 } }, changes: { create: 72 }, findings: [], notes: [], previewFile: "previews/dev-a-0123abcd.json" },
    { stack: "prod<1>", wave: 2, backend: "s3://state", verdict: "fail", servicesMoving: 3, nodesMoving: 2, changes: { create: 40 }, findings: [{ code: "SERVICE_IP_DIFFERS", object: "Service default/web", message: "moves to 10.112.0.9, the plan says 10.112.0.7" }], notes: [], previewFile: "previews/prod-1-89abcdef.json" },
    { stack: "stage", wave: 1, backend: "file:///state", verdict: "error", changes: {}, findings: [], notes: [], error: "the preview failed: invalid stack config" },
  ],
};

const DONE: FleetSummary["rows"][number] = { stack: "dev-b", wave: 1, backend: "file:///state", verdict: "done", changes: {}, findings: [], notes: [] };

describe("fleet: the summary", () => {
  it("a table row per cluster: wave, gate, Services and nodes moving, the estimate beside the manual runbook, findings", () => {
    const table = renderFleetTable(SUMMARY.rows);
    assert.match(table, /^1\s+dev-a\s+pass\s+12\s+4\s+23m 30s \(manual 150-162 min\)\s+none$/m);
    assert.match(table, /^2\s+prod<1>\s+fail\s+3\s+2\s+-\s+SERVICE_IP_DIFFERS: moves to 10\.112\.0\.9, the plan says 10\.112\.0\.7$/m);
    assert.match(table, /^1\s+stage\s+error\s+-\s+-\s+-\s+the preview failed: invalid stack config$/m);
  });

  it("the fleet passes only when every cluster passes or is done; a failed preview is an error", () => {
    assert.equal(fleetVerdict(SUMMARY.rows), "error");
    assert.equal(fleetVerdict(SUMMARY.rows.slice(0, 2)), "fail");
    assert.equal(fleetVerdict(SUMMARY.rows.slice(0, 1)), "pass");
    assert.equal(fleetVerdict([SUMMARY.rows[0], DONE]), "pass");
    assert.match(renderFleetTable([DONE]), /^1\s+dev-b\s+done\s+-\s+-\s+-\s+done: verified by an earlier up; not previewed again$/m);
  });

  it("reads back what it wrote; refuses what is not a summary, saying how to write one", () => {
    assert.deepEqual(parseFleetSummary(JSON.stringify(SUMMARY), "s.json"), SUMMARY);
    assert.throws(() => parseFleetSummary("{", "s.json"), (e: Error) => e instanceof UserError && /^--summary s\.json: not JSON .*; write it with: cidr-migration fleet preview FLEET\.yaml --out DIR$/.test(e.message));
    assert.throws(() => parseFleetSummary('{"fleetFile": "f", "rows": [{"stack": 1}]}', "s.json"), (e: Error) => e instanceof ConfigError && /rows\[0\]: is not a summary row/.test(e.message));
  });

  it("the page: the report's style, no network, a row per cluster in wave order, every value escaped", () => {
    const html = renderFleetSummaryHtml(SUMMARY);
    assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; /);
    assert.doesNotMatch(html, /<script|https?:\/\//);
    const rows = [...html.matchAll(/<tr><td class="num">(\d)<\/td><td class="mono">([^<]*)<\/td><td><span class="verdict (ok|bad)">(\w+)</g)].map((m) => m.slice(1).join(" "));
    assert.deepEqual(rows, ["1 dev-a ok pass", "1 stage bad error", "2 prod&lt;1&gt; bad fail"]);
    assert.match(html, /<b>15<\/b><span>Services moving<\/span>/);
    assert.match(html, /<span class="badge blocker">SERVICE_IP_DIFFERS<\/span> <code>Service default\/web<\/code>/);
    assert.ok(!html.includes("prod<1>"), "the stack name is escaped");
  });
});

describe("fleet: the engine's error line", () => {
  it("the failing step's own error and its name, not the engine's closing 'update failed' or the captured output around it", () => {
    const message = [
      "code: 255",
      " stdout: Updating (fleet-a):",
      "    pulumi-nodejs:dynamic/cidr-migration:RemoteScript control-plane-cp-1-backup creating failed error: cannot run the step on root@127.0.0.1:2201 over SSH (ssh exit 255)",
      "    error: update failed",
      " stderr: ",
    ].join("\n");
    assert.equal(engineErrorLine(message), "cannot run the step on root@127.0.0.1:2201 over SSH (ssh exit 255) (step control-plane-cp-1-backup)", "with the step that failed: the error itself names only a host");
    const diagnostics = ["Diagnostics:", "  pulumi-nodejs:dynamic/cidr-migration:RemoteScript (nodes-worker-2-kubelet-stop):", "    error: connect ECONNREFUSED 172.31.250.13:22", "", "  pulumi:pulumi:Stack (cidr-migration-nodes):", "    error: update failed"].join("\n");
    assert.equal(engineErrorLine(diagnostics), "connect ECONNREFUSED 172.31.250.13:22 (step nodes-worker-2-kubelet-stop)");
    assert.equal(engineErrorLine("code: 1\n stdout: \n stderr: error: update failed\n"), "update failed");
    assert.equal(engineErrorLine("error: invalid stack config"), "invalid stack config");
    assert.equal(engineErrorLine("\n\n"), "the engine failed without a message");
  });
});
