import { Command } from "commander";
import * as fs from "fs";
import * as path from "path";
import { validateConfig } from "../lib/config/config";
import { UserError } from "../lib/config/errors";
import { verifySnapshotFile } from "../lib/controlPlane/etcdSnapshotFile";
import { AUTO_SNAPSHOT_TOOL, runSnapshotTool } from "../lib/controlPlane/etcdSnapshotTool";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { hostProblem, nodeNameProblem, userNameProblem } from "../lib/config/nodeIdentity";
import {
  buildRestoreRunbook, ControlPlaneMember, DEFAULTS, etcdctlRestoreArgs, initialClusterOf, renderRunbook, RestoreRunbookInput,
} from "../lib/controlPlane/restoreRunbook";
import { readStackFile } from "../lib/config/stackFile";
import { chooseStackFile } from "./context";
import { action } from "./run";

/**
 * `cidr-migration restore --snapshot FILE`: refuses a file whose sha256 trailer or format is wrong (exit 2), else
 * prints the ordered rollback runbook for the cluster's kubeadm control plane. With `--data-dir DIR --name MEMBER`
 * it runs the etcd part instead: `etcdctl snapshot restore` of that member into DIR (on the node being restored).
 */

export interface RestoreDeps {
  /** Where the runbook and status lines go. */
  out: (text: string) => void;
  now: () => Date;
  /** The validated stack config for --stack / --config. */
  loadConfig: (opts: { stack?: string; config?: string }) => MigrationConfig;
}

const defaultDeps: RestoreDeps = {
  out: (text) => process.stdout.write(text),
  now: () => new Date(),
  loadConfig: (opts) => validateConfig(readStackFile(chooseStackFile(opts).file)),
};

interface RestoreOptions {
  snapshot: string;
  stack?: string;
  config?: string;
  member?: string[];
  sshUser: string;
  sshPort: string;
  etcdDataDir: string;
  manifestDir: string;
  manifestBackupDir: string;
  remoteSnapshotPath: string;
  initialClusterToken: string;
  dataDir?: string;
  name?: string;
  etcdctl: string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

function memberAt(nodeName: string, host: string, sshPort: number, sshUser: string): ControlPlaneMember {
  // kubeadm's stacked etcd: the member is named after the node and serves TLS on the node's address.
  const address = host.includes(":") ? `[${host}]` : host;
  return {
    nodeName, host, sshPort, sshUser, etcdName: nodeName,
    peerUrl: `https://${address}:${DEFAULTS.etcdPeerPort}`,
    clientUrl: `https://${address}:${DEFAULTS.etcdClientPort}`,
  };
}

function membersFromFlags(specs: string[], sshUser: string, sshPort: number): ControlPlaneMember[] {
  const userWhy = userNameProblem(sshUser);
  if (userWhy) throw new UserError(`--ssh-user ${JSON.stringify(sshUser)} ${userWhy}`);
  return specs.map((spec) => {
    const at = spec.indexOf("=");
    const [node, host] = at < 0 ? [spec, ""] : [spec.slice(0, at), spec.slice(at + 1)];
    if (!node || !host) throw new UserError(`--member ${spec}: expected NODE=HOST, e.g. --member cp-1=10.0.0.11`);
    const nodeWhy = nodeNameProblem(node);
    if (nodeWhy) throw new UserError(`--member ${spec}: node ${JSON.stringify(node)} ${nodeWhy}`);
    const hostWhy = hostProblem(host);
    if (hostWhy) throw new UserError(`--member ${spec}: host ${JSON.stringify(host)} ${hostWhy}`);
    return memberAt(node, host, sshPort, sshUser);
  });
}

function membersFromConfig(config: MigrationConfig, source: string): ControlPlaneMember[] {
  const members = config.nodes.filter((n) => n.role === "control-plane").map((n) => memberAt(n.name, n.host, n.port, n.user));
  if (members.length === 0) {
    throw new UserError(`${source}: cidr-migration:nodes lists no node with role control-plane; add them, or pass --member NODE=HOST`);
  }
  return members;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UserError(`--ssh-port ${value}: expected a port number 1-65535`);
  return port;
}

function resolveMembers(opts: RestoreOptions, deps: RestoreDeps): ControlPlaneMember[] | undefined {
  if (opts.member && (opts.stack || opts.config)) {
    throw new UserError("--member and --stack/--config both name the control plane; pass one of them");
  }
  if (opts.member) return membersFromFlags(opts.member, opts.sshUser, parsePort(opts.sshPort));
  if (opts.stack || opts.config) {
    return membersFromConfig(deps.loadConfig({ stack: opts.stack, config: opts.config }), opts.config ? `--config ${opts.config}` : `--stack ${opts.stack}`);
  }
  return undefined;
}

function compactStamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

async function runEtcdctlRestore(tool: string, args: string[]): Promise<void> {
  try {
    await runSnapshotTool(tool, args);
  } catch (err) {
    throw new UserError(`${(err as Error).message}${/not found/.test((err as Error).message) ? " (--etcdctl PATH)" : ""}`);
  }
}

async function restoreMember(opts: RestoreOptions & { dataDir: string }, members: ControlPlaneMember[] | undefined, sha256: string, deps: RestoreDeps): Promise<void> {
  if (!opts.name) throw new UserError("--data-dir needs --name MEMBER: the etcd member name to restore (kubeadm: the node name)");
  const dataDir = path.resolve(opts.dataDir);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
    throw new UserError(`--data-dir ${dataDir} is not empty; move it aside first (e.g. mv ${dataDir} ${dataDir}.before-restore)`);
  }
  let peer: { initialCluster?: string; initialAdvertisePeerUrls?: string } = {};
  if (members) {
    const member = members.find((m) => m.etcdName === opts.name);
    if (!member) throw new UserError(`--name ${opts.name}: not a control-plane member of this cluster (members: ${members.map((m) => m.etcdName).join(", ")})`);
    peer = { initialCluster: initialClusterOf(members), initialAdvertisePeerUrls: member.peerUrl };
  }
  // etcdctl refuses an existing data dir, even an empty one.
  if (fs.existsSync(dataDir)) fs.rmdirSync(dataDir);
  await runEtcdctlRestore(opts.etcdctl, etcdctlRestoreArgs({
    snapshotPath: path.resolve(opts.snapshot),
    dataDir,
    name: opts.name,
    ...peer,
    initialClusterToken: members ? opts.initialClusterToken : undefined,
  }));
  deps.out(`restored etcd member ${opts.name} into ${dataDir} from ${opts.snapshot} (database sha256 ${sha256})\n`);
}

