import { Etcd3, IMember } from "etcd3";
import { UserError } from "../config/errors";
import { faultPoint } from "../serviceMove/faultHook";
import { checkQuorumWithout, EtcdPeerMove, movedUrl, onHost, peerUrlsAt } from "./etcdPeerMove";
import { setFlags } from "./manifestFlags";
import { sleep } from "../concurrency/sleep";

/**
 * The fallback of a control-plane node's etcd move (issue 16, control-plane step 2), where `member update` cannot
 * work: after the update the member does not come back at its new address, because its data dir cannot restart it
 * (lost, truncated, or another member's: "raft log corrupted", "member already exists"). The member is removed,
 * added again at its new peer URLs, and the node starts it from a clean data dir with `--initial-cluster-state=
 * existing` (withExistingClusterFlags); it gets a new ID, and the other members send it the data.
 *
 * Only for a member that does not work: one that answers at its client URLs (old or new address) is refused.
 *
 * Crash-safe: before the remove, the intent is written to etcd itself (committed by quorum, so it survives the
 * machine running this). A re-run that finds the intent and the removed member still there removes it; one that
 * finds it gone adds it; one that finds it added (not started yet) returns it; one that finds a started member of
 * that name with another ID (the replacement running) clears the intent and changes nothing.
 */

export const MEMBER_REPLACE_PREFIX = "/cidr-migration/etcd-member-replace/";

