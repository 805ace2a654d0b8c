import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { validateConfig } from "../../../lib/config/config";
import { buildReport, Finding, renderFindingsTable } from "../../../lib/report/findings";
import { Inventory, ServiceInfo } from "../../../lib/plan/inventory";
import { formatDurationRange, renderPlan } from "../../../lib/plan/planReport";
import { Plan } from "../../../lib/plan/planModel";
import { probeEtcd } from "../../../lib/preflight/etcdProbe";
import { renderReportMarkdown } from "../../../lib/report/reportMarkdown";
import { renderTable, TextColumn } from "../../../lib/report/textTable";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { verifyServiceAddresses } from "../../../lib/verify/serviceAddresses";
import { outputWidth } from "../../../cli/run";
import { runCli } from "../../support/cli";
import { rangeConfig } from "../../support/rangeConfig";

// Issue 20, "Output and advice" and the preflight etcd finding: what the tool prints must fit the terminal without
// cutting anything, say each thing once, and give advice that fits the object.

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "plan");
const goldenPlan = (): Plan => JSON.parse(fs.readFileSync(path.join(FIXTURES, "plan-small.golden.json"), "utf8")) as Plan;

function assertFits(text: string, width: number): void {
  for (const line of text.split("\n")) assert.ok(line.length <= width, `longer than ${width}: ${JSON.stringify(line)}`);
}

/** The cells of a table rendered by renderTable, read back from the column offsets its dashes give. */
function readBack(text: string): string[][] {
  const lines = text.split("\n");
  const dashes = lines[1];
  const spans: Array<[number, number]> = [];
  for (const m of dashes.matchAll(/-+/g)) spans.push([m.index!, m.index! + m[0].length]);
  const rows: string[][] = [];
  for (const line of lines.slice(2)) {
    const cells = spans.map(([a, b]) => line.slice(a, b).trim());
    if (line[0] !== " " && cells[0] !== "") rows.push(cells);
    else cells.forEach((c, i) => (rows[rows.length - 1][i] += c));
  }
  return rows;
}

describe("output: tables fit the width and cut nothing", () => {
  const columns: TextColumn[] = [
    { header: "name", wrap: true, min: 12 },
    { header: "address" },
    { header: "reason", wrap: true, min: 16 },
  ];
  const rows = [
    ["ingress-nginx/ingress-nginx-controller", "10.111.193.211", "re-creating a LoadBalancer Service can give it a new external address"],
    ["web/cart", "10.97.180.94", "ClusterIP in the old range"],
  ];

  it("without a width, one line per row padded to the widest cell, as before", () => {
    assert.equal(renderTable(columns, rows), [
      "name                                    address         reason",
      "--------------------------------------  --------------  ---------------------------------------------------------------------",
      "ingress-nginx/ingress-nginx-controller  10.111.193.211  re-creating a LoadBalancer Service can give it a new external address",
      "web/cart                                10.97.180.94    ClusterIP in the old range",
    ].join("\n"));
  });

  for (const width of [80, 60, 50]) {
    it(`at ${width} columns every line fits, and every cell reads back whole`, () => {
      const text = renderTable(columns, rows, width);
      assertFits(text, width);
      assert.deepEqual(readBack(text).map((r) => r.map((c) => c.replace(/ /g, ""))), rows.map((r) => r.map((c) => c.replace(/ /g, ""))));
    });
  }

  it("a column that may move goes under its row rather than being cut", () => {
    const text = renderTable([{ header: "name" }, { header: "address" }, { header: "reason", wrap: true, min: 40, detail: 1 }], rows, 60);
    assertFits(text, 60);
    assert.match(text, /^ingress-nginx\/ingress-nginx-controller  10\.111\.193\.211\n {4}reason: re-creating a LoadBalancer Service can give it a\n {12}new external address$/m);
    assert.match(text, /^ {4}reason: ClusterIP in the old range$/m);
  });

  it("too narrow for any table: each row as header: value lines, still whole", () => {
    const text = renderTable(columns, rows, 30);
    assertFits(text, 30);
    assert.match(text, /^name: web\/cart\naddress: 10\.97\.180\.94\nreason: ClusterIP in the old\n {2}range$/m);
  });

  it("the plan at 80 columns: every line fits, every Service and reason is there; unlimited it is unchanged", () => {
    const plan = goldenPlan();
    const narrow = renderPlan(plan, { width: 80 });
    assertFits(narrow, 80);
    for (const s of plan.services) {
      assert.ok(narrow.replace(/\s+/g, "").includes(`${s.namespace}/${s.name}`.replace(/\s+/g, "")) || narrow.includes(s.name), s.name);
      assert.ok(narrow.replace(/\s+/g, " ").includes(`reason: ${s.reason}`), `reason of ${s.name}`);
    }
    for (const w of plan.warnings) assert.ok(narrow.replace(/\s+/g, " ").includes(w.message), w.code);
    assert.equal(renderPlan(plan), renderPlan(plan, { width: 1000 }));
    assert.ok(renderPlan(plan).split("\n").some((l) => l.length > 80), "the fixture is wider than 80 unlimited");
  });

  it("preflight's table at 80 columns: rows, messages and actions wrap; nothing is lost", () => {
    const long: Finding = {
      code: "HARDCODED_SERVICE_IP",
      severity: "blocker",
      object: "ConfigMap monitoring/prometheus-server-configuration-with-a-long-name",
      path: 'data["prometheus.yml"] line 12 column 7 of the scrape configuration',
      message: "names 10.96.0.10, the old DNS Service address, which stops answering once the DNS Service moves to the new range",
      action: "replace the address with the Service's DNS name (kube-dns.kube-system.svc) and roll the pods that read it",
    };
    const report = buildReport("preflight", [long, { ...long, severity: "info", code: "INFO", path: undefined }]);
    const text = renderFindingsTable(report, { width: 80 });
    assertFits(text, 80);
    const flat = text.replace(/\s+/g, " ");
    assert.ok(flat.includes(long.message) && flat.includes(`-> ${long.action}`));
    const words = new Set(text.split(/\s+/));
    for (const word of long.path!.split(" ")) assert.ok(words.has(word), `path word ${word}`);
    assert.equal(renderFindingsTable(report), renderFindingsTable(report, { width: 10_000 }));
  });

  it("the width is COLUMNS, else the terminal's, else none for a pipe", () => {
    assert.equal(outputWidth({ COLUMNS: "80" }, { isTTY: false }), 80);
    assert.equal(outputWidth({}, { isTTY: true, columns: 100 }), 100);
    assert.equal(outputWidth({ COLUMNS: "72" }, { isTTY: true, columns: 100 }), 72);
    assert.equal(outputWidth({}, { isTTY: false }), undefined);
    assert.equal(outputWidth({ COLUMNS: "wide" }, { isTTY: false }), undefined);
  });

  it("the CLI: COLUMNS=80 plan fits 80 columns; --json is the same bytes with or without COLUMNS", async function () {
    this.timeout(90_000);
    const args = ["plan", "--config", path.join(FIXTURES, "stack-small.yaml"), "--inventory", path.join(FIXTURES, "inventory-small.json")];
    const [narrow, json, jsonNarrow] = await Promise.all([
      runCli(args, { env: { COLUMNS: "80" } }),
      runCli([...args, "--json"], { env: { COLUMNS: "" } }),
      runCli([...args, "--json"], { env: { COLUMNS: "80" } }),
    ]);
    assert.equal(narrow.code, 0, narrow.stderr);
    assertFits(narrow.stdout, 80);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(jsonNarrow.stdout, json.stdout);
  });
});

