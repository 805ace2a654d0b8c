/**
 * `pulumi up` under the real engine, on the sandbox. The sandbox's nodes are simulated (no sshd, no kubelet), so a
 * run carries out the graph's first phases for real, the preflight gate and a proven etcd snapshot, and then stops
 * at the first node step with the SSH error an operator would see. What only the engine proves, on those phases:
 * - the state holds no plaintext secret;
 * - a re-run converges: what ran is unchanged, `refresh` finds no drift;
 * - after a SIGKILL of the whole `up` during the snapshot, the documented recovery (`pulumi cancel`, then
 *   `pulumi refresh --clear-pending-creates`) and a re-run converge, with no pending operation left;
 * - `destroy` removes the resources from the state and nothing from the cluster or the snapshot directory.
 * - `up --target` runs only the targeted steps and finishes (a step built from a skipped read gets no value and is
 *   skipped with it: components/readStepOutput.ts).
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { removeTruncatedSidecars } from "../../engine/fileBackendSidecars";
import { CommandResult, EngineStack, REPO_ROOT } from "./engineStack";
import { startSandboxForEngine, stopSandboxForEngine } from "./sandboxForEngine";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const TYPE = (name: string) => `pulumi-nodejs:dynamic/cidr-migration:${name}`;
const FIRST_NODE_STEP_ERROR = /cannot run the step on root@127\.0\.0\.1:2201 over SSH \(ssh exit 255\): ssh: connect to host 127\.0\.0\.1 port 2201: Connection refused/;

/**
 * The sandbox's stack file with its own snapshot directory and trigger, so runs never share a snapshot, and the
 * running sandbox's kubeconfig (wherever CIDR_MIGRATION_CACHE puts it).
 */
function stackConfig(snapshotDir: string, trigger: string, kubeconfigPath: string): string {
  return fs.readFileSync(path.join(REPO_ROOT, "Pulumi.sandbox.yaml"), "utf8")
    .replace(/kubeconfig: .*/, `kubeconfig: ${kubeconfigPath}`)
    .replace(/directory: .*snapshots/, `directory: ${snapshotDir}`)
    .replace(/trigger: sandbox-1/, `trigger: ${trigger}`);
}

