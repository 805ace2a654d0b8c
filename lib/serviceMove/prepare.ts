import { isOwnedByAny, withoutOwners } from "./dependents";
import { faultPoint } from "./faultHook";
import { JournaledDependent, JournalEntry } from "./journal";
import { serviceRefKey } from "./serviceRef";
import { KubeObject, paths } from "./kubeRest";
import { retryOnConflict } from "./retryOnConflict";
import { previousIps, ServiceMoveRequest } from "./moveTypes";
import { buildRecreateBody, RecreateBody, userMetadata } from "./recreateBody";
import { withOldIpBridge } from "./oldIpBridge";
import { withoutNewIpAhead } from "./newIpAhead";
import { relinkDependents, restoreEndpoints } from "./finish";
import { Context, Decision, journalWhere, moveError, retrying, uidOf, writeJournal } from "./moverContext";

import { createWhenFree } from "./swap";

/** Phase 1: journal a move and detach its dependents before anything is deleted; and undo that (abandon, roll back) when the run stops first. */

async function detachDependents(ctx: Context, dependents: JournaledDependent[], oldUids: ReadonlySet<string>): Promise<void> {
  await Promise.all(dependents.map((d) => retrying(async () => {
    const path = `${d.collection}/${encodeURIComponent(d.object.metadata?.name ?? "")}`;
    await retryOnConflict(5, async () => {
      const current = await ctx.rest.getOptional(path);
      if (!current || !isOwnedByAny(current, oldUids)) return;
      await ctx.rest.mergePatch(path, { metadata: { resourceVersion: current.metadata?.resourceVersion, ownerReferences: withoutOwners(current.metadata?.ownerReferences, oldUids) } });
    });
  })));
}

/** The journaled Service as it was, old IP included: what a rollback creates. */
export function originalBody(original: KubeObject): KubeObject {
  const body: KubeObject = { ...structuredClone(original), apiVersion: "v1", kind: "Service", metadata: userMetadata(original.metadata) };
  delete body.status;
  return body;
}

/**
 * The apiserver refused the new Service for a reason other than timing (a validation it did not make on the
 * original, the IP outside its range because it does not serve the new range yet, ...). The original is put back
 * as it was, old IP included (the delete released it), with its Endpoints and dependents, so the failed move
 * costs a gap and no data. Then the move fails with both reasons.
 */
export async function rollBack(ctx: Context, prepared: Prepared, reason: string): Promise<never> {
  const { entry, request } = prepared;
  const key = serviceRefKey(request);
  const where = journalWhere(ctx, request);
  let restored: KubeObject;
  try {
    restored = (await createWhenFree(ctx, originalBody(withoutNewIpAhead(entry.service)), key, uidOf(entry.service), where)).created;
  } catch (err) {
    throw moveError(`Service ${key} was deleted, its re-create at ${entry.toIP} was refused (${reason}) and putting it back at ${entry.fromIP} failed too (${(err as Error).message.split("\n")[0]}); the original is kept in ${where}: fix the cause and run again, the re-run re-creates it`);
  }
  const uidMap = new Map<string, string>([[uidOf(entry.service)!, uidOf(restored)!]]);
  if (entry.endpoints) uidMap.set(uidOf(entry.endpoints)!, uidOf((await restoreEndpoints(ctx, entry, uidMap)).object)!);
  await relinkDependents(ctx, entry, uidMap);
  await ctx.journal.remove([key]);
  throw moveError(`Service ${key}: kube-apiserver refused it at ${entry.toIP} (${reason}); it was put back as it was at ${entry.fromIP}, nothing lost: fix the cause (is kube-apiserver on the new --service-cluster-ip-range?) and run again`);
}

/** A move between its phases: journaled with its dependents detached, or resumed from an earlier run's journal. */
export interface Prepared {
  request: ServiceMoveRequest;
  entry: JournalEntry;
  /** The Service as this run last saw it (undefined: it did not exist). */
  live?: KubeObject;
  outcome: "moved" | "completed-from-journal";
  /** The body that re-creates it, built once from the journaled original (and again only when that is refreshed). */
  recreate: RecreateBody;
}

