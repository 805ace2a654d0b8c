/**
 * Node scripts over a REAL SSH connection, with exactly the settings connectionFor() builds.
 *
 * The test starts Debian's sshd on a free 127.0.0.1 port with throwaway keys (test/testbed/sshd.ts) and declares
 * ControlPlane under the mock monitor with that server's key, host key and a sandbox root. Each declared
 * RemoteScript is then created by its real provider (dynamic-providers/remoteScript.ts), with the inputs the
 * engine would hand it: the openssh client, the pinned host key (StrictHostKeyChecking=yes against the declared
 * connection.hostKey, never the user's known_hosts), the dial limits, the key from the connection's secret, the
 * script on stdin. The backup and read steps run for real on this machine through sshd; a wrong host key is refused.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { ControlPlane } from "../../components/controlPlane";
import { connectionFor } from "../../components/remoteConnection";
import { REMOTE_SCRIPT_TYPE } from "../../lib/gate/policyRules";
import { BACKUP_COMPLETE_MARKER } from "../../lib/remote/scripts/backupControlPlane";
import { SshServer, startSshd } from "../testbed/sshd";
import { captureGraph, outputValue } from "../support/pulumiMocks";

const FIXTURES = path.join(__dirname, "..", "fixtures");
const KCM = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const APISERVER = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-apiserver.yaml"), "utf8");

function keygen(file: string, comment: string): void {
  const result = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { encoding: "utf8" });
  if (result.error || result.status !== 0) throw new Error(`ssh-keygen failed (${result.error?.message ?? result.stderr}); install openssh-client`);
}

describe("node scripts over real SSH (sshd on 127.0.0.1, connectionFor's settings)", function () {
  this.timeout(60_000);
  let dir: string;
  let sshd: SshServer | undefined;
  let root: string;

  before(async () => {
    sshd = await startSshd({ user: os.userInfo().username });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-migration-ssh-client-"));
    root = path.join(dir, "node-root");
    fs.mkdirSync(path.join(root, "etc/kubernetes/manifests"), { recursive: true });
    fs.mkdirSync(path.join(root, "etc/kubernetes/pki"), { recursive: true });
    fs.writeFileSync(path.join(root, "etc/kubernetes/manifests/kube-controller-manager.yaml"), KCM);
    fs.writeFileSync(path.join(root, "etc/kubernetes/manifests/kube-apiserver.yaml"), APISERVER);
    fs.writeFileSync(path.join(root, "etc/kubernetes/pki/ca.key"), "not a real key\n", { mode: 0o600 });
  });

  after(async () => {
    await sshd?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** The declared steps' inputs, with the connection's Outputs resolved as the provider would receive them. */
  async function declaredSteps(): Promise<Map<string, Record<string, any>>> {
    const node = { name: "cp-1", host: "127.0.0.1", port: sshd!.port, user: sshd!.user, role: "control-plane" as const };
    const graph = await captureGraph(() => new ControlPlane("cp", {
      nodes: [node],
      ssh: { user: "nobody", privateKey: sshd!.privateKey },
      connection: { hostKey: sshd!.hostKey, dialErrorLimit: 3, perDialTimeoutSeconds: 5 },
      runId: "ssh-test",
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      root,
    }), { outputs: (r) => (r.type === REMOTE_SCRIPT_TYPE ? { stdout: Buffer.from(r.name.includes("kcm") ? KCM : APISERVER).toString("base64") } : {}) });
    return new Map(graph.ofType(REMOTE_SCRIPT_TYPE).map((r) => [r.name, r.inputs]));
  }

  it("connectionFor keeps the key secret and carries the pinned host key and dial limits", async () => {
    const { port, privateKey, hostKey } = sshd!;
    const connection = connectionFor({ name: "cp-1", host: "127.0.0.1", port, user: "root" }, { user: "root", privateKey }, { hostKey, dialErrorLimit: 3, perDialTimeoutSeconds: 5 });
    assert.equal(await pulumi.isSecret(connection.privateKey as pulumi.Output<string>), true);
    assert.equal(await outputValue(connection.privateKey as pulumi.Output<string>), privateKey);
    assert.deepEqual({ ...connection, privateKey: undefined }, { host: "127.0.0.1", port, user: "root", privateKey: undefined, hostKey, dialErrorLimit: 3, perDialTimeoutSeconds: 5 });
  });

  it("runs the declared backup step over SSH: the node's manifests and PKI land in the run's backup directory", async () => {
    const backup = (await declaredSteps()).get("cp-cp-1-backup")!;
    assert.equal(backup.connection.port, sshd!.port);
    assert.equal(backup.connection.user, sshd!.user);
    assert.equal(backup.connection.hostKey, sshd!.hostKey);
    await sshd!.runStep(backup);
    const backupDir = path.join(root, "var/lib/cidr-migration/backup/ssh-test");
    assert.equal(fs.readFileSync(path.join(backupDir, "etc/kubernetes/manifests/kube-controller-manager.yaml"), "utf8"), KCM);
    assert.ok(fs.existsSync(path.join(backupDir, BACKUP_COMPLETE_MARKER)));
    assert.equal(fs.statSync(path.join(backupDir, "etc/kubernetes/pki/ca.key")).mode & 0o777, 0o600);
    const second = await sshd!.runStep(backup);
    assert.match(second.stdout, /is complete already; nothing to do/);
  });

  it("runs the declared read step over SSH: stdout is the manifest, byte for byte, as base64", async () => {
    const read = (await declaredSteps()).get("cp-cp-1-kcm-read")!;
    const result = await sshd!.runStep(read);
    assert.equal(Buffer.from(result.stdout.trim(), "base64").toString("utf8"), KCM);
  });

  it("refuses a host whose key is not the pinned one", async () => {
    const read = (await declaredSteps()).get("cp-cp-1-kcm-read")!;
    keygen(path.join(dir, "other"), "other-host");
    const otherKey = fs.readFileSync(path.join(dir, "other.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    await assert.rejects(sshd!.runStep({ ...read, connection: { ...read.connection, hostKey: otherKey } }),
      /cannot run the step on .*127\.0\.0\.1:\d+ over SSH \(ssh exit 255\): Host key verification failed\./);
  });
});