/** An `up` that did the first phases and stopped at the first node step, as the sandbox allows. */
function assertStoppedAtFirstNodeStep(up: CommandResult): void {
  const all = `${up.stdout}\n${up.stderr}`;
  assert.equal(up.exitCode, 1, all);
  assert.match(all, FIRST_NODE_STEP_ERROR);
  assert.doesNotMatch(all, /\n\s+at [\w.<>]+ \(/, "no stack trace");
}

describe(`the real Pulumi engine applies the first phases on the sandbox (Kubernetes ${resolveTestBedVersion().kube})`, function () {
  this.timeout(600_000);
  let kubeconfigPath: string;
  const stacks: EngineStack[] = [];

  before(async () => {
    const sandbox = await startSandboxForEngine();
    kubeconfigPath = path.join(sandbox.clusterDir, "admin.kubeconfig");
  });

  after(async () => {
    for (const s of stacks) await s.remove();
  });

  async function newStack(label: string): Promise<{ stack: EngineStack; snapshotDir: string; privateKey: string }> {
    const snapshotDir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-snapshots-"));
    const stack = await EngineStack.init(`e2e-${label}-${process.pid}`, stackConfig(snapshotDir, `e2e-${label}`, kubeconfigPath));
    stacks.push(stack);
    const keyFile = path.join(stack.dir, "id_ed25519");
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
    const privateKey = fs.readFileSync(keyFile, "utf8");
    await stack.setSecret("ssh.privateKey", privateKey);
    return { stack, snapshotDir, privateKey };
  }

  async function services(): Promise<string[]> {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const list = await kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces();
    return list.items.map((s) => `${s.metadata!.namespace}/${s.metadata!.name} ${s.metadata!.uid} ${(s.spec!.clusterIPs ?? []).join(",")}`).sort();
  }

  const up = (stack: EngineStack) => stack.engine(["up", "--yes", "--skip-preview"]);
  const ranTypes = async (stack: EngineStack) => (await stack.exportState()).resources.map((r) => r.type).filter((t) => t.startsWith("pulumi-nodejs:dynamic/")).sort();

  it("up takes the preflight gate and a proven snapshot, then stops at the first node step with one readable SSH error; no secret in state or output", async () => {
    const { stack, snapshotDir, privateKey } = await newStack("apply");
    const first = await up(stack);
    assertStoppedAtFirstNodeStep(first);
    assert.deepEqual(await ranTypes(stack), [TYPE("EtcdSnapshot"), TYPE("PreflightGate")], "nothing after the failed step ran");
    const state = await stack.exportState();
    const snapshot = state.resources.find((r) => r.type === TYPE("EtcdSnapshot"))!;
    assert.equal(path.dirname(snapshot.outputs!.path as string), snapshotDir);
    assert.ok(fs.existsSync(snapshot.outputs!.path as string), "the snapshot file exists");
    const clientKey = fs.readFileSync(path.join(path.dirname(kubeconfigPath), "pki", "admin.key"), "utf8").split("\n")[1];
    for (const secret of [privateKey.split("\n")[1], clientKey]) {
      assert.ok(!state.text.includes(secret), "no plaintext secret in `pulumi stack export`");
      assert.ok(!`${first.stdout}${first.stderr}`.includes(secret), "no plaintext secret in the `up` output");
    }
    assert.match(state.text, /"ciphertext"/, "secrets are stored encrypted");

    // A re-run converges on what ran: the gate and the snapshot are the same, the run stops at the same step.
    const preview = await stack.engine(["preview", "--json", "--show-sames"]);
    assert.equal(preview.exitCode, 0, preview.stderr);
    const ops = Object.fromEntries((JSON.parse(preview.stdout).steps as Array<{ op: string; urn: string }>).map((st) => [st.urn.split("::").pop(), st.op]));
    assert.deepEqual([ops.preflight, ops["etcd-snapshot"], ops["control-plane-cp-1-backup"]], ["same", "same", "create"]);
    assertStoppedAtFirstNodeStep(await up(stack));
    assert.equal(fs.readdirSync(snapshotDir).filter((f) => f.endsWith(".db")).length, 1, "no second snapshot");
    const refresh = await stack.engine(["refresh", "--yes", "--expect-no-changes"]);
    assert.equal(refresh.exitCode, 0, `refresh found drift:\n${refresh.stdout}\n${refresh.stderr}`);
  });

  it("up --target runs only the targeted steps and finishes: the steps built from a skipped read step are skipped too", async () => {
    const { stack } = await newStack("target");
    const urn = (type: string, name: string) => `urn:pulumi:${stack.name}::cidr-migration::${type}::${name}`;
    const targeted = await stack.engine(["up", "--yes", "--skip-preview", "--target", urn(TYPE("PreflightGate"), "preflight"), "--target", urn(TYPE("EtcdSnapshot"), "etcd-snapshot")]);
    assert.equal(targeted.exitCode, 0, `${targeted.stdout}\n${targeted.stderr}`);
    assert.deepEqual(await ranTypes(stack), [TYPE("EtcdSnapshot"), TYPE("PreflightGate")], "only the targets ran");
    // The whole run afterwards goes on from there, to the first node step as always.
    assertStoppedAtFirstNodeStep(await up(stack));
  });

  it("destroy after up removes the resources from the state and nothing from the cluster or the snapshot directory", async () => {
    const { stack, snapshotDir } = await newStack("destroy");
    assertStoppedAtFirstNodeStep(await up(stack));
    const before = await services();
    const snapshots = fs.readdirSync(snapshotDir);
    assert.equal(snapshots.filter((f) => f.endsWith(".db")).length, 1);
    const destroy = await stack.engine(["destroy", "--yes", "--skip-preview"]);
    assert.equal(destroy.exitCode, 0, `${destroy.stdout}\n${destroy.stderr}`);
    assert.deepEqual((await stack.exportState()).resources, []);
    assert.deepEqual(await services(), before, "every Service is as it was: same uid, same addresses");
    assert.deepEqual(fs.readdirSync(snapshotDir), snapshots, "the snapshot stays (keepOnDelete)");
  });

  it("SIGKILL of the whole `up` during the snapshot: `pulumi cancel` and `pulumi refresh --clear-pending-creates`, then a re-run converges", async () => {
    const { stack, snapshotDir } = await newStack("kill");
    let killed = false;
    const first = stack.engine(["up", "--yes", "--skip-preview"], {
      onStdout: (text) => {
        if (!killed && /etcd-snapshot creating/.test(text)) {
          killed = true;
          process.kill(-first.pid!, "SIGKILL");
        }
      },
    });
    const result = await first;
    assert.ok(killed && result.signal === "SIGKILL", `the run was killed during the snapshot (exit ${result.exitCode}):\n${result.stdout}`);
    // A kill while the engine writes its checkpoint can leave an empty <stack>.json.attrs (engine/fileBackendSidecars.ts);
    // the recovery removes it first, as `cidr-migration pulumi` does before any command.
    const mended = removeTruncatedSidecars(stack.env.PULUMI_BACKEND_URL);
    if (mended.length > 0) console.log(`      (the kill landed on the checkpoint write: removed ${mended.join(", ")})`);
    // Whether the engine saved the pending create before the kill depends on the moment; either way it is only the snapshot's.
    const pending = (await stack.exportState()).pending as Array<{ type: string; resource: { urn: string } }>;
    assert.ok(pending.every((p) => p.type === "creating" && p.resource.urn.endsWith("::etcd-snapshot")), JSON.stringify(pending.map((p) => [p.type, p.resource.urn])));
    const locked = await up(stack);
    assert.match(`${locked.stdout}${locked.stderr}`, /the stack is currently locked/, "the killed run's lock stays");

    await stack.pulumiOk(["cancel", "--yes"]);
    await stack.pulumiOk(["refresh", "--clear-pending-creates", "--yes", "--skip-preview"]);
    assert.deepEqual((await stack.exportState()).pending, [], "no pending operation is left");
    assertStoppedAtFirstNodeStep(await up(stack));
    const state = await stack.exportState();
    assert.deepEqual(state.pending, []);
    const snapshot = state.resources.find((r) => r.type === TYPE("EtcdSnapshot"))!;
    assert.ok(fs.readdirSync(snapshotDir).includes(path.basename(snapshot.outputs!.path as string)), "the snapshot in the state is on disk");
    assert.ok(!fs.readdirSync(snapshotDir).some((f) => f.includes(".partial-")), "the killed stream left no partial file behind");
  });
});

// A root hook (outside any describe): once every test has run, the sandbox the suite started is stopped.
after(stopSandboxForEngine);
