import * as pulumi from "@pulumi/pulumi";
import { Etcd3 } from "etcd3";
import { etcdClientOptions, EtcdTlsMaterial } from "../lib/config/etcdClientOptions";
import { checkEtcdRejoin } from "../lib/controlPlane/etcdRejoinCheck";
import { answersWithin } from "../lib/controlPlane/etcdMemberReplace";
import { endpointHost, isIpAddress, normalizeIp } from "../lib/net/cidr";
import { EtcdAccessArgs } from "./etcdPeerMove";
import { containsUnknown, requiredStrings, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * A control-plane node's etcd member, checked right before the node's `kubeadm reset` (nodeRollout.strategy
 * kubeadm-rejoin, lib/controlPlane/etcdRejoinCheck): three or more members, every other one answering, the member
 * the node's own; leadership handed away when it leads. It changes nothing else: the member leaves later, in the
 * node's ControlPlaneRejoin step, right before its reset. etcd is reached through the stack's etcd endpoints less the node's own. The TLS material
 * is an input only, never in the outputs. A new run id runs it again; deleting it changes nothing.
 */

export interface EtcdRejoinCheckArgs extends EtcdAccessArgs {
  /** The member's name: kubeadm names it after the node. */
  member: pulumi.Input<string>;
  /** The node's address, where the member's peer URL is. */
  nodeAddress: pulumi.Input<string>;
  runId: pulumi.Input<string>;
}

interface CheckRecord {
  endpoints: string[];
  member: string;
  nodeAddress: string;
  runId: string;
}

type CheckInputs = CheckRecord & EtcdTlsMaterial;

export interface EtcdRejoinCheckOutputs extends CheckRecord {
  memberId: string;
  newLeader?: string;
}

function checkInputs(news: Wire<CheckInputs>): pulumi.dynamic.CheckResult<Wire<CheckInputs>> {
  const failures = requiredStrings(news, ["member", "nodeAddress", "runId"]);
  const address = news.nodeAddress;
  if (typeof address === "string" && !containsUnknown(address) && (!isIpAddress(address) || normalizeIp(address) !== address)) {
    failures.push({ property: "nodeAddress", reason: `nodeAddress ${JSON.stringify(address)} must be an IP address in normal form` });
  }
  const endpoints = news.endpoints;
  if (!containsUnknown(endpoints)) {
    if (!Array.isArray(endpoints) || endpoints.length === 0) failures.push({ property: "endpoints", reason: "endpoints must list the etcd client URLs (config etcd.endpoints)" });
    else if (typeof address === "string" && endpoints.every((e) => endpointHost(String(e)) === address)) {
      failures.push({ property: "endpoints", reason: `every etcd endpoint is on ${address}, the node about to be reset; list another member's client URL in etcd.endpoints` });
    }
  }
  return { inputs: news, failures };
}

const asInputs = (news: Wire<CheckInputs>): CheckInputs => ({
  endpoints: (news.endpoints as string[]).map(String),
  member: news.member as string,
  nodeAddress: news.nodeAddress as string,
  runId: news.runId as string,
  caCert: news.caCert as string | undefined,
  cert: news.cert as string | undefined,
  key: news.key as string | undefined,
});

async function check(inputs: CheckInputs): Promise<EtcdRejoinCheckOutputs> {
  const tls = { caCert: inputs.caCert, cert: inputs.cert, key: inputs.key };
  const clientFor = (urls: string[]) => new Etcd3(etcdClientOptions(urls, tls, { dialTimeout: 10_000 }));
  const client = clientFor(inputs.endpoints.filter((e) => endpointHost(e) !== inputs.nodeAddress));
  try {
    const result = await checkEtcdRejoin(client, inputs.member, inputs.nodeAddress, answersWithin(clientFor), clientFor);
    return { endpoints: inputs.endpoints, member: inputs.member, nodeAddress: inputs.nodeAddress, runId: inputs.runId, ...result };
  } finally {
    client.close();
  }
}

export const etcdRejoinCheckProvider: TypedProvider<CheckInputs, EtcdRejoinCheckOutputs> = {
  async check(_olds, news) {
    return checkInputs(news);
  },

  async diff(_id, olds, news) {
    const replaces = (["member", "nodeAddress", "runId"] as const).filter((key) => olds[key] !== news[key]);
    return { changes: replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: true };
  },

  async create(news) {
    throwIfFailed(checkInputs(news).failures ?? []);
    const outs = await check(asInputs(news));
    return { id: `${outs.member}:${outs.memberId}`, outs };
  },
};

export class EtcdRejoinCheck extends pulumi.dynamic.Resource {
  declare readonly memberId: pulumi.Output<string>;

  constructor(name: string, args: EtcdRejoinCheckArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      etcdRejoinCheckProvider,
      name,
      {
        endpoints: args.endpoints,
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        member: args.member,
        nodeAddress: args.nodeAddress,
        runId: args.runId,
        memberId: undefined,
        newLeader: undefined,
      },
      withSecretOutputs(opts, ["caCert", "cert", "key"]),
      "cidr-migration",
      "EtcdRejoinCheck",
    );
  }
}
