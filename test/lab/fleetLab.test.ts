// Issue 18's last case on real nodes (`npm run test:lab`): a fleet whose stack is the node lab's cluster is
// reviewed, fails at a node step (worker-2 refuses SSH), and after the fault is fixed `fleet up` resumes the reviewed
// change and finishes: the stack's phase is "done" (verified), every node in the new pod range. The sandboxes'
// fleets (test/e2e/fleet.test.ts) cannot finish: their nodes are simulated.
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { cidrContains } from "../../lib/net/cidr";
import { fleetCli as cli } from "../e2e/fleetSandboxes";
import { LAB_RANGES, labDir, labDown, LabInfo, labUp, stackEnv } from "../testbed/nodes/labStack";
import { inNode } from "../testbed/nodes/inNode";

const REPO_ROOT = path.join(__dirname, "..", "..");
const FAULT_TABLE = "cidr_migration_fault";

describe("fleet on real nodes: a failed stack, fixed, resumes and finishes", function () {
  this.timeout(30 * 60_000);
  let lab: LabInfo;
  let work: string;
  let fleetFile: string;
  let env: Record<string, string>;

  before(async () => {
    await labDown();
    lab = await labUp();
    work = fs.mkdtempSync(path.join(os.tmpdir(), "lab-fleet-"));
    fleetFile = path.join(work, "fleet.yaml");
    env = stackEnv();
    fs.writeFileSync(fleetFile, [
      `project: ${REPO_ROOT}`,
      "concurrency: 1",
      "stacks:",
      `  - { name: ${lab.stack}, wave: 1, backend: '${env.PULUMI_BACKEND_URL}' }`,
      "",
    ].join("\n"));
    delete env.PULUMI_BACKEND_URL; // each stack's backend is the fleet file's
  });

  after(async () => {
    await labDown();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const status = async () => {
    const result = await cli(["fleet", "status", fleetFile, "--json"], env);
    assert.equal(result.exitCode, 0, result.stderr);
    return (JSON.parse(result.stdout).stacks as Array<{ stack: string; phase: string }>).map((s) => s.phase);
  };
  const up = () => cli(["fleet", "up", fleetFile, "--summary", path.join(work, "review", "fleet-summary.json")], env);

  it("reviewed, failed at worker-2's first SSH step, then resumed after the fix: done, every node in the new range", async () => {
    const reviewed = await cli(["fleet", "preview", fleetFile, "--out", path.join(work, "review")], env);
    assert.equal(reviewed.exitCode, 0, `${reviewed.stdout}\n${reviewed.stderr}`);
    assert.deepEqual(await status(), ["not started"]);

    // the fault: worker-2's sshd refuses connections (a reset, so the step fails at once rather than timing out)
    inNode("worker-2", ["nft", "add", "table", "inet", FAULT_TABLE]);
    inNode("worker-2", ["nft", "add", "chain", "inet", FAULT_TABLE, "input", "{ type filter hook input priority -10 ; }"]);
    inNode("worker-2", ["nft", "add", "rule", "inet", FAULT_TABLE, "input", "tcp", "dport", "22", "reject", "with", "tcp", "reset"]);
    const failed = await up();
    assert.equal(failed.exitCode, 1, `${failed.stdout}\n${failed.stderr}`);
    assert.match(failed.stdout, /failed/);
    assert.match(`${failed.stdout}\n${failed.stderr}`, /worker-2/, "the failure names the node");
    assert.deepEqual(await status(), ["failed"]);

    inNode("worker-2", ["nft", "delete", "table", "inet", FAULT_TABLE]);
    const resumed = await up();
    assert.equal(resumed.exitCode, 0, `${resumed.stdout}\n${resumed.stderr}`);
    assert.deepEqual(await status(), ["done"]);

    const nodes = JSON.parse(spawnSync(path.join(labDir(), "bin", "kubectl"), ["--kubeconfig", lab.kubeconfigPath, "get", "nodes", "-o", "json"], { encoding: "utf8" }).stdout).items as Array<{ metadata: { name: string }; spec: { podCIDR: string } }>;
    assert.equal(nodes.length, lab.nodes.length);
    for (const n of nodes) assert.ok(cidrContains(LAB_RANGES.podCidr.to, n.spec.podCIDR), `${n.metadata.name} ${n.spec.podCIDR}`);
  });
});