export interface EtcdMemberReplaceResult {
  /** replaced: removed and added by this call; added-before: an earlier run added it; already: the replacement runs */
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

/** Whether a member answers at any of these client URLs (a status within a few seconds). */
export type AnswersAt = (clientUrls: string[]) => Promise<boolean>;

/** `--initial-cluster` of the cluster with `name` at `peerURLs` (however it is listed now): name=url pairs, sorted. */
export function initialClusterWith(members: IMember[], name: string, peerURLs: string[]): string {
  return [
    ...members.filter((m) => m.name !== name && !m.peerURLs.some((url) => peerURLs.includes(url))).flatMap((m) => m.peerURLs.map((url) => `${m.name}=${url}`)),
    ...peerURLs.map((url) => `${name}=${url}`),
  ].sort().join(",");
}


async function added(client: Etcd3, move: EtcdPeerMove, id: string, action: EtcdMemberReplaceResult["action"]): Promise<EtcdMemberReplaceResult> {
  const { members } = await client.cluster.memberList({});
  const member = members.find((m) => m.ID === id)!;
  return { action, memberId: id, peerURLs: member.peerURLs, initialCluster: initialClusterWith(members, move.member, member.peerURLs) };
}

/** How long a membership change waits for etcd to count the cluster healthy again (its strict reconfiguration check). */
const RECONFIG_WAIT_MS = 60_000;

/**
 * A membership change, retried for up to a minute while etcd refuses it with an error matching `refusal`: right
 * after a remove or an add, its strict reconfiguration check refuses the next change until the leader has been
 * connected to the members for a while (seconds).
 */
export async function retriedWhileEtcdRefuses<T>(change: () => Promise<T>, refusal: RegExp): Promise<T> {
  const deadline = Date.now() + RECONFIG_WAIT_MS;
  for (;;) {
    try {
      return await change();
    } catch (err) {
      if (!refusal.test((err as Error).message) || Date.now() > deadline) throw err;
      await sleep(1000);
    }
  }
}

/** memberAdd, retried while etcd answers "unhealthy cluster" (a new voter right after a remove). */
const addMember = async (client: Etcd3, peerURLs: string[]): Promise<IMember> =>
  retriedWhileEtcdRefuses(async () => (await client.cluster.memberAdd({ peerURLs })).member, /unhealthy cluster/);

async function addRecorded(client: Etcd3, move: EtcdPeerMove, intent: ReplaceIntent): Promise<EtcdMemberReplaceResult> {
  const member = await addMember(client, intent.peerURLs);
  faultPoint("member-replace-after-add", move.member);
  return added(client, move, member.ID, "replaced");
}

export async function replaceEtcdMember(client: Etcd3, move: EtcdPeerMove, answersAt: AnswersAt): Promise<EtcdMemberReplaceResult> {
  const intentKey = MEMBER_REPLACE_PREFIX + move.member;
  const recorded = await client.get(intentKey).string();
  const intent = recorded ? (JSON.parse(recorded) as ReplaceIntent) : undefined;
  const { members } = await client.cluster.memberList({});
  const named = members.find((m) => m.name === move.member);
  if (intent && named && named.ID !== intent.removedId) {
    // the replacement has started (a started member has its name)
    await clearMemberReplaceIntent(client, move.member);
    return added(client, move, named.ID, "already");
  }
  const waiting = members.find((m) => !m.name && onHost(m, move.to));
  if (waiting) return added(client, move, waiting.ID, "added-before");

  if (!named) {
    if (!intent) {
      throw new UserError(`etcd has no member named ${move.member} (members: ${members.map((m) => m.name || "(not started)").sort().join(", ")}) and no record of this tool removing it; check nodeAddresses[].name, nothing was changed`);
    }
    // an earlier run removed it and was cut before the add: the same add, at the recorded peer URLs
    return addRecorded(client, move, intent);
  }

  checkQuorumWithout(members, move.member);
  if (!onHost(named, move.from) && !onHost(named, move.to)) {
    throw new UserError(`etcd member ${move.member} has peer URLs ${named.peerURLs.join(", ")}, on neither ${move.from} nor ${move.to}; check nodeAddresses[].from, nothing was changed`);
  }
  const next: ReplaceIntent = intent ?? { removedId: named.ID, peerURLs: peerUrlsAt(named, move) };
  if (!intent) {
    const clientUrls = [...new Set([...named.clientURLs, ...named.clientURLs.map((url) => movedUrl(url, move.from, move.to))])];
    if (await answersAt(clientUrls)) {
      throw new UserError(`etcd member ${move.member} answers at ${clientUrls.join(", ")}: it works, and replacing a working member would only cost its data; nothing was changed`);
    }
    await client.put(intentKey).value(JSON.stringify(next));
    faultPoint("member-replace-after-intent", move.member);
  }
  await client.cluster.memberRemove({ ID: named.ID });
  faultPoint("member-replace-after-remove", move.member);
  return addRecorded(client, move, next);
}

/** Clears the intent once the replacement is known to run (the node's etcd healthy from its clean data dir). */
export async function clearMemberReplaceIntent(client: Etcd3, member: string): Promise<void> {
  await client.delete().key(MEMBER_REPLACE_PREFIX + member);
}

/** Whether an earlier run began replacing this member and has not seen the replacement run. */
export async function memberReplaceUnderway(client: Etcd3, member: string): Promise<boolean> {
  return (await client.get(MEMBER_REPLACE_PREFIX + member).string()) !== null;
}

/**
 * The member's etcd.yaml for its first start after replaceEtcdMember: `--initial-cluster` as the result says and
 * `--initial-cluster-state=existing` (a member added to a running cluster must not bootstrap a new one). The data
 * dir it starts from must be empty: the old one holds the removed member's identity.
 */
export function withExistingClusterFlags(manifest: string, initialCluster: string, source = "/etc/kubernetes/manifests/etcd.yaml"): string {
  return setFlags(manifest, { "initial-cluster": initialCluster, "initial-cluster-state": "existing" }, { container: "etcd", source }).text;
}

/**
 * AnswersAt through `clientFor`: a status from one of the URLs twice, `apartMs` apart, each within `withinMs`. Twice,
 * because a crash-looping etcd serves for a moment between its start and its panic; a client that cannot dial
 * answers no.
 */
export function answersWithin(clientFor: (urls: string[]) => Etcd3, withinMs = 5000, apartMs = 2000): AnswersAt {
  const statusFrom = async (url: string) => {
    const client = clientFor([url]);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), withinMs)));
      return await Promise.race([client.maintenance.status().then(() => true, () => false), timeout]);
    } finally {
      clearTimeout(timer);
      client.close();
    }
  };
  return async (clientUrls) => {
    for (const url of clientUrls) {
      if (!(await statusFrom(url))) continue;
      await sleep(apartMs);
      if (await statusFrom(url)) return true;
    }
    return false;
  };
}
