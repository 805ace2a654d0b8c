import { Etcd3, IMember } from "etcd3";
import { UserError } from "../config/errors";
import { endpointHost, urlHost } from "../net/cidr";

/**
 * A control-plane node's etcd member follows its node to a new address (issue 16, control-plane step 2): the
 * member's peer URLs are updated in place (`etcdctl member update`) before the member restarts listening there,
 * so the member keeps its ID and data and the cluster never loses a voter. The other members learn the new URL
 * from the update and connect to it once the member listens there.
 *
 * Quorum is checked first: every member must be started (a name, and a client URL), and there must be three or
 * more, so that the one member restarting afterwards leaves a majority. A second run finds the URLs moved and
 * changes nothing.
 */

export interface EtcdPeerMove {
  /** the member's name (kubeadm names it after the node) */
  member: string;
  from: string;
  to: string;
}

export interface EtcdPeerMoveResult {
  action: "updated" | "already";
  memberId: string;
  before: string[];
  after: string[];
}

/** Whether one of the member's peer URLs is on `host`. */
export const onHost = (member: IMember, host: string) => member.peerURLs.some((url) => endpointHost(url) === host);

/** A URL with its host moved from one address to the other (IPv6 hosts in brackets); other URLs as they are. */
export function movedUrl(url: string, from: string, to: string): string {
  const parsed = new URL(url);
  if (endpointHost(url) !== from) return url;
  parsed.hostname = urlHost(to);
  // URL keeps a trailing "/" on an empty path; etcd's own URLs have none
  return url.endsWith("/") ? parsed.toString() : parsed.toString().replace(/\/$/, "");
}

/** The member's peer URLs once it is at `to`: what the update sets, and what a replacement is added at. */
export const peerUrlsAt = (member: IMember, move: EtcdPeerMove) => member.peerURLs.map((url) => movedUrl(url, move.from, move.to));

/**
 * Quorum for taking `member` away: three or more members, and every one of them started (a name, and a client URL),
 * so that the member away leaves a majority. Throws before any change otherwise.
 */
export function checkQuorumWithout(members: IMember[], member: string): void {
  const unstarted = members.filter((m) => !m.name || m.clientURLs.length === 0);
  if (unstarted.length > 0) {
    throw new UserError(`etcd member(s) ${unstarted.map((m) => m.peerURLs.join(",")).join("; ")} have not started; a peer move needs every member up (etcdctl member list), nothing was changed`);
  }
  if (members.length < 3) {
    throw new UserError(`etcd has ${members.length} member(s): restarting ${member} on its new address would leave no majority; add a member first (3 or more), nothing was changed`);
  }
}

/**
 * Everything the move needs, checked without changing anything: quorum without the member, the member there, and its
 * peer URL on `from` (or on `to` already, a re-run). Returns the member.
 */
export async function checkPeerMove(client: Etcd3, move: EtcdPeerMove): Promise<IMember> {
  const { members } = await client.cluster.memberList({});
  checkQuorumWithout(members, move.member);
  const member = members.find((m) => m.name === move.member);
  if (!member) throw new UserError(`etcd has no member named ${move.member} (members: ${members.map((m) => m.name).sort().join(", ")}); check nodeAddresses[].name, nothing was changed`);
  if (!onHost(member, move.from) && !onHost(member, move.to)) {
    throw new UserError(`etcd member ${move.member} has peer URLs ${member.peerURLs.join(", ")}, none on ${move.from}; check nodeAddresses[].from, nothing was changed`);
  }
  return member;
}

export async function moveEtcdPeer(client: Etcd3, move: EtcdPeerMove): Promise<EtcdPeerMoveResult> {
  const member = await checkPeerMove(client, move);
  if (!onHost(member, move.from)) return { action: "already", memberId: member.ID, before: member.peerURLs, after: member.peerURLs };
  const after = peerUrlsAt(member, move);
  await client.cluster.memberUpdate({ ID: member.ID, peerURLs: after });
  return { action: "updated", memberId: member.ID, before: member.peerURLs, after };
}

/**
 * Before the member's peer URL is updated (and so before it restarts on its new address): if it leads the cluster,
 * leadership moves to another member first, so that the restart costs no election (writes during one are refused).
 * After the update the other members answer it at the new address, where it does not listen yet: a leader then
 * gets no acknowledgement, and writes stall until it loses the lead. `moveLeader` must be sent to the
 * leader itself, hence a client for its URLs from `clientFor`. Returns the new leader's name, or undefined when
 * the member did not lead.
 */
export async function handOffLeadership(client: Etcd3, memberName: string, clientFor: (urls: string[]) => Etcd3): Promise<string | undefined> {
  const { members } = await client.cluster.memberList({});
  const member = members.find((m) => m.name === memberName);
  if (!member) throw new UserError(`etcd has no member named ${memberName}; nothing was changed`);
  const { leader } = await client.maintenance.status();
  if (leader !== member.ID) return undefined;
  const target = members.find((m) => m.ID !== member.ID && m.clientURLs.length > 0);
  if (!target) throw new UserError(`etcd member ${memberName} leads and no other member is started to take over; nothing was changed`);
  const viaLeader = clientFor(member.clientURLs);
  try {
    await viaLeader.maintenance.moveLeader({ targetID: target.ID });
  } finally {
    viaLeader.close();
  }
  return target.name;
}