describe("output: estimates", () => {
  it("a range whose ends are equal prints once", () => {
    assert.equal(formatDurationRange(7800, 7800), "2h 10m");
    assert.equal(formatDurationRange(7800, 9000), "2h 10m to 2h 30m");
    const plan = goldenPlan();
    plan.estimate.manualMinutes = { min: 130, max: 130 };
    const text = renderPlan(plan);
    assert.match(text, /\(manual runbook: 2h 10m\)/);
    assert.doesNotMatch(text, /2h 10m to 2h 10m/);
    assert.doesNotMatch(renderReportMarkdown({ plan, source: "plan.json", generatedAt: "2026-12-01T00:00:00Z" }), /2h 10m to 2h 10m/);
  });
});

describe("output: verify's advice fits the object", () => {
  const config = rangeConfig(validateConfig({
    values: {
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      etcd: { endpoints: ["http://127.0.0.1:2379"] },
      nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
    },
  }));
  const svc = (namespace: string, name: string, clusterIP: string): ServiceInfo => ({ namespace, name, type: "ClusterIP", clusterIP, clusterIPs: [clusterIP], hasSelector: true });
  const inventory: Inventory = {
    serverVersion: { major: "1", minor: "37", gitVersion: "v1.37.2" },
    services: [svc("default", "kubernetes", "10.96.0.1"), svc("kube-system", "kube-dns", "10.96.0.10"), svc("web", "api", "10.96.4.4")],
    nodes: [],
    cni: { detected: "calico", calicoPools: [] },
  };
  const findings = verifyServiceAddresses({
    config, inventory, cluster: emptyClusterObjects(),
    targets: { kubernetesServiceIP: "10.112.0.1", dnsServiceIP: "10.112.0.10", dnsSource: "the plan file plan.json" },
  }).filter((f) => f.code === "SERVICE_IN_OLD_RANGE");
  const actionFor = (object: string) => findings.find((f) => f.object === object)!.action;

  it("an ordinary Service: finish the moves, or re-create it without spec.clusterIP", () => {
    assert.match(actionFor("Service web/api"), /re-create this Service without spec\.clusterIP/);
  });

  it("the DNS Service: back at its planned address, never without a ClusterIP", () => {
    const action = actionFor("Service kube-system/kube-dns");
    assert.doesNotMatch(action, /re-create this Service without spec\.clusterIP/);
    assert.match(action, /must keep spec\.clusterIP 10\.112\.0\.10/);
  });

  it("default/kubernetes: the apiserver re-creates it; not by hand", () => {
    const action = actionFor("Service default/kubernetes");
    assert.doesNotMatch(action, /re-create this Service without spec\.clusterIP/);
    assert.match(action, /apiserver re-creates it at the new range's first address/);
  });
});

describe("output: the preflight etcd finding", () => {
  it("an unreachable endpoint's error ends with what went wrong, not a dangling \"Resolution note: \"", async function () {
    this.timeout(15_000);
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (server.address() as net.AddressInfo).port;
        server.close(() => resolve(p));
      });
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "etcd-probe-"));
    try {
      const probe = await probeEtcd({ endpoints: [`http://127.0.0.1:${port}`], snapshotDirectory: dir, timeoutMs: 3000 });
      const status = probe.statuses[0];
      assert.equal(status.ok, false);
      const error = (status as { error: string }).error;
      assert.doesNotMatch(error, /Resolution note/);
      assert.match(error, /ECONNREFUSED|no answer/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
