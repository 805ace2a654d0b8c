import * as pulumi from "@pulumi/pulumi";
import { Etcd3 } from "etcd3";
import { UserError } from "../lib/config/errors";
import { etcdClientOptions, EtcdTlsMaterial } from "../lib/config/etcdClientOptions";
import { answersWithin, clearMemberReplaceIntent, initialClusterWith, memberReplaceUnderway, replaceEtcdMember, withExistingClusterFlags } from "../lib/controlPlane/etcdMemberReplace";
import { EtcdPeerMove, peerUrlsAt } from "../lib/controlPlane/etcdPeerMove";
import { EtcdMemberArgs } from "./etcdPeerMove";
import { readFlag } from "../lib/controlPlane/manifestFlags";
import { endpointHost } from "../lib/net/cidr";
import { runScriptOverSsh, SshTarget } from "../lib/remote/sshExec";
import { etcdCleanStart } from "../lib/remote/scripts/etcdCleanStart";
import { guardedManifestEdit, NOT_HEALTHY_RESTORED } from "../lib/remote/scripts/guardedManifestEdit";
import { sha256HexOf } from "../lib/remote/scripts/writeManifest";
import { connectionFailures, scriptFailure, SshConnection, sshTargetOf } from "./remoteScript";
import { containsUnknown, isUnknown, requiredStrings, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * EtcdMemberRestart: a control-plane node's etcd restarts at its new address (issue 16, control-plane step 2, after
 * EtcdPeerMove updated its peer URL). First as an edit of its manifest (lib/remote/scripts/guardedManifestEdit):
 * the kubelet restarts etcd on the new flags with its data. Where that cannot work (the member does not come back
 * healthy: its data dir lost, truncated or not its own), the fallback: the edit puts the old manifest back, the
 * member is removed and added again at its new peer URLs (lib/controlPlane/etcdMemberReplace; refused while it
 * answers, and etcd refuses it without quorum), and the node starts it from a clean data dir
 * (lib/remote/scripts/etcdCleanStart, the old one kept in the run's backup).
 *
 * Crash-safe: a replacement under way is recorded in etcd, and a re-run goes on with it rather than editing again;
 * a manifest an earlier run wrote for the replacement counts as the edit done. Deleting the resource changes
 * nothing. The TLS material and the SSH key are inputs only, never outputs.
 */

/** etcd.yaml: its place, as read from the node, and as edited for the new address. */
interface Manifest { path: string; current: string; next: string }

export interface EtcdMemberRestartArgs extends EtcdMemberArgs {
  connection: SshConnection;
  /** Absent: etcd.yaml names the old address nowhere, nothing to change. */
  manifest: pulumi.Input<Manifest | undefined>;
  backupDir: string;
  heldDir: string;
  /** etcd's health URL and how long each start may take. */
  healthUrl: string;
  timeoutSeconds: number;
  root?: string;
}

interface RestartInputs extends EtcdTlsMaterial {
  connection: SshTarget;
  endpoints: string[];
  member: string;
  from: string;
  to: string;
  runId: string;
  manifest?: Manifest;
  backupDir: string;
  heldDir: string;
  healthUrl: string;
  timeoutSeconds: number;
  root?: string;
}

export interface EtcdMemberRestartOutputs {
  member: string;
  from: string;
  to: string;
  runId: string;
  /** sha256 of the edited manifest: a new edit runs the step again */
  manifestSha256: string;
  /** restarted: on its data, as edited; replaced: removed, added, started clean; unchanged: the manifest named the old address nowhere */
  action: "restarted" | "replaced" | "unchanged";
  memberId: string;
  /** What the node's scripts printed (no secret reaches them). */
  log: string;
}

const IDENTITY = ["member", "from", "to", "runId", "manifestSha256"] as const;

function checkInputs(news: Wire<RestartInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = [...connectionFailures(news.connection), ...requiredStrings(news, ["member", "from", "to", "runId", "backupDir", "heldDir", "healthUrl"])];
  const endpoints = news.endpoints;
  if (!containsUnknown(endpoints) && (!Array.isArray(endpoints) || endpoints.every((e) => endpointHost(String(e)) === news.from || endpointHost(String(e)) === news.to))) {
    failures.push({ property: "endpoints", reason: `etcd.endpoints must list a member's client URL on another node than ${String(news.from)}, whose etcd restarts` });
  }
  if (!isUnknown(news.timeoutSeconds) && (!Number.isSafeInteger(news.timeoutSeconds) || (news.timeoutSeconds as number) <= 0)) failures.push({ property: "timeoutSeconds", reason: "timeoutSeconds must be a positive whole number" });
  return failures;
}

const manifestSha = (manifest: Manifest | undefined) => (manifest ? sha256HexOf(manifest.next) : "");

function asInputs(news: Wire<RestartInputs>): RestartInputs {
  throwIfFailed(checkInputs(news));
  const manifest = news.manifest as Manifest | null | undefined;
  return {
    connection: sshTargetOf(news.connection),
    endpoints: (news.endpoints as unknown[]).map(String),
    caCert: news.caCert as string | undefined,
    cert: news.cert as string | undefined,
    key: news.key as string | undefined,
    member: news.member as string,
    from: news.from as string,
    to: news.to as string,
    runId: news.runId as string,
    ...(manifest ? { manifest } : {}),
    backupDir: news.backupDir as string,
    heldDir: news.heldDir as string,
    healthUrl: news.healthUrl as string,
    timeoutSeconds: news.timeoutSeconds as number,
    ...(typeof news.root === "string" && news.root !== "" ? { root: news.root } : {}),
  };
}

async function restart(inputs: RestartInputs): Promise<EtcdMemberRestartOutputs> {
  const recorded = { member: inputs.member, from: inputs.from, to: inputs.to, runId: inputs.runId, manifestSha256: manifestSha(inputs.manifest) };
  const tls = { caCert: inputs.caCert, cert: inputs.cert, key: inputs.key };
  const clientFor = (urls: string[]) => new Etcd3(etcdClientOptions(urls, tls, { dialTimeout: 5_000 }));
  const client = clientFor(inputs.endpoints.filter((e) => endpointHost(e) !== inputs.from && endpointHost(e) !== inputs.to));
  const move: EtcdPeerMove = { member: inputs.member, from: inputs.from, to: inputs.to };
  // a script's result; any failure but `answered` throws, as `failed` words it
  const ssh = async (script: string, answered?: number, failed: (error: Error) => Error = (e) => e) => {
    const result = await runScriptOverSsh(inputs.connection, script);
    if (result.exitCode !== 0 && result.exitCode !== answered) throw failed(scriptFailure(inputs.connection, result.exitCode, result.stderr));
    return result;
  };
  try {
    const manifest = inputs.manifest;
    if (!manifest) {
      const member = (await client.cluster.memberList({})).members.find((m) => m.name === inputs.member);
      return { ...recorded, action: "unchanged", memberId: member?.ID ?? "", log: "etcd.yaml names the old address nowhere (moved already, or etcd is external)" };
    }
    const advertised = readFlag(manifest.next, "advertise-client-urls", { container: "etcd" });
    // the wait checks the restarted etcd by this flag; without it a healthy etcd would look broken
    if (!advertised) throw new UserError(`${manifest.path} on ${inputs.member} has no --advertise-client-urls (kubeadm always sets it); restart etcd at ${inputs.to} by hand, nothing was changed`);
    const wait = { url: inputs.healthUrl, expectFlags: [`--advertise-client-urls=${advertised}`], timeoutSeconds: inputs.timeoutSeconds };
    let log = "";
    if (!(await memberReplaceUnderway(client, inputs.member))) {
      const { members } = await client.cluster.memberList({});
      const named = members.find((m) => m.name === inputs.member);
      if (!named) throw new UserError(`etcd has no member named ${inputs.member}; check nodeAddresses[].name, nothing was changed`);
      // the manifest a replacement would start from counts as done: a run cut after the clean start finds it
      const doneContent = withExistingClusterFlags(manifest.next, initialClusterWith(members, inputs.member, peerUrlsAt(named, move)), manifest.path);
      const edit = await ssh(guardedManifestEdit({
        path: manifest.path, currentContent: manifest.current, newContent: manifest.next, backupDir: inputs.backupDir, doneContent,
        wait: { component: "etcd", ...wait }, root: inputs.root,
      }), NOT_HEALTHY_RESTORED);
      if (edit.exitCode === 0) return { ...recorded, action: "restarted", memberId: named.ID, log: edit.stdout };
      log = `${edit.stdout}${edit.stderr}etcd did not come back at ${inputs.to} on its data; replacing member ${inputs.member} (${named.ID})\n`;
    }
    const replaced = await replaceEtcdMember(client, move, answersWithin(clientFor));
    const dataDir = readFlag(manifest.next, "data-dir", { container: "etcd" }) ?? "/var/lib/etcd";
    const start = await ssh(etcdCleanStart({
      path: manifest.path, heldDir: inputs.heldDir, heldContents: [manifest.current, manifest.next],
      newContent: withExistingClusterFlags(manifest.next, replaced.initialCluster, manifest.path),
      dataDir, backupDir: inputs.backupDir, wait, root: inputs.root,
    }), undefined, (e) => new Error(`etcd member ${inputs.member} was replaced (new ID ${replaced.memberId}) because it did not come back on its data; its clean start failed: ${e.message}`));
    await clearMemberReplaceIntent(client, inputs.member);
    return { ...recorded, action: "replaced", memberId: replaced.memberId, log: log + start.stdout };
  } finally {
    client.close();
  }
}

export const etcdMemberRestartProvider: TypedProvider<RestartInputs, EtcdMemberRestartOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    if (isUnknown(news.manifest) || containsUnknown(news.runId)) return { changes: true, replaces: ["manifest"], deleteBeforeReplace: true };
    const now = { member: news.member, from: news.from, to: news.to, runId: news.runId, manifestSha256: manifestSha(news.manifest as Manifest | undefined) };
    const replaces = IDENTITY.filter((key) => olds[key] !== now[key]);
    return { changes: replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: true };
  },

  async create(news) {
    const outs = await restart(asInputs(news));
    return { id: `${outs.member}:${outs.runId}:${outs.manifestSha256.slice(0, 12)}`, outs };
  },

  async delete(): Promise<void> {
    // a restart that happened stays done
  },
};

export class EtcdMemberRestart extends pulumi.dynamic.Resource {
  declare readonly action: pulumi.Output<string>;
  declare readonly memberId: pulumi.Output<string>;

  constructor(name: string, args: EtcdMemberRestartArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      etcdMemberRestartProvider,
      name,
      {
        ...args,
        connection: { ...args.connection, privateKey: pulumi.secret(args.connection.privateKey) },
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        manifestSha256: undefined,
        action: undefined,
        memberId: undefined,
        log: undefined,
      },
      withSecretOutputs(opts, ["caCert", "cert", "key"]),
      "cidr-migration",
      "EtcdMemberRestart",
    );
  }
}
