import * as assert from "assert";
import { spawnSync } from "child_process";
import { buildRestoreRunbook, ControlPlaneMember, DEFAULTS, renderRunbook, RestoreRunbookInput } from "../../../lib/controlPlane/restoreRunbook";

function member(i: number): ControlPlaneMember {
  return {
    nodeName: `cp-${i}`, host: `10.0.0.1${i}`, sshPort: 22, sshUser: "ubuntu", etcdName: `cp-${i}`,
    peerUrl: `https://10.0.0.1${i}:2380`, clientUrl: `https://10.0.0.1${i}:2379`,
  };
}

function input(overrides: Partial<RestoreRunbookInput> = {}): RestoreRunbookInput {
  return {
    snapshotPath: "/var/backups/cidr-migration/etcd-snapshot-2026-12-01T10-00-00-000Z.db",
    snapshotSha256: "6b642f23b36c26b5bf914ef6b08fce16f14e51dad00dab0762a5030d8a77d8be",
    members: [member(1), member(2), member(3)],
    dataDir: DEFAULTS.dataDir,
    manifestDir: DEFAULTS.manifestDir,
    manifestBackupDir: DEFAULTS.manifestBackupDir,
    remoteSnapshotPath: DEFAULTS.remoteSnapshotPath,
    initialClusterToken: DEFAULTS.initialClusterToken,
    etcdPkiDir: DEFAULTS.etcdPkiDir,
    adminKubeconfig: DEFAULTS.adminKubeconfig,
    stamp: "20261201T100000Z",
    ...overrides,
  };
}

describe("restore runbook (kubeadm, stacked etcd)", () => {
  it("stops every control-plane node before any member is restored, and restores all before any starts", () => {
    const titles = buildRestoreRunbook(input()).map((s) => s.title);
    const lastIndex = (prefix: string): number => titles.map((t) => t.startsWith(prefix)).lastIndexOf(true);
    const firstIndex = (prefix: string): number => titles.findIndex((t) => t.startsWith(prefix));
    assert.strictEqual(titles[0], "Copy the snapshot to every control-plane node");
    assert.ok(lastIndex("Check the copy") < firstIndex("Stop the static pods"));
    assert.ok(lastIndex("Stop the static pods") < firstIndex("Restore etcd member"));
    assert.ok(lastIndex("Restore etcd member") < firstIndex("Put the backed-up manifests back"));
    assert.ok(lastIndex("Put the backed-up manifests back") < firstIndex("Start kubelet"));
    assert.strictEqual(titles[titles.length - 1], "Check etcd and apiserver health");
    for (const prefix of ["Check the copy", "Stop the static pods", "Restore etcd member", "Put the backed-up manifests back", "Start kubelet"]) {
      assert.strictEqual(titles.filter((t) => t.startsWith(prefix)).length, 3, prefix);
    }
  });

  it("restores each member under its own name and peer URL into the same initial cluster", () => {
    const steps = buildRestoreRunbook(input()).filter((s) => s.title.startsWith("Restore etcd member"));
    const cluster = "'cp-1=https://10.0.0.11:2380,cp-2=https://10.0.0.12:2380,cp-3=https://10.0.0.13:2380'";
    steps.forEach((step, i) => {
      const restore = step.commands.find((c) => c.includes("etcdutl snapshot restore"));
      assert.strictEqual(restore,
        `sudo etcdutl snapshot restore '/var/lib/cidr-migration/etcd-restore.db' --data-dir '/var/lib/etcd' --name 'cp-${i + 1}'`
        + ` --initial-cluster ${cluster} --initial-advertise-peer-urls 'https://10.0.0.1${i + 1}:2380' --initial-cluster-token 'etcd-cluster'`);
      assert.strictEqual(step.commands[0], "if sudo test -e '/var/lib/etcd'; then sudo mv '/var/lib/etcd' '/var/lib/etcd.before-restore-20261201T100000Z'; fi");
      assert.deepStrictEqual(step.where, { kind: "node", member: member(i + 1) });
    });
  });

  it("quotes every value, so odd paths stay one word", () => {
    const text = renderRunbook(input(), buildRestoreRunbook(input({ manifestBackupDir: "/etc/kube backup/it's $HOME" })));
    assert.ok(text.includes(`sudo cp -p '/etc/kube backup/it'\\''s $HOME'/*.yaml '/etc/kubernetes/manifests'/`));
  });

  it("every command is valid bash according to shellcheck", () => {
    const steps = buildRestoreRunbook(input({ manifestBackupDir: "/etc/kube backup/it's", snapshotPath: "/tmp/a b.db" }));
    const script = ["#!/usr/bin/env bash", "set -euo pipefail", ...steps.flatMap((s) => s.commands)].join("\n") + "\n";
    const result = spawnSync("shellcheck", ["-s", "bash", "-"], { input: script, encoding: "utf8" });
    assert.strictEqual(result.error, undefined, "shellcheck must be installed (test/testbed/install.sh)");
    assert.strictEqual(result.status, 0, result.stdout);
  });

  it("renders the sha256, the members and one numbered section per step with how to reach the node", () => {
    const steps = buildRestoreRunbook(input());
    const text = renderRunbook(input(), steps);
    assert.ok(text.includes("# snapshot database sha256 6b642f23b36c26b5bf914ef6b08fce16f14e51dad00dab0762a5030d8a77d8be (verified)"));
    assert.ok(text.includes("# control-plane members: cp-1@10.0.0.11, cp-2@10.0.0.12, cp-3@10.0.0.13"));
    assert.ok(text.includes("## 1. Copy the snapshot to every control-plane node (on this machine)"));
    assert.ok(text.includes(`## ${steps.length}. Check etcd and apiserver health (on cp-1: ssh -p '22' 'ubuntu@10.0.0.11')`));
    assert.ok(text.includes("scp -P '22' '/var/backups/cidr-migration/etcd-snapshot-2026-12-01T10-00-00-000Z.db' 'ubuntu@10.0.0.12:/var/lib/cidr-migration/etcd-restore.db'"));
  });

  it("refuses inputs that would make a wrong runbook", () => {
    assert.throws(() => buildRestoreRunbook(input({ members: [] })), /no control-plane nodes: add nodes with role control-plane/);
    assert.throws(() => buildRestoreRunbook(input({ members: [member(1), member(1)] })), /etcd member name "cp-1" appears twice/);
    assert.throws(() => buildRestoreRunbook(input({ dataDir: "var/lib/etcd" })), /dataDir "var\/lib\/etcd" must be an absolute path/);
  });
});
