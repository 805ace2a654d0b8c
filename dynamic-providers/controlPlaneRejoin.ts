import * as pulumi from "@pulumi/pulumi";
import { Etcd3 } from "etcd3";
import { etcdClientOptions, EtcdTlsMaterial } from "../lib/config/etcdClientOptions";
import { answersWithin } from "../lib/controlPlane/etcdMemberReplace";
import { leaveEtcd } from "../lib/controlPlane/etcdRejoinCheck";
import { endpointHost, isIpAddress, normalizeIp } from "../lib/net/cidr";
import { runScriptOverSsh, SshTarget } from "../lib/remote/sshExec";
import { rejoinedProbe } from "../lib/remote/scripts/kubeadmRejoin";
import { connectionFailures, scriptFailure, SshConnection, sshTargetOf } from "./remoteScript";
import { EtcdAccessArgs } from "./etcdPeerMove";
import { containsUnknown, isUnknown, requiredStrings, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * A control-plane node's kubeadm-rejoin (nodeRollout.strategy kubeadm-rejoin), as one step so that every try does
 * all of it: its etcd member leaves through etcd (lib/controlPlane/etcdRejoinCheck leaveEtcd: the others checked
 * first), then the node's script resets it and joins it again as a control-plane node
 * (lib/remote/scripts/kubeadmRejoin with `controlPlane`). A try cut after the join had added a member removes that
 * one too before joining again; a node already joined for this run (its marker) is left alone, and so is etcd.
 *
 * The script carries the join token and the certificates' key: a secret input, never an output. So are the SSH key
 * and the etcd client key. Deleting the resource changes nothing.
 */

export interface ControlPlaneRejoinArgs extends EtcdAccessArgs {
  connection: SshConnection;
  /** The reset-and-join script (kubeadmRejoin with `controlPlane`), revealed: it is stored as a secret. */
  script: pulumi.Input<string>;
  /** The node's address, where its member's peer URL is. */
  nodeAddress: pulumi.Input<string>;
  runId: pulumi.Input<string>;
  /** Directory standing in for `/` on the node; only tests set it. */
  root?: string;
}

interface RejoinInputs extends EtcdTlsMaterial {
  connection: SshTarget;
  script: string;
  endpoints: string[];
  nodeAddress: string;
  runId: string;
  root?: string;
}

export interface ControlPlaneRejoinOutputs {
  nodeAddress: string;
  runId: string;
  /** rejoined: by this step; already: an earlier try had joined it for this run */
  action: "rejoined" | "already";
  /** The etcd members on the node's address this step removed (the node's own; a half-joined one on a re-try). */
  removedMembers: string[];
  /** What the node's script printed (it never prints the token or the key). */
  log: string;
}

function checkInputs(news: Wire<RejoinInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = [...connectionFailures(news.connection), ...requiredStrings(news, ["script", "nodeAddress", "runId"])];
  const address = news.nodeAddress;
  if (typeof address === "string" && !containsUnknown(address) && (!isIpAddress(address) || normalizeIp(address) !== address)) {
    failures.push({ property: "nodeAddress", reason: `nodeAddress ${JSON.stringify(address)} must be an IP address in normal form` });
  }
  const endpoints = news.endpoints;
  if (!containsUnknown(endpoints) && (!Array.isArray(endpoints) || endpoints.every((e) => endpointHost(String(e)) === address))) {
    failures.push({ property: "endpoints", reason: `etcd.endpoints must list a member's client URL on another node than ${String(address)}, which is reset` });
  }
  return failures;
}

function asInputs(news: Wire<RejoinInputs>): RejoinInputs {
  throwIfFailed(checkInputs(news));
  return {
    connection: sshTargetOf(news.connection),
    script: news.script as string,
    endpoints: (news.endpoints as unknown[]).map(String),
    nodeAddress: news.nodeAddress as string,
    runId: news.runId as string,
    caCert: news.caCert as string | undefined,
    cert: news.cert as string | undefined,
    key: news.key as string | undefined,
    ...(typeof news.root === "string" && news.root !== "" ? { root: news.root } : {}),
  };
}

async function rejoin(inputs: RejoinInputs): Promise<ControlPlaneRejoinOutputs> {
  const recorded = { nodeAddress: inputs.nodeAddress, runId: inputs.runId };
  const ssh = async (script: string, secretOutput = false) => {
    const result = await runScriptOverSsh(inputs.connection, script);
    if (result.exitCode !== 0) throw scriptFailure(inputs.connection, result.exitCode, result.stderr, secretOutput);
    return result;
  };
  const probe = await ssh(rejoinedProbe({ rejoinId: inputs.runId, root: inputs.root }));
  if (probe.stdout.trim() === "rejoined") return { ...recorded, action: "already", removedMembers: [], log: "joined again for this run already; etcd left alone\n" };
  const tls = { caCert: inputs.caCert, cert: inputs.cert, key: inputs.key };
  const clientFor = (urls: string[]) => new Etcd3(etcdClientOptions(urls, tls, { dialTimeout: 10_000 }));
  const client = clientFor(inputs.endpoints.filter((e) => endpointHost(e) !== inputs.nodeAddress));
  let removedMembers: string[];
  try {
    removedMembers = await leaveEtcd(client, inputs.nodeAddress, answersWithin(clientFor), clientFor);
  } finally {
    client.close();
  }
  const joined = await ssh(inputs.script);
  return { ...recorded, action: "rejoined", removedMembers, log: joined.stdout };
}

export const controlPlaneRejoinProvider: TypedProvider<RejoinInputs, ControlPlaneRejoinOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // a new run (its id) joins the node again; a new token in the script alone does not
    if (isUnknown(news.runId)) return { changes: true, replaces: ["runId"], deleteBeforeReplace: true };
    const replaces = (["nodeAddress", "runId"] as const).filter((key) => olds[key] !== news[key]);
    return { changes: replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: true };
  },

  async create(news) {
    const outs = await rejoin(asInputs(news));
    return { id: `${outs.nodeAddress}:${outs.runId}`, outs };
  },

  async delete(): Promise<void> {
    // a node joined again stays joined
  },
};

export class ControlPlaneRejoin extends pulumi.dynamic.Resource {
  declare readonly action: pulumi.Output<string>;
  declare readonly removedMembers: pulumi.Output<string[]>;

  constructor(name: string, args: ControlPlaneRejoinArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      controlPlaneRejoinProvider,
      name,
      {
        ...args,
        connection: { ...args.connection, privateKey: pulumi.secret(args.connection.privateKey) },
        script: pulumi.secret(args.script),
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        action: undefined,
        removedMembers: undefined,
        log: undefined,
      },
      withSecretOutputs(opts, ["script", "caCert", "cert", "key"]),
      "cidr-migration",
      "ControlPlaneRejoin",
    );
  }
}