export function registerRestoreCommand(program: Command, overrides: Partial<RestoreDeps> = {}): Command {
  const deps: RestoreDeps = { ...defaultDeps, ...overrides };
  return program
    .command("restore")
    .description("check an etcd snapshot and print the rollback runbook for the control plane; --data-dir/--name restores one member")
    .requiredOption("--snapshot <file>", "etcd snapshot file (from the EtcdSnapshot resource or etcdctl snapshot save)")
    .option("--stack <name>", "read the control-plane nodes from Pulumi.<name>.yaml")
    .option("--config <file>", "read the control-plane nodes from this Pulumi.<stack>.yaml file")
    .option("--member <node=host>", "a control-plane node and its address, instead of a stack (repeat per node)", collect)
    .option("--ssh-user <user>", "SSH user for --member nodes", "root")
    .option("--ssh-port <port>", "SSH port for --member nodes", "22")
    .option("--etcd-data-dir <dir>", "etcd data dir on the control-plane nodes", DEFAULTS.dataDir)
    .option("--manifest-dir <dir>", "static-pod manifest dir on the nodes", DEFAULTS.manifestDir)
    .option("--manifest-backup-dir <dir>", "where the migration backed up the old manifests on the nodes", DEFAULTS.manifestBackupDir)
    .option("--remote-snapshot-path <file>", "where the runbook copies the snapshot on each node", DEFAULTS.remoteSnapshotPath)
    .option("--initial-cluster-token <token>", "etcd initial cluster token for the restored cluster", DEFAULTS.initialClusterToken)
    .option("--data-dir <dir>", "run the etcd part here: restore member --name into this (new or empty) dir")
    .option("--name <member>", "etcd member name for --data-dir")
    .option("--etcdctl <path>", "the snapshot tool for --data-dir: etcdutl (etcd 3.5+) or etcdctl (3.4); auto picks etcdutl when on PATH", AUTO_SNAPSHOT_TOOL)
    .action(
      action(async (opts: RestoreOptions) => {
        // The members first: a bad --member or stack is invalid input whatever the snapshot holds.
        const members = resolveMembers(opts, deps);
        const verdict = await verifySnapshotFile(opts.snapshot).catch((err: NodeJS.ErrnoException) => {
          throw new UserError(`--snapshot ${opts.snapshot}: cannot read it (${err.code ?? err.message}); pass the path of an etcd snapshot file`);
        });
        if (!verdict.ok) {
          throw new UserError(`--snapshot ${opts.snapshot} ${verdict.problem}; refusing to restore from it`);
        }
        if (opts.dataDir !== undefined) {
          await restoreMember({ ...opts, dataDir: opts.dataDir }, members, verdict.sha256, deps);
          return;
        }
        if (!members) throw new UserError("restore needs the control-plane nodes: pass --stack NAME, --config FILE or --member NODE=HOST");
        const input: RestoreRunbookInput = {
          snapshotPath: path.resolve(opts.snapshot),
          snapshotSha256: verdict.sha256,
          members,
          dataDir: opts.etcdDataDir,
          manifestDir: opts.manifestDir,
          manifestBackupDir: opts.manifestBackupDir,
          remoteSnapshotPath: opts.remoteSnapshotPath,
          initialClusterToken: opts.initialClusterToken,
          etcdPkiDir: DEFAULTS.etcdPkiDir,
          adminKubeconfig: DEFAULTS.adminKubeconfig,
          stamp: compactStamp(deps.now()),
        };
        let steps;
        try {
          steps = buildRestoreRunbook(input);
        } catch (err) {
          throw new UserError((err as Error).message);
        }
        deps.out(renderRunbook(input, steps));
      }),
    );
}
