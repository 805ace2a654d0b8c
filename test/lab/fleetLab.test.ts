// Issue 18 on real clusters (`npm run test:lab`): a fleet of two kubeadm clusters on the node lab, side by side
// (each cp-1 + worker-1 in its own lab network), one stack each, in two waves. The fleet is reviewed; wave 1 fails at
// a node step (cluster 1's worker-1 refuses SSH), and wave 2 never starts; once the fault is fixed, `fleet up`
// resumes the reviewed change, finishes wave 1 and then runs wave 2. Both stacks end "done" (verified), every node
// in the new pod range. The sandboxes' fleets (test/e2e/fleet.test.ts) cannot finish: their nodes are simulated.
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { performance } from "perf_hooks";
import { cidrContains } from "../../lib/net/cidr";
import { fleetCli as cli } from "../e2e/fleetSandboxes";
import { buildLab, defaultSite, extraSite, LAB_RANGES, labDown, LabInfo, LabSite, labUp, stackEnv } from "../testbed/nodes/labStack";
import { inNode } from "../testbed/nodes/inNode";

const REPO_ROOT = path.join(__dirname, "..", "..");
const FAULT_TABLE = "cidr_migration_fault";
const SITES: LabSite[] = [extraSite(1, ["cp-1", "worker-1"]), extraSite(2, ["cp-1", "worker-1"])];

describe("fleet on real clusters: two waves; a failed stack stops wave 1, and after the fix both waves finish", function () {
  this.timeout(45 * 60_000);
  // the builds (about 40 minutes on a cold machine) before any case's own time starts
  before(async function () {
    this.timeout(90 * 60_000);
    await buildLab();
  });
  const labs: LabInfo[] = [];
  let work: string;
  let fleetFile: string;
  let env: Record<string, string>;

  before(async () => {
    await labDown(defaultSite()); // the machine's cores go to the fleet's clusters
    for (const site of SITES) await labDown(site);
    for (const [i, site] of SITES.entries()) {
      // one passphrase for the fleet's stacks: the engine reads it from the environment, once for every stack
      if (i > 0) {
        fs.mkdirSync(site.dir, { recursive: true });
        fs.copyFileSync(path.join(SITES[0].dir, "passphrase"), path.join(site.dir, "passphrase"));
      }
      const started = performance.now();
      labs.push(await labUp(site));
      console.log(`      lab ${site.stack}: up in ${Math.round((performance.now() - started) / 1000)} s`);
    }
    work = fs.mkdtempSync(path.join(os.tmpdir(), "lab-fleet-"));
    fleetFile = path.join(work, "fleet.yaml");
    env = stackEnv(SITES[0].dir);
    fs.writeFileSync(fleetFile, [
      `project: ${REPO_ROOT}`,
      "concurrency: 1",
      "stacks:",
      ...labs.map((lab, i) => `  - { name: ${lab.stack}, wave: ${i + 1}, backend: '${stackEnv(lab.labDir).PULUMI_BACKEND_URL}' }`),
      "",
    ].join("\n"));
    delete env.PULUMI_BACKEND_URL; // each stack's backend is the fleet file's
  });

  after(async () => {
    for (const site of SITES) await labDown(site);
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const status = async () => {
    const result = await cli(["fleet", "status", fleetFile, "--json"], env);
    assert.equal(result.exitCode, 0, result.stderr);
    return (JSON.parse(result.stdout).stacks as Array<{ stack: string; phase: string }>).map((s) => `${s.stack}: ${s.phase}`);
  };
  const up = async () => {
    const started = performance.now();
    const result = await cli(["fleet", "up", fleetFile, "--summary", path.join(work, "review", "fleet-summary.json")], env);
    console.log(`      fleet up: exit ${result.exitCode} in ${Math.round((performance.now() - started) / 1000)} s`);
    return result;
  };
  const faultOnFirstWorker = (...command: string[]) => inNode("worker-1", ["nft", ...command], SITES[0]);

  it("reviewed; wave 1 fails at a node step and wave 2 never starts; after the fix both waves finish: done, every node in the new range", async () => {
    const reviewed = await cli(["fleet", "preview", fleetFile, "--out", path.join(work, "review")], env);
    assert.equal(reviewed.exitCode, 0, `${reviewed.stdout}\n${reviewed.stderr}`);
    assert.deepEqual(await status(), labs.map((lab) => `${lab.stack}: not started`));

    // the fault: the first cluster's worker-1 refuses SSH (a reset, so the step fails at once rather than timing out)
    faultOnFirstWorker("add", "table", "inet", FAULT_TABLE);
    faultOnFirstWorker("add", "chain", "inet", FAULT_TABLE, "input", "{ type filter hook input priority -10 ; }");
    faultOnFirstWorker("add", "rule", "inet", FAULT_TABLE, "input", "tcp", "dport", "22", "reject", "with", "tcp", "reset");
    const failed = await up();
    assert.equal(failed.exitCode, 1, `${failed.stdout}\n${failed.stderr}`);
    assert.match(`${failed.stdout}\n${failed.stderr}`, /worker-1/, "the failure names the node");
    assert.deepEqual(await status(), [`${labs[0].stack}: failed`, `${labs[1].stack}: not started`], "wave 2 never started");

    faultOnFirstWorker("delete", "table", "inet", FAULT_TABLE);
    const resumed = await up();
    assert.equal(resumed.exitCode, 0, `${resumed.stdout}\n${resumed.stderr}`);
    assert.deepEqual(await status(), labs.map((lab) => `${lab.stack}: done`));

    for (const lab of labs) {
      const kubectl = spawnSync(path.join(lab.labDir, "bin", "kubectl"), ["--kubeconfig", lab.kubeconfigPath, "get", "nodes", "-o", "json"], { encoding: "utf8" });
      const nodes = JSON.parse(kubectl.stdout).items as Array<{ metadata: { name: string }; spec: { podCIDR: string } }>;
      assert.equal(nodes.length, lab.nodes.length, lab.stack);
      for (const n of nodes) assert.ok(cidrContains(LAB_RANGES.podCidr.to, n.spec.podCIDR), `${lab.stack} ${n.metadata.name} ${n.spec.podCIDR}`);
    }
  });
});
