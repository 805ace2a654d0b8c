import { Etcd3, IMember } from "etcd3";
import { UserError } from "../config/errors";
import { faultPoint } from "../serviceMove/faultHook";
import { checkQuorumWithout, EtcdPeerMove, movedUrl, onHost } from "./etcdPeerMove";
import { setFlags } from "./manifestFlags";
import { sleep } from "../concurrency/sleep";

/**
 * The fallback of a control-plane node's etcd move (issue 16, control-plane step 2), where `member update` cannot
 * work: the member does not come back at its new address (a data dir whose member the cluster no longer knows
 * there, "member already exists"). The member is removed, added again at its new peer URL, and the node starts
 * it from a clean data dir with `--initial-cluster-state=existing` (withExistingClusterFlags); it gets a new ID,
 * and the other members send it the data.
 *
 * Crash-safe: before the remove, the intent is written to etcd itself (committed by quorum, so it survives the
 * machine running this). A re-run that finds the member gone and its intent recorded adds it; one that finds it
 * added (a member not started yet at the new peer URL) returns it; one that finds it started at the new peer URL
 * clears the intent and changes nothing.
 */

export const MEMBER_REPLACE_PREFIX = "/cidr-migration/etcd-member-replace/";

export interface EtcdMemberReplaceResult {
  /** replaced: removed and added by this call; added-before: an earlier run added it; already: it runs at `to` */
  action: "replaced" | "added-before" | "already";
  memberId: string;
  peerURLs: string[];
  /** `--initial-cluster` for its restart: every member, this one at its new peer URLs */
  initialCluster: string;
}

interface ReplaceIntent {
  removedId: string;
  peerURLs: string[];
}

function initialClusterOf(members: IMember[], name: string, addedId: string): string {
  return members
    .flatMap((m) => m.peerURLs.map((url) => `${m.ID === addedId ? name : m.name}=${url}`))
    .sort()
    .join(",");
}

async function added(client: Etcd3, move: EtcdPeerMove, id: string, action: EtcdMemberReplaceResult["action"]): Promise<EtcdMemberReplaceResult> {
  const { members } = await client.cluster.memberList({});
  const member = members.find((m) => m.ID === id)!;
  return { action, memberId: id, peerURLs: member.peerURLs, initialCluster: initialClusterOf(members, move.member, id) };
}

/** How long an add waits for the cluster to count as healthy again after the remove (etcd's strict reconfig check). */
const ADD_WAIT_MS = 60_000;

/**
 * memberAdd, retried while etcd answers "unhealthy cluster": right after a remove, its strict reconfiguration check
 * refuses a new voter until the leader has been connected to the remaining members for a while (seconds).
 */
async function addMember(client: Etcd3, peerURLs: string[]): Promise<IMember> {
  const deadline = Date.now() + ADD_WAIT_MS;
  for (;;) {
    try {
      return (await client.cluster.memberAdd({ peerURLs })).member;
    } catch (err) {
      if (!/unhealthy cluster/.test((err as Error).message) || Date.now() > deadline) throw err;
      await sleep(1000);
    }
  }
}

export async function replaceEtcdMember(client: Etcd3, move: EtcdPeerMove): Promise<EtcdMemberReplaceResult> {
  const intentKey = MEMBER_REPLACE_PREFIX + move.member;
  const { members } = await client.cluster.memberList({});
  const named = members.find((m) => m.name === move.member);
  if (named && onHost(named, move.to)) {
    await client.delete().key(intentKey);
    return { action: "already", memberId: named.ID, peerURLs: named.peerURLs, initialCluster: initialClusterOf(members, move.member, named.ID) };
  }
  const waiting = members.find((m) => !m.name && onHost(m, move.to));
  if (waiting) return added(client, move, waiting.ID, "added-before");

  if (!named) {
    const recorded = await client.get(intentKey).string();
    if (!recorded) {
      throw new UserError(`etcd has no member named ${move.member} (members: ${members.map((m) => m.name || "(not started)").sort().join(", ")}) and no record of this tool removing it; check nodeAddresses[].name, nothing was changed`);
    }
    // an earlier run removed it and was cut before the add: the same add, at the recorded peer URLs
    const intent = JSON.parse(recorded) as ReplaceIntent;
    const member = await addMember(client, intent.peerURLs);
    faultPoint("member-replace-after-add", move.member);
    return added(client, move, member.ID, "replaced");
  }

  checkQuorumWithout(members, move.member);
  if (!onHost(named, move.from)) {
    throw new UserError(`etcd member ${move.member} has peer URLs ${named.peerURLs.join(", ")}, none on ${move.from}; check nodeAddresses[].from, nothing was changed`);
  }
  const intent: ReplaceIntent = { removedId: named.ID, peerURLs: named.peerURLs.map((url) => movedUrl(url, move.from, move.to)) };
  await client.put(intentKey).value(JSON.stringify(intent));
  faultPoint("member-replace-after-intent", move.member);
  await client.cluster.memberRemove({ ID: named.ID });
  faultPoint("member-replace-after-remove", move.member);
  const member = await addMember(client, intent.peerURLs);
  faultPoint("member-replace-after-add", move.member);
  return added(client, move, member.ID, "replaced");
}

/**
 * The member's etcd.yaml for its first start after replaceEtcdMember: `--initial-cluster` as the result says and
 * `--initial-cluster-state=existing` (a member added to a running cluster must not bootstrap a new one). The data
 * dir it starts from must be empty: the old one holds the removed member's identity.
 */
export function withExistingClusterFlags(manifest: string, initialCluster: string, source = "/etc/kubernetes/manifests/etcd.yaml"): string {
  return setFlags(manifest, { "initial-cluster": initialCluster, "initial-cluster-state": "existing" }, { container: "etcd", source }).text;
}
