// `cidr-migration restore` as a real process: refusing bad snapshots (exit 2, one line), printing the runbook, and
// restoring a member with the real etcdctl, after which a real etcd started on the restored dir serves the keys.
import * as assert from "assert";
import { Etcd3 } from "etcd3";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { etcdSnapshotProvider } from "../../dynamic-providers/etcdSnapshot";
import { EtcdProcess, startEtcd } from "../testbed/etcd";
import { snapshotTool } from "../testbed/kubeBinaries";
import { REPO, runCli } from "../support/cli";

const STACK_FIXTURE = path.join(REPO, "test", "fixtures", "restore", "Pulumi.three-cp.yaml");

const cli = runCli;

function assertRefused(result: { code: number | null; stdout: string; stderr: string }, pattern: RegExp): void {
  assert.strictEqual(result.code, 2, result.stderr);
  assert.strictEqual(result.stdout, "");
  const lines = result.stderr.trimEnd().split("\n");
  assert.strictEqual(lines.length, 1, `one line, got: ${result.stderr}`);
  assert.match(lines[0], pattern);
  assert.ok(!/\n\s+at /.test(result.stderr), "no stack trace");
}

describe("cidr-migration restore (real etcd, real etcdctl)", function () {
  this.timeout(120_000);
  let etcd: EtcdProcess;
  let work: string;
  let snapshot: string;
  let sourceKeys: Record<string, string>;

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "restore-cli-"));
    etcd = await startEtcd({ dir: path.join(work, "source") });
    const client = new Etcd3({ hosts: etcd.endpoint });
    for (let i = 0; i < 120; i++) await client.put(`/registry/configmaps/default/cm-${i}`).value(`data-${i}-${"x".repeat(i * 10)}`);
    const all = await client.getAll().strings();
    client.close();
    sourceKeys = all;
    const made = await etcdSnapshotProvider.create!({ endpoints: [etcd.endpoint], directory: path.join(work, "snapshots"), trigger: "t", version: "1", keepOnDelete: true, etcdctl: snapshotTool() });
    snapshot = made.outs!.path;
  });

  after(async () => {
    await etcd?.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it("refuses a snapshot with a corrupted byte: exit 2, one readable line", async () => {
    const bad = path.join(work, "flipped.db");
    const data = fs.readFileSync(snapshot);
    data[Math.floor(data.length / 2)] ^= 0xff;
    fs.writeFileSync(bad, data);
    assertRefused(await cli(["restore", "--snapshot", bad, "--config", STACK_FIXTURE]),
      /^cidr-migration: --snapshot \S+flipped\.db has a sha256 trailer that does not match its contents .*refusing to restore from it$/);
  });

  it("refuses a truncated snapshot, a raw db copy and a file that is not a snapshot", async () => {
    const data = fs.readFileSync(snapshot);
    const truncated = path.join(work, "truncated.db");
    fs.writeFileSync(truncated, data.subarray(0, data.length - 1000));
    assertRefused(await cli(["restore", "--snapshot", truncated, "--member", "cp-1=10.0.0.11"]), /truncated\.db is \d+ bytes, not 4096-byte pages plus a 32-byte sha256 trailer/);
    const raw = path.join(work, "raw.db");
    fs.writeFileSync(raw, data.subarray(0, data.length - 32));
    assertRefused(await cli(["restore", "--snapshot", raw, "--member", "cp-1=10.0.0.11"]), /raw\.db ends on a bbolt page boundary without the 32-byte sha256 trailer/);
    const text = path.join(work, "notes.txt");
    fs.writeFileSync(text, "not a snapshot\n".repeat(500));
    assertRefused(await cli(["restore", "--snapshot", text, "--member", "cp-1=10.0.0.11"]), /notes\.txt does not start with a bbolt database header, so it is not an etcd snapshot/);
    assertRefused(await cli(["restore", "--snapshot", path.join(work, "missing.db"), "--member", "cp-1=10.0.0.11"]), /missing\.db: cannot read it \(ENOENT\)/);
  });

  it("prints the runbook for the stack's control-plane nodes", async () => {
    const result = await cli(["restore", "--snapshot", snapshot, "--config", STACK_FIXTURE]);
    assert.strictEqual(result.code, 0, result.stderr);
    const sha = fs.readFileSync(snapshot).subarray(-32).toString("hex");
    assert.ok(result.stdout.includes(`# snapshot database sha256 ${sha} (verified)`));
    assert.ok(result.stdout.includes("# control-plane members: cp-1@10.0.0.11, cp-2@10.0.0.12, cp-3@10.0.0.13"));
    assert.ok(!result.stdout.includes("worker-1"), "workers are not part of the etcd restore");
    assert.match(result.stdout, /--name 'cp-2' --initial-cluster 'cp-1=https:\/\/10\.0\.0\.11:2380,cp-2=https:\/\/10\.0\.0\.12:2380,cp-3=https:\/\/10\.0\.0\.13:2380'/);
    assert.match(result.stdout, /## \d+\. Stop the static pods and kubelet on cp-3 \(on cp-3: ssh -p '22' 'ubuntu@10\.0\.0\.13'\)/);
  });

  it("needs the control plane from somewhere for the runbook", async () => {
    assertRefused(await cli(["restore", "--snapshot", snapshot]), /restore needs the control-plane nodes: pass --stack NAME, --config FILE or --member NODE=HOST/);
    assertRefused(await cli(["restore", "--snapshot", snapshot, "--member", "cp-1"]), /--member cp-1: expected NODE=HOST/);
  });

  it("--data-dir/--name restores the member with etcdctl, and etcd started on it serves the snapshot's keys", async () => {
    const restoreRoot = path.join(work, "restored");
    const dataDir = path.join(restoreRoot, "data");
    const result = await cli(["restore", "--snapshot", snapshot, "--data-dir", dataDir, "--name", "default"]);
    assert.strictEqual(result.code, 0, result.stderr);
    assert.match(result.stdout, /^restored etcd member default into \S+\/restored\/data from /);
    const restored = await startEtcd({ dir: restoreRoot, dataDir });
    try {
      const client = new Etcd3({ hosts: restored.endpoint });
      const keys = await client.getAll().strings();
      client.close();
      assert.strictEqual(Object.keys(keys).length, 120);
      for (const key of ["/registry/configmaps/default/cm-0", "/registry/configmaps/default/cm-77", "/registry/configmaps/default/cm-119"]) {
        assert.strictEqual(keys[key], sourceKeys[key], key);
      }
      assert.deepStrictEqual(keys, sourceKeys);
    } finally {
      await restored.stop();
    }
    assertRefused(await cli(["restore", "--snapshot", snapshot, "--data-dir", dataDir, "--name", "default"]), /--data-dir \S+ is not empty; move it aside first/);
  });

  it("--data-dir with the stack restores a named member into the cluster's membership, and refuses unknown names", async () => {
    const dataDir = path.join(work, "member-cp-2");
    const result = await cli(["restore", "--snapshot", snapshot, "--config", STACK_FIXTURE, "--data-dir", dataDir, "--name", "cp-2"]);
    assert.strictEqual(result.code, 0, result.stderr);
    assert.ok(fs.statSync(path.join(dataDir, "member", "snap", "db")).size > 0);
    assertRefused(await cli(["restore", "--snapshot", snapshot, "--config", STACK_FIXTURE, "--data-dir", path.join(work, "x"), "--name", "cp-9"]),
      /--name cp-9: not a control-plane member of this cluster \(members: cp-1, cp-2, cp-3\)/);
  });
});
