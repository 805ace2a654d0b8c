import { Etcd3, IMember } from "etcd3";
import { UserError } from "../config/errors";
import { checkQuorumWithout, handOffLeadership, onHost } from "./etcdPeerMove";
import { AnswersAt } from "./etcdMemberReplace";

/**
 * Before a control-plane node's `kubeadm reset` (nodeRollout.strategy kubeadm-rejoin): its etcd member is about to
 * leave the cluster and come back empty with `kubeadm join --control-plane`. That is safe only while every other
 * member works: with three members and one of the others down, the removal leaves two, one of them down, and the
 * cluster without a majority. So, with nothing changed yet:
 * - three or more members, every one started (checkQuorumWithout);
 * - every other member answers at its client URLs, now;
 * - the member is the node's (named after it, its peer URL on the node's address);
 * and, when it leads, leadership handed to another member, so that its removal costs no election.
 *
 * A re-run after the node came back finds the member running again (a new ID) and checks the same way.
 */

export interface EtcdRejoinCheckResult {
  memberId: string;
  /** The member that took the lead from this one, when it led. */
  newLeader?: string;
}

export async function checkEtcdRejoin(client: Etcd3, member: string, nodeAddress: string, answersAt: AnswersAt, clientFor: (urls: string[]) => Etcd3): Promise<EtcdRejoinCheckResult> {
  const { members } = await client.cluster.memberList({});
  checkQuorumWithout(members, member);
  const own = members.find((m) => m.name === member);
  if (!own) {
    throw new UserError(`etcd has no member named ${member} (members: ${namesOf(members)}); a control-plane node's kubeadm-rejoin needs its stacked etcd member; use nodeRollout.strategy reregister for it, nothing was changed`);
  }
  if (!onHost(own, nodeAddress)) {
    throw new UserError(`etcd member ${member} has peer URLs ${own.peerURLs.join(", ")}, none on the node's address ${nodeAddress}; check cidr-migration:nodes, nothing was changed`);
  }
  for (const other of members.filter((m) => m.ID !== own.ID)) {
    if (!(await answersAt(other.clientURLs))) {
      throw new UserError(`etcd member ${other.name} does not answer at ${other.clientURLs.join(", ")}: with ${member} reset as well, etcd would lose its majority; bring ${other.name} back (etcdctl endpoint health --cluster), then re-run; nothing was changed`);
    }
  }
  const newLeader = await handOffLeadership(client, member, clientFor);
  return { memberId: own.ID, ...(newLeader !== undefined ? { newLeader } : {}) };
}

const namesOf = (members: IMember[]) => members.map((m) => m.name || "(not started)").sort().join(", ");
