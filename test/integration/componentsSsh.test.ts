/**
 * Node scripts over a REAL SSH connection, with exactly the settings connectionFor() builds.
 *
 * The test starts Debian's sshd on a free 127.0.0.1 port with throwaway keys (test/testbed/sshd.ts) and declares
 * ControlPlane under the mock monitor with that server's key, host key and a sandbox root. The declared remote.Command inputs (host, port, user, privateKey, hostKey, dialErrorLimit,
 * perDialTimeout, create) are then used the way @pulumi/command's provider uses them, with the openssh client:
 * the host key is pinned (StrictHostKeyChecking=yes against the declared connection.hostKey, not the server's
 * own known_hosts), dial limits become ConnectTimeout/ConnectionAttempts, the key comes from the
 * connection's secret, and `create` is sent as the remote command, which sshd hands to the user's login shell.
 * The backup and read steps run for real on this machine through sshd; a wrong host key is refused.
 */
import { strict as assert } from "assert";
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { ControlPlane } from "../../components/controlPlane";
import { connectionFor } from "../../components/remoteConnection";
import { BACKUP_COMPLETE_MARKER } from "../../lib/remote/scripts/backupControlPlane";
import { SshServer, startSshd } from "../testbed/sshd";
import { captureGraph, outputValue } from "../support/pulumiMocks";

const FIXTURES = path.join(__dirname, "..", "fixtures");
const KCM = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const APISERVER = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-apiserver.yaml"), "utf8");

interface Connection {
  host: string;
  port: number;
  user: string;
  privateKey: string;
  hostKey?: string;
  dialErrorLimit: number;
  perDialTimeout: number;
}

function keygen(file: string, comment: string): void {
  const result = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { encoding: "utf8" });
  if (result.error || result.status !== 0) throw new Error(`ssh-keygen failed (${result.error?.message ?? result.stderr}); install openssh-client`);
}

/** Runs `command` on the connection's host the way the command provider does: one SSH session, exec(command). */
function runOverSsh(connection: Connection, command: string, dir: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const keyFile = path.join(dir, `key-${Math.random().toString(16).slice(2)}`);
  fs.writeFileSync(keyFile, connection.privateKey, { mode: 0o600 });
  const knownHosts = path.join(dir, "known_hosts");
  fs.writeFileSync(knownHosts, `[${connection.host}]:${connection.port} ${connection.hostKey}\n`);
  const args = [
    "-i", keyFile, "-p", String(connection.port), "-l", connection.user,
    "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${knownHosts}`,
    "-o", `ConnectTimeout=${connection.perDialTimeout}`, "-o", `ConnectionAttempts=${connection.dialErrorLimit}`,
    connection.host, command,
  ];
  return new Promise((resolve) => {
    const child = spawn("ssh", args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.on("close", (status) => {
      fs.rmSync(keyFile, { force: true });
      resolve({ status, stdout, stderr });
    });
  });
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
  async function declaredSteps(): Promise<Map<string, { connection: Connection; create: string }>> {
    const node = { name: "cp-1", host: "127.0.0.1", port: sshd!.port, user: sshd!.user, role: "control-plane" as const };
    const graph = await captureGraph(() => new ControlPlane("cp", {
      nodes: [node],
      ssh: { user: "nobody", privateKey: sshd!.privateKey },
      connection: { hostKey: sshd!.hostKey, dialErrorLimit: 3, perDialTimeoutSeconds: 5 },
      runId: "ssh-test",
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      root,
    }), { outputs: (r) => (r.type === "command:remote:Command" ? { stdout: Buffer.from(r.name.includes("kcm") ? KCM : APISERVER).toString("base64") } : {}) });
    const steps = new Map<string, { connection: Connection; create: string }>();
    for (const r of graph.ofType("command:remote:Command")) steps.set(r.name, { connection: r.inputs.connection as Connection, create: r.inputs.create as string });
    return steps;
  }

  it("connectionFor keeps the key secret and carries the pinned host key and dial limits", async () => {
    const { port, privateKey, hostKey } = sshd!;
    const connection = connectionFor({ name: "cp-1", host: "127.0.0.1", port, user: "root" }, { user: "root", privateKey }, { hostKey, dialErrorLimit: 3, perDialTimeoutSeconds: 5 });
    assert.equal(await pulumi.isSecret(connection.privateKey as pulumi.Output<string>), true);
    assert.equal(await outputValue(connection.privateKey as pulumi.Output<string>), privateKey);
    assert.deepEqual({ ...connection, privateKey: undefined }, { host: "127.0.0.1", port, user: "root", privateKey: undefined, hostKey, dialErrorLimit: 3, perDialTimeout: 5 });
  });

  it("runs the declared backup step over SSH: the node's manifests and PKI land in the run's backup directory", async () => {
    const backup = (await declaredSteps()).get("cp-cp-1-backup")!;
    assert.equal(backup.connection.port, sshd!.port);
    assert.equal(backup.connection.user, sshd!.user);
    assert.equal(backup.connection.hostKey, sshd!.hostKey);
    const first = await runOverSsh(backup.connection, backup.create, dir);
    assert.equal(first.status, 0, `${first.stderr}\n${sshd!.log()}`);
    const backupDir = path.join(root, "var/lib/cidr-migration/backup/ssh-test");
    assert.equal(fs.readFileSync(path.join(backupDir, "etc/kubernetes/manifests/kube-controller-manager.yaml"), "utf8"), KCM);
    assert.ok(fs.existsSync(path.join(backupDir, BACKUP_COMPLETE_MARKER)));
    assert.equal(fs.statSync(path.join(backupDir, "etc/kubernetes/pki/ca.key")).mode & 0o777, 0o600);
    const second = await runOverSsh(backup.connection, backup.create, dir);
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /is complete already; nothing to do/);
  });

  it("runs the declared read step over SSH: stdout is the manifest, byte for byte, as base64", async () => {
    const read = (await declaredSteps()).get("cp-cp-1-kcm-read")!;
    const result = await runOverSsh(read.connection, read.create, dir);
    assert.equal(result.status, 0, result.stderr);
    assert.equal(Buffer.from(result.stdout.trim(), "base64").toString("utf8"), KCM);
  });

  it("refuses a host whose key is not the pinned one", async () => {
    const read = (await declaredSteps()).get("cp-cp-1-kcm-read")!;
    keygen(path.join(dir, "other"), "other-host");
    const otherKey = fs.readFileSync(path.join(dir, "other.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    const result = await runOverSsh({ ...read.connection, hostKey: otherKey }, read.create, dir);
    assert.equal(result.status, 255);
    assert.match(result.stderr, /Host key verification failed/);
  });
});