export function preparedMove(ctx: Context, request: ServiceMoveRequest, entry: JournalEntry, live: KubeObject | undefined, outcome: Prepared["outcome"]): Prepared {
  return { request, entry, live, outcome, recreate: recreateBodyOf(ctx, entry) };
}

/**
 * The re-create body, with the old-ClusterIP bridge when the run asks for one; never for the final DNS swap (a
 * `vacate` move): nobody resolves through the old DNS IP by then, and the old DNS Service is what goes.
 */
export function recreateBodyOf(ctx: Context, entry: JournalEntry): RecreateBody {
  // the address routed first was ours, for the swap only: the new Service holds it as its ClusterIP
  const recreate = buildRecreateBody(withoutNewIpAhead(entry.service), entry.fromIP, entry.toIP, entry.otherFamily);
  if (!ctx.options.bridgeOldIps || entry.vacate) return recreate;
  return { ...recreate, body: withOldIpBridge(recreate.body, previousIps(entry)) };
}

/**
 * Someone changed the journaled Service before our write (a precondition failed): the journal takes the newer
 * object as the original, and its re-create body is built again, so the move never loses that edit.
 */
export async function journalNewerOriginal(ctx: Context, prepared: Prepared, current: KubeObject): Promise<void> {
  prepared.entry.service = current;
  prepared.recreate = recreateBodyOf(ctx, prepared.entry);
  await writeJournal(ctx, prepared.entry);
}

/** Phase 1a: the journal entry of a move (written for all moves at once, see runServiceMoves). */
export function journalEntryFor(decision: Extract<Decision, { kind: "move" }>, ownedBy: Map<string, JournaledDependent[]>, endpointsOf: Map<string, KubeObject>): JournalEntry {
  const { request, live } = decision;
  const endpoints = endpointsOf.get(serviceRefKey(request));
  const found = [uidOf(live), uidOf(endpoints)].flatMap((uid) => (uid ? ownedBy.get(uid) ?? [] : []));
  // Dependents an interrupted run already detached are only in its journal; its copies are the originals.
  const dependents = new Map<string, JournaledDependent>();
  for (const d of [...(decision.previous?.dependents ?? []), ...found]) {
    const uid = uidOf(d.object)!;
    if (!dependents.has(uid)) dependents.set(uid, d);
  }
  return {
    format: "cidr-migration.io/service-move/v1",
    kind: "recreate",
    namespace: request.namespace,
    name: request.name,
    fromIP: request.fromIP,
    toIP: request.toIP,
    ...(request.otherFamily ? { otherFamily: { ...request.otherFamily } } : {}),
    recordedAt: decision.previous?.recordedAt ?? new Date().toISOString(),
    service: live,
    ...(endpoints ? { endpoints } : {}),
    dependents: [...dependents.values()],
    ...(request.vacate ? { vacate: { ...request.vacate } } : {}),
  };
}

/** Phase 1b, once the entry is durable: dependents detached from the old owners. Nothing is deleted yet. */
export async function detachMove(ctx: Context, request: ServiceMoveRequest, entry: JournalEntry): Promise<Prepared> {
  const owners = [uidOf(entry.service), uidOf(entry.endpoints)].filter((u): u is string => !!u);
  await detachDependents(ctx, entry.dependents, new Set(owners));
  faultPoint("after-detach-dependents", serviceRefKey(request));
  return preparedMove(ctx, request, entry, entry.service, "moved");
}

/**
 * Undoes phase 1 for a move that was never deleted (the run stopped first): owners back. Returns whether its
 * journal entry may go.
 */
export async function abandon(ctx: Context, prepared: Pick<Prepared, "entry" | "outcome">): Promise<boolean> {
  if (prepared.outcome !== "moved") return false; // an interrupted earlier move keeps its journal
  const live = await ctx.rest.getOptional(paths.service(prepared.entry.namespace, prepared.entry.name));
  if (!live || uidOf(live) !== uidOf(prepared.entry.service)) return false; // it was deleted after all: keep the journal
  await relinkDependents(ctx, prepared.entry, new Map());
  return true;
}
