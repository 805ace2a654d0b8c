import * as pulumi from "@pulumi/pulumi";
import { Etcd3 } from "etcd3";
import { etcdClientOptions, EtcdTlsMaterial } from "../lib/config/etcdClientOptions";
import { checkPeerMove, handOffLeadership, moveEtcdPeer } from "../lib/controlPlane/etcdPeerMove";
import { endpointHost, isIpAddress, normalizeIp } from "../lib/net/cidr";
import { containsUnknown, requiredStrings, sameAsRecorded, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * A control-plane node's etcd member follows its address (issue 16, control-plane steps 1 and 2): quorum checked
 * (three or more members, every one started), leadership handed to another member when this one leads (its restart
 * then costs no election), and its peer URL updated in place (`member update`: it keeps its ID and its data). The
 * member restarts on the new address afterwards, when its manifest changes (components/controlPlaneAddress).
 *
 * etcd is reached through the stack's etcd endpoints, less the moving node's own: that member is about to restart.
 * A re-run finds the peer URL moved and changes nothing. Deleting the resource changes nothing either: the member
 * stays where the node is. The TLS material is an input only, never in the outputs.
 */

/** How a step reaches etcd: the stack's etcd client URLs (config etcd.endpoints) and its client TLS material. */
export interface EtcdAccessArgs {
  endpoints: pulumi.Input<pulumi.Input<string>[]>;
  caCert?: pulumi.Input<string>;
  cert?: pulumi.Input<string>;
  key?: pulumi.Input<string>;
}

/** Which member moves, and how to reach etcd: the arguments of every etcd step of a node's address change. */
export interface EtcdMemberArgs extends EtcdAccessArgs {
  /** The member's name: kubeadm names it after the node. */
  member: pulumi.Input<string>;
  from: pulumi.Input<string>;
  to: pulumi.Input<string>;
  /** The migration run id: a new one runs the step again. */
  runId: pulumi.Input<string>;
}

export interface EtcdPeerMoveArgs extends EtcdMemberArgs {
  /**
   * "check": only the quorum check, before anything on the node changes; "move" (default): the hand-off and the
   * update; "handoff": only the hand-off, before the node's old address goes (the member's own connections to its
   * peers leave from that address, and a leader whose connections drop costs the cluster an election).
   */
  step?: pulumi.Input<PeerMoveStep>;
}

type PeerMoveStep = "check" | "move" | "handoff";
const STEPS: readonly PeerMoveStep[] = ["check", "move", "handoff"];

/** What identifies the move, recorded in the outputs as given. */
interface PeerMoveRecord {
  step: PeerMoveStep;
  endpoints: string[];
  member: string;
  from: string;
  to: string;
  runId: string;
}

type PeerMoveInputs = PeerMoveRecord & EtcdTlsMaterial;

export interface EtcdPeerMoveOutputs extends PeerMoveRecord {
  memberId: string;
  action: "updated" | "already" | "checked" | "handed-off";
  /** The member that took the lead from this one, when it led. */
  newLeader?: string;
  peerUrlsBefore: string[];
  peerUrlsAfter: string[];
}

const IDENTITY = ["step", "member", "from", "to", "runId"] as const;


function checkInputs(news: Wire<PeerMoveInputs>): pulumi.dynamic.CheckResult<Wire<PeerMoveInputs>> {
  const failures = requiredStrings(news, ["member", "from", "to", "runId"]);
  if (news.step !== undefined && !containsUnknown(news.step) && !STEPS.includes(news.step as PeerMoveStep)) failures.push({ property: "step", reason: `step ${JSON.stringify(news.step)} must be one of ${STEPS.join(", ")}` });
  for (const key of ["from", "to"] as const) {
    const value = news[key];
    if (typeof value === "string" && !containsUnknown(value) && (!isIpAddress(value) || normalizeIp(value) !== value)) {
      failures.push({ property: key, reason: `${key} ${JSON.stringify(value)} must be an IP address in normal form` });
    }
  }
  const endpoints = news.endpoints;
  if (!containsUnknown(endpoints)) {
    if (!Array.isArray(endpoints) || endpoints.length === 0) failures.push({ property: "endpoints", reason: "endpoints must list the etcd client URLs (config etcd.endpoints)" });
    else if (typeof news.from === "string" && endpoints.every((e) => endpointHost(String(e)) === news.from)) {
      failures.push({ property: "endpoints", reason: `every etcd endpoint is on ${news.from}, the node whose address moves; list another member's client URL in etcd.endpoints` });
    }
  }
  return { inputs: news, failures };
}

async function movePeer(inputs: PeerMoveInputs): Promise<EtcdPeerMoveOutputs> {
  const tls = { caCert: inputs.caCert, cert: inputs.cert, key: inputs.key };
  const others = inputs.endpoints.filter((e) => endpointHost(e) !== inputs.from && endpointHost(e) !== inputs.to);
  const client = new Etcd3(etcdClientOptions(others, tls, { dialTimeout: 10_000 }));
  try {
    if (inputs.step === "check") {
      const member = await checkPeerMove(client, { member: inputs.member, from: inputs.from, to: inputs.to });
      return { ...recorded(inputs), memberId: member.ID, action: "checked", peerUrlsBefore: member.peerURLs, peerUrlsAfter: member.peerURLs };
    }
    const clientFor = (urls: string[]) => new Etcd3(etcdClientOptions(urls, tls, { dialTimeout: 10_000 }));
    if (inputs.step === "handoff") {
      const member = await checkPeerMove(client, { member: inputs.member, from: inputs.from, to: inputs.to });
      const newLeader = await handOffLeadership(client, inputs.member, clientFor);
      return { ...recorded(inputs), memberId: member.ID, action: "handed-off", ...(newLeader !== undefined ? { newLeader } : {}), peerUrlsBefore: member.peerURLs, peerUrlsAfter: member.peerURLs };
    }
    const newLeader = await handOffLeadership(client, inputs.member, clientFor);
    const moved = await moveEtcdPeer(client, { member: inputs.member, from: inputs.from, to: inputs.to });
    return {
      ...recorded(inputs),
      memberId: moved.memberId,
      action: moved.action,
      ...(newLeader !== undefined ? { newLeader } : {}),
      peerUrlsBefore: moved.before,
      peerUrlsAfter: moved.after,
    };
  } finally {
    client.close();
  }
}

const recorded = (inputs: PeerMoveInputs): PeerMoveRecord => ({ step: inputs.step, endpoints: inputs.endpoints, member: inputs.member, from: inputs.from, to: inputs.to, runId: inputs.runId });

const asInputs = (news: Wire<PeerMoveInputs>): PeerMoveInputs => ({
  step: (news.step as PeerMoveStep | undefined) ?? "move",
  endpoints: (news.endpoints as string[]).map(String),
  member: news.member as string,
  from: news.from as string,
  to: news.to as string,
  runId: news.runId as string,
  caCert: news.caCert as string | undefined,
  cert: news.cert as string | undefined,
  key: news.key as string | undefined,
});

export const etcdPeerMoveProvider: TypedProvider<PeerMoveInputs, EtcdPeerMoveOutputs> = {
  async check(_olds, news) {
    return checkInputs(news);
  },

  async diff(_id, olds, news) {
    const replaces = IDENTITY.filter((key) => olds[key] !== news[key]);
    const endpointsChanged = !sameAsRecorded(news.endpoints, olds.endpoints);
    return { changes: replaces.length > 0 || endpointsChanged, replaces: [...replaces], deleteBeforeReplace: true };
  },

  async create(news) {
    const result = checkInputs(news);
    throwIfFailed(result.failures ?? []);
    const outs = await movePeer(asInputs(news));
    return { id: `${outs.member}:${outs.memberId}:${outs.step}`, outs };
  },

  async update(_id, olds, news) {
    // only the endpoints changed: the member is where it was moved; record them
    return { outs: { ...olds, endpoints: asInputs(news).endpoints } };
  },
};

const TLS_PROPERTIES = ["caCert", "cert", "key"];

export class EtcdPeerMove extends pulumi.dynamic.Resource {
  declare readonly memberId: pulumi.Output<string>;
  declare readonly action: pulumi.Output<string>;
  declare readonly peerUrlsAfter: pulumi.Output<string[]>;

  constructor(name: string, args: EtcdPeerMoveArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      etcdPeerMoveProvider,
      name,
      {
        endpoints: args.endpoints,
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        member: args.member,
        from: args.from,
        to: args.to,
        runId: args.runId,
        step: args.step ?? "move",
        memberId: undefined,
        action: undefined,
        newLeader: undefined,
        peerUrlsBefore: undefined,
        peerUrlsAfter: undefined,
      },
      withSecretOutputs(opts, TLS_PROPERTIES),
      "cidr-migration",
      "EtcdPeerMove",
    );
  }
}
