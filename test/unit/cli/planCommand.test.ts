import * as assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Inventory } from "../../../lib/plan/inventory";
import { Plan } from "../../../lib/plan/planModel";
import { REPO, runCli } from "../../support/cli";

/**
 * `cidr-migration plan --config FILE --inventory FILE` in its own process (the real bin): the defects of issue 20
 * are exit 2 and one readable line naming the key or object, never an internal error (exit 70) or a plan.
 */

const FIXTURES = path.join(REPO, "test", "fixtures", "plan");
const STACK = readFileSync(path.join(FIXTURES, "stack-small.yaml"), "utf8");
const inventory = () => JSON.parse(readFileSync(path.join(FIXTURES, "inventory-small.json"), "utf8")) as Inventory;

describe("cidr-migration plan (CLI): refusals and bad inventories (issue 20)", function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "plan-cli-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const file = (name: string, text: string) => {
    const f = path.join(dir, name);
    writeFileSync(f, text);
    return f;
  };
  const stack = (name: string, edit: (text: string) => string) => {
    const text = edit(STACK);
    assert.notEqual(text, STACK, `the edit for ${name} changed nothing`);
    return file(`Pulumi.${name}.yaml`, text);
  };
  const plan = (config: string, inv: string, json = false) => runCli(["plan", "--config", config, "--inventory", inv, ...(json ? ["--json"] : [])]);
  const oneLine = (r: { code: number | null; stdout: string; stderr: string }, pattern: RegExp) => {
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr.split("\n").length, 2, r.stderr);
    assert.doesNotMatch(r.stderr, /internal error|\n\s+at /);
    assert.match(r.stderr, pattern);
  };

  it("exit 2 naming the key: a missing DNS Service, a contradicted CNI, a wrong serviceCidr.from, an unlisted node", async () => {
    const inv = file("inventory.json", JSON.stringify(inventory()));
    const [dns, cni, from, node] = await Promise.all([
      plan(stack("dns", (t) => `${t}  cidr-migration:dns:\n    service: kube-system/coredns\n`), inv, true),
      plan(stack("cni", (t) => t.replace("cidr-migration:cni: auto", "cidr-migration:cni: flannel")), inv),
      plan(stack("from", (t) => t.replace("from: 10.96.0.0/12", "from: 10.200.0.0/16")), inv),
      plan(stack("node", (t) => t.replace(/^ {4}- \{ name: worker-3,.*\n/m, "")), inv),
    ]);
    oneLine(dns, /^cidr-migration: cidr-migration:dns\.service: Service kube-system\/coredns does not exist in the cluster; .*kube-system\/kube-dns/);
    oneLine(cni, /^cidr-migration: cidr-migration:cni: is "flannel" but discovery finds Calico .*; set it to "calico" or "auto"\n$/);
    oneLine(from, /^cidr-migration: cidr-migration:serviceCidr\.from: 10\.200\.0\.0\/16 is not the cluster's Service range: Service default\/kubernetes holds 10\.96\.0\.1/);
    oneLine(node, /^cidr-migration: cidr-migration:nodes: Node worker-3 is in the cluster but not listed, .*add \{ name: worker-3, host: 192\.168\.10\.23, role: worker \}/);
  });

  it("exit 2 and one line for a bad --inventory: a node listed twice, a numeric or a nonsense clusterIP", async () => {
    const twice = inventory();
    twice.nodes.push({ ...twice.nodes[0] });
    const numeric = inventory();
    (numeric.services.find((s) => s.name === "web") as unknown as Record<string, unknown>).clusterIP = 12345;
    const banana = inventory();
    banana.services.find((s) => s.name === "web")!.clusterIP = "banana";
    const config = path.join(FIXTURES, "stack-small.yaml");
    const [a, b, c] = await Promise.all([
      plan(config, file("twice.json", JSON.stringify(twice))),
      plan(config, file("numeric.json", JSON.stringify(numeric))),
      plan(config, file("banana.json", JSON.stringify(banana))),
    ]);
    oneLine(a, /^cidr-migration: --inventory .*twice\.json: nodes\[6\] \(worker-2\) lists Node worker-2 again \(first at nodes\[0\]\); .*cidr-migration inventory --kubeconfig FILE\n$/);
    oneLine(b, /^cidr-migration: --inventory .*numeric\.json: services\[2\] \(shop\/web\) clusterIP is 12345, not an IP address, "None" or absent; /);
    oneLine(c, /^cidr-migration: --inventory .*banana\.json: services\[2\] \(shop\/web\) clusterIP is "banana", not an IP address, "None" or absent; /);
  });

  it("a Service-range expansion plans no Service, kubernetes or DNS step (exit 0)", async () => {
    const inv = inventory();
    for (const s of inv.services) if (s.clusterIP && s.clusterIP !== "None") s.clusterIP = s.clusterIP.replace(/^10\.\d+\./, "10.96.");
    inv.kubeadmConfig!.serviceSubnet = "10.96.0.0/16";
    const r = await plan(stack("expand", (t) => t.replace("from: 10.96.0.0/12\n    to: 10.112.0.0/12", "from: 10.96.0.0/16\n    to: 10.96.0.0/15")), file("expand.json", JSON.stringify(inv)), true);
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(r.stdout) as Plan;
    assert.deepEqual(p.phases.filter((ph) => ph.name === "services" || ph.name === "dns").map((ph) => [ph.name, ph.steps.length]), [["services", 0], ["dns", 0]]);
    assert.deepEqual(p.services.filter((s) => s.action === "recreate"), []);
  });
});
