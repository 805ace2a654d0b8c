/**
 * `cidr-migration fleet status` under the real engine (Automation API LocalWorkspace), on stacks of this project in
 * two file backends: one never run, one whose `up` stopped at the sandbox's first node step. It reads each
 * stack's phase and changes nothing; a fleet file naming a stack its backend lacks is refused with exit 2.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { EngineStack, REPO_ROOT } from "./engineStack";
import { startSandboxForEngine } from "./sandboxForEngine";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

describe(`cidr-migration fleet status reads each stack's phase through the Automation API (Kubernetes ${resolveTestBedVersion().kube})`, function () {
  this.timeout(600_000);
  const stacks: EngineStack[] = [];
  after(async () => {
    for (const s of stacks) await s.remove();
  });

  async function newStack(label: string): Promise<EngineStack> {
    const snapshotDir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-fleet-snapshots-"));
    const config = fs.readFileSync(path.join(REPO_ROOT, "Pulumi.sandbox.yaml"), "utf8").replace(/directory: .*snapshots/, `directory: ${snapshotDir}`).replace(/trigger: sandbox-1/, `trigger: fleet-${label}`);
    const stack = await EngineStack.init(`fleet-${label}-${process.pid}`, config);
    stacks.push(stack);
    const keyFile = path.join(stack.dir, "id_ed25519");
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
    await stack.setSecret("ssh.privateKey", fs.readFileSync(keyFile, "utf8"));
    const remove = stack.remove.bind(stack);
    stack.remove = async () => {
      await remove();
      fs.rmSync(snapshotDir, { recursive: true, force: true });
    };
    return stack;
  }

  const backendOf = (s: EngineStack) => `file://${path.join(s.dir, "state")}`;

  it("one stack not started, one stopped at the first node step; an unknown stack is refused by name", async () => {
    await startSandboxForEngine();
    const fresh = await newStack("fresh");
    const ran = await newStack("ran");
    const up = await ran.engine(["up", "--yes", "--skip-preview"]);
    assert.equal(up.exitCode, 1, `${up.stdout}\n${up.stderr}`);

    const fleetFile = path.join(fresh.dir, "fleet.yaml");
    fs.writeFileSync(fleetFile, [
      `project: ${REPO_ROOT}`,
      "stacks:",
      `  - { name: ${ran.name}, wave: 2, backend: '${backendOf(ran)}' }`,
      `  - { name: ${fresh.name}, wave: 1, backend: '${backendOf(fresh)}' }`,
    ].join("\n"));
    const status = await fresh.cli(["fleet", "status", fleetFile, "--json"], false);
    assert.equal(status.exitCode, 0, status.stderr);
    const rows = (JSON.parse(status.stdout) as { stacks: Array<{ stack: string; wave: number; phase: string; detail: string; servicesMoving?: number }> }).stacks;
    assert.deepEqual(rows.map((r) => [r.wave, r.stack, r.phase]), [[1, fresh.name, "not started"], [2, ran.name, "failed"]]);
    assert.match(rows[1].detail, /^the last update failed at \S+; \d+ resource\(s\) in the state; pulumi up resumes it$/);

    const table = await fresh.cli(["fleet", "status", fleetFile], false);
    assert.equal(table.exitCode, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`1\\s+${fresh.name}\\s+not started`));

    fs.appendFileSync(fleetFile, `\n  - { name: nowhere, wave: 2, backend: '${backendOf(fresh)}' }\n`);
    const unknown = await fresh.cli(["fleet", "status", fleetFile], false);
    assert.equal(unknown.exitCode, 2, unknown.stdout);
    assert.equal(unknown.stderr, `cidr-migration: stack nowhere (wave 2): backend ${backendOf(fresh)} has no such stack; create it (pulumi stack init nowhere) or fix the name\n`);
  });
});
