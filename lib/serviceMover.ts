import { KubeConfig } from "@kubernetes/client-node";
import { UserError } from "./errors";
import {
  hasSelector, isOwnedByAny, relinkedOwners, restorableCopy, sameEndpoints, sameOwners, withoutOwners,
} from "./serviceMove/dependents";
import { findOwnedObjects } from "./serviceMove/dependentsScan";
import { faultPoint } from "./serviceMove/faultHook";
import {
  DEFAULT_JOURNAL_NAMESPACE, entryFromSecret, JOURNAL_LABEL, JOURNAL_LABEL_VALUE, JournaledDependent, JournalEntry,
  journalName, journalSecret, serviceKey,
} from "./serviceMove/journal";
import { isStatus, KubeApiError, KubeObject, kubeRest, KubeRest, paths } from "./serviceMove/kubeRest";
import {
  KubernetesServiceRequest, KubernetesServiceResult, MoveReport, MoveResult, MoverOptions, ServiceMoveRequest,
  ServiceMoveSpec, ServiceRef, StandInRequest,
} from "./serviceMove/moveTypes";
import { buildRecreateBody, clusterIpsOf, differingUserFields, holdsNoClusterIp, spec } from "./serviceMove/recreateBody";
import { buildStandInBody } from "./serviceMove/standIn";
import { cidrContains } from "./cidr";

/**
 * The Service mover: re-creates Services at their planned ClusterIPs and loses nothing on the way.
 *
 * One move is: journal → detach dependents → delete → create → restore Endpoints → re-link dependents → verify
 * → remove the journal. Every step is decided from what the cluster holds now plus the journal, never from
 * memory of an earlier run, so a run cut off anywhere (SIGKILL included) is finished by the next:
 * - journal and the original Service still there: the move starts over, keeping the journaled dependents;
 * - journal and no Service (or the old one still terminating): re-created from the journal;
 * - journal and a new Service at the planned IP: verified and completed;
 * - no journal and the Service at the planned IP (or elsewhere in the new range): left alone.
 *
 * Before the first delete, every move is checked (expected old IP, planned IP free, LoadBalancer consent), so a
 * bad entry stops the run while nothing has changed. The delete carries a uid precondition (it can only remove
 * the object that was journaled) and the create follows it at once; while a finalizer keeps the old object the
 * create is retried with a tight backoff. The gap is measured from the delete's answer to the create's answer.
 *
 * Moves run `parallelism` at a time; default/kubernetes (re-created by the apiserver itself, which takes up
 * to its 10 s loop) runs alongside them outside that bound because it only waits.
 */

const POLL_MS = 50;
const SETTLE_POLL_MS = 100;
const MAX_BACKOFF_MS = 25;

interface Context {
  rest: KubeRest;
  options: Required<Omit<MoverOptions, "serviceCidr" | "log" | "adoptJournals">> & Pick<MoverOptions, "serviceCidr" | "log">;
  journalNamespace: string;
  warnings: string[];
}

type Decision =
  | { kind: "skip"; request: ServiceMoveRequest; result: MoveResult }
  | { kind: "move"; request: ServiceMoveRequest; live: KubeObject; previous?: JournalEntry; journalVersion?: string }
  | { kind: "resume"; request: ServiceMoveRequest; entry: JournalEntry; live?: KubeObject; journalVersion: string };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const round = (ms: number) => Math.round(ms * 100) / 100;

function keyOf(ref: ServiceRef): string {
  return serviceKey(ref.namespace, ref.name);
}

function uidOf(object: KubeObject | undefined): string | undefined {
  return object?.metadata?.uid;
}

function describeDependent(d: JournaledDependent): string {
  return `${d.object.kind} ${d.object.metadata?.namespace}/${d.object.metadata?.name}`;
}

/** Runs `work` over `items`, at most `limit` at a time; stops starting new items once `stop()` says so. */
async function inLanes<T>(items: T[], limit: number, work: (item: T) => Promise<void>, stop: () => boolean): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop()) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
}

/** Network failures that mean the apiserver is not reachable (as opposed to answering with an error). */
const UNREACHABLE = ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ETIMEDOUT", "ECONNRESET", "EAI_AGAIN", "EPIPE"];

/** One line for the operator: what failed, where, and (from the message) what to do. */
function failureLine(err: unknown, server: string, action: string): string {
  if (err instanceof UserError) return err.message;
  if (err instanceof KubeApiError) {
    if (err.status === 401 || err.status === 403) return `${action}: the cluster refused it (HTTP ${err.status}); use an admin kubeconfig (cluster-admin)`;
    return `${action}: the cluster answered HTTP ${err.status} ${err.reason}: ${err.apiMessage}`;
  }
  const code = (err as { code?: unknown }).code;
  const first = String((err as Error)?.message ?? err).split("\n")[0];
  if (typeof code === "string" && UNREACHABLE.includes(code)) {
    return `${action}: cannot reach the cluster at ${server} (${code}); check the kubeconfig's server and that kube-apiserver is up, then run again`;
  }
  return `${action}: ${first}`;
}

function journalPath(ctx: Context, ref: ServiceRef): string {
  return `/api/v1/namespaces/${encodeURIComponent(ctx.journalNamespace)}/secrets/${journalName(ref.namespace, ref.name)}`;
}

function journalWhere(ctx: Context, ref: ServiceRef): string {
  return `journal Secret ${ctx.journalNamespace}/${journalName(ref.namespace, ref.name)}`;
}

async function writeJournal(ctx: Context, entry: JournalEntry, resourceVersion?: string): Promise<void> {
  const body = journalSecret(entry, ctx.journalNamespace);
  const path = journalPath(ctx, entry);
  if (resourceVersion === undefined) {
    try {
      await ctx.rest.create(`/api/v1/namespaces/${encodeURIComponent(ctx.journalNamespace)}/secrets`, body);
      return;
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      resourceVersion = (await ctx.rest.get(path)).metadata?.resourceVersion;
    }
  }
  await ctx.rest.replace(path, { ...body, metadata: { ...body.metadata, resourceVersion } });
}

async function removeJournal(ctx: Context, ref: ServiceRef): Promise<void> {
  try {
    await ctx.rest.delete(journalPath(ctx, ref), {});
  } catch (err) {
    if (!isStatus(err, 404)) throw err;
  }
}

// ---------------------------------------------------------------- preflight (read-only)

interface ClusterView {
  services: Map<string, KubeObject>;
  /** ClusterIP → key of the Service holding it */
  ipHolders: Map<string, string>;
  journals: Map<string, { entry: JournalEntry; resourceVersion: string }>;
}

async function readCluster(ctx: Context): Promise<ClusterView> {
  const [services, secrets] = await Promise.all([
    ctx.rest.list("/api/v1/services"),
    ctx.rest.list(`/api/v1/namespaces/${encodeURIComponent(ctx.journalNamespace)}/secrets`, { labelSelector: `${JOURNAL_LABEL}=${JOURNAL_LABEL_VALUE}` }),
  ]);
  const view: ClusterView = { services: new Map(), ipHolders: new Map(), journals: new Map() };
  for (const service of services) {
    const key = serviceKey(service.metadata?.namespace ?? "", service.metadata?.name ?? "");
    view.services.set(key, service);
    for (const ip of clusterIpsOf(service)) if (ip !== "None") view.ipHolders.set(ip, key);
  }
  for (const secret of secrets) {
    const entry = entryFromSecret(secret);
    view.journals.set(serviceKey(entry.namespace, entry.name), { entry, resourceVersion: secret.metadata?.resourceVersion ?? "" });
  }
  return view;
}

function decide(ctx: Context, view: ClusterView, request: ServiceMoveRequest, problems: string[]): Decision | undefined {
  const key = keyOf(request);
  const live = view.services.get(key);
  const journal = view.journals.get(key);
  const where = `Service ${key}`;
  const typeOf = (object: KubeObject | undefined) => spec(object ?? {}).type;
  const refuseLoadBalancer = (object: KubeObject | undefined): boolean => {
    if ((typeOf(object) ?? request.type) !== "LoadBalancer" || ctx.options.allowLoadBalancerRecreate) return false;
    problems.push(`${where} is a LoadBalancer: re-creating it can give its cloud load balancer a new external address; set cidr-migration:services.allowLoadBalancerRecreate to true to consent, nothing was changed`);
    return true;
  };
  const holder = view.ipHolders.get(request.toIP);
  const vacateKey = request.vacate ? keyOf(request.vacate) : undefined;
  if (holder !== undefined && holder !== key && holder !== vacateKey) {
    problems.push(`${where}: its planned IP ${request.toIP} is held by Service ${holder}; run preview again so the plan picks a free IP, nothing was changed`);
    return undefined;
  }
  if (vacateKey) {
    const vacate = view.services.get(vacateKey);
    if (vacate && !clusterIpsOf(vacate).includes(request.toIP)) {
      problems.push(`${where}: Service ${vacateKey} was to hold ${request.toIP} until the swap but holds ${clusterIpsOf(vacate).join(", ")}; check the DNS stand-in, nothing was changed`);
      return undefined;
    }
  }

  if (journal) {
    const { entry, resourceVersion } = journal;
    if (entry.toIP !== request.toIP) {
      problems.push(`${where}: ${journalWhere(ctx, request)} is for a move to ${entry.toIP}, the plan now says ${request.toIP}; finish the old move first (plan it to ${entry.toIP}), nothing was changed`);
      return undefined;
    }
    if (refuseLoadBalancer(entry.service)) return undefined;
    if (!live) return { kind: "resume", request, entry, journalVersion: resourceVersion };
    if (uidOf(live) === uidOf(entry.service)) {
      if (live.metadata?.deletionTimestamp) return { kind: "resume", request, entry, live, journalVersion: resourceVersion };
      return { kind: "move", request, live, previous: entry, journalVersion: resourceVersion };
    }
    if (clusterIpsOf(live).includes(entry.toIP)) return { kind: "resume", request, entry, live, journalVersion: resourceVersion };
    problems.push(`${where} was re-created by someone else at ${clusterIpsOf(live).join(", ")} during an interrupted move; compare it with ${journalWhere(ctx, request)} (the original), then delete that Secret`);
    return undefined;
  }

  if (!live) {
    problems.push(`${where} does not exist (the plan expected it at ${request.fromIP}); run preview again, nothing was changed`);
    return undefined;
  }
  const ips = clusterIpsOf(live);
  const skip = (outcome: MoveResult["outcome"]): Decision => ({
    kind: "skip", request, result: { namespace: request.namespace, name: request.name, outcome, ip: ips[0] ?? "None" },
  });
  if (holdsNoClusterIp(live)) return skip("no-cluster-ip");
  if (ips.includes(request.toIP)) return skip("already-moved");
  if (!ips.includes(request.fromIP)) {
    if (ctx.options.serviceCidr && ips.some((ip) => cidrContains(ctx.options.serviceCidr!, ip))) return skip("in-new-range");
    problems.push(`${where} holds ${ips.join(", ")}, the plan expected ${request.fromIP}; the plan is out of date, run preview again, nothing was changed`);
    return undefined;
  }
  if (live.metadata?.deletionTimestamp) {
    problems.push(`${where} is being deleted by someone else; wait until it is gone (or re-created) and run again, nothing was changed`);
    return undefined;
  }
  if (refuseLoadBalancer(live)) return undefined;
  return { kind: "move", request, live };
}


function validateSpec(moveSpec: ServiceMoveSpec): string[] {
  const problems: string[] = [];
  const keys = new Set<string>();
  const targets = new Map<string, string>();
  for (const move of moveSpec.moves) {
    const key = keyOf(move);
    if (keys.has(key)) problems.push(`Service ${key} is listed twice in the moves; list each Service once`);
    keys.add(key);
    const other = targets.get(move.toIP);
    if (other) problems.push(`Services ${other} and ${key} are both planned at ${move.toIP}; each needs its own IP`);
    targets.set(move.toIP, key);
  }
  return problems;
}

// ---------------------------------------------------------------- one move

async function detachDependents(ctx: Context, dependents: JournaledDependent[], oldUids: ReadonlySet<string>): Promise<void> {
  await Promise.all(dependents.map(async (d) => {
    const path = `${d.collection}/${encodeURIComponent(d.object.metadata?.name ?? "")}`;
    for (let attempt = 0; ; attempt++) {
      const current = await ctx.rest.getOptional(path);
      if (!current || !isOwnedByAny(current, oldUids)) return;
      try {
        await ctx.rest.mergePatch(path, { metadata: { resourceVersion: current.metadata?.resourceVersion, ownerReferences: withoutOwners(current.metadata?.ownerReferences, oldUids) } });
        return;
      } catch (err) {
        if (!isStatus(err, 409) || attempt >= 5) throw err;
      }
    }
  }));
}

async function relinkDependents(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<string[]> {
  const relinked: string[] = [];
  await Promise.all(entry.dependents.map(async (d) => {
    const path = `${d.collection}/${encodeURIComponent(d.object.metadata?.name ?? "")}`;
    for (let attempt = 0; ; attempt++) {
      const current = await ctx.rest.getOptional(path);
      try {
        if (!current) {
          await ctx.rest.create(d.collection, restorableCopy(d.object, uidMap));
        } else {
          const wanted = relinkedOwners(d.object.metadata?.ownerReferences, current.metadata?.ownerReferences, uidMap);
          if (sameOwners(wanted, current.metadata?.ownerReferences)) break;
          await ctx.rest.mergePatch(path, { metadata: { resourceVersion: current.metadata?.resourceVersion, ownerReferences: wanted } });
        }
        break;
      } catch (err) {
        if (!isStatus(err, 409) || attempt >= 5) throw err;
      }
    }
    relinked.push(describeDependent(d));
  }));
  return relinked.sort();
}

/** Puts hand-made Endpoints back as journaled (owners re-linked); returns the object now in the cluster. */
async function restoreEndpoints(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<{ object: KubeObject; changed: boolean }> {
  const path = paths.endpoints(entry.namespace, entry.name);
  const wanted = restorableCopy(entry.endpoints!, uidMap);
  for (let attempt = 0; ; attempt++) {
    const current = await ctx.rest.getOptional(path);
    try {
      if (!current) return { object: await ctx.rest.create(paths.endpointsList(entry.namespace), wanted), changed: true };
      if (sameEndpoints(current, wanted) && sameOwners(current.metadata?.ownerReferences, wanted.metadata?.ownerReferences)) return { object: current, changed: false };
      const replaced = await ctx.rest.replace(path, { ...wanted, metadata: { ...wanted.metadata, resourceVersion: current.metadata?.resourceVersion } });
      return { object: replaced, changed: true };
    } catch (err) {
      if (!(isStatus(err, 409) || isStatus(err, 404)) || attempt >= 10) throw err;
    }
  }
}

/**
 * The endpoints controller deletes a Service's Endpoints whenever it syncs while no Service of that name exists;
 * a sync queued during the gap can land after the restore. Watch for that for a while and put them back again.
 */
async function settleEndpoints(ctx: Context, entry: JournalEntry, uidMap: Map<string, string>): Promise<void> {
  const oldEndpointsUid = uidOf(entry.endpoints)!;
  const until = nowMs() + ctx.options.endpointsSettleMs;
  while (nowMs() < until) {
    await sleep(SETTLE_POLL_MS);
    const restored = await restoreEndpoints(ctx, entry, uidMap);
    uidMap.set(oldEndpointsUid, uidOf(restored.object)!);
  }
}

function isLingering(err: unknown): boolean {
  if (isStatus(err, 409)) return (err as KubeApiError).reason === "AlreadyExists";
  return isStatus(err, 422) && /provided (IP|port) is already allocated/.test((err as KubeApiError).apiMessage);
}

/** Creates `body`, retrying while the old object (uid `oldUid`) still holds the name, its IP or its ports. */
async function createWhenFree(ctx: Context, body: KubeObject, key: string, oldUid: string | undefined, where: string): Promise<{ created: KubeObject; attempts: number }> {
  const namespace = body.metadata!.namespace!;
  const deadline = nowMs() + ctx.options.deleteTimeoutMs;
  let delay = 1;
  for (let attempts = 1; ; attempts++) {
    try {
      return { created: await ctx.rest.create(paths.services(namespace), body), attempts };
    } catch (err) {
      if (!isLingering(err)) {
        throw new UserError(`Service ${key} was deleted but its re-create failed (${(err as Error).message.split("\n")[0]}); the original is kept in ${where}: fix the cause and run again, the re-run re-creates it`);
      }
      if (attempts === 1) faultPoint("after-create-conflict", key);
      if (isStatus(err, 409)) {
        const holder = await ctx.rest.getOptional(paths.service(namespace, body.metadata!.name!));
        if (holder && uidOf(holder) !== oldUid) {
          throw new UserError(`Service ${key} was re-created by someone else (at ${clusterIpsOf(holder).join(", ")}) while it was being moved; compare it with ${where} (the original), then delete that Secret`);
        }
      }
      if (nowMs() > deadline) {
        const old = await ctx.rest.getOptional(paths.service(namespace, body.metadata!.name!));
        const finalizers = old?.metadata?.finalizers?.length ? ` (finalizers: ${old.metadata.finalizers.join(", ")})` : "";
        throw new UserError(`Service ${key}: the old object still holds its name, IP or ports ${Math.round(ctx.options.deleteTimeoutMs / 1000)} s after the delete${finalizers}; the original is kept in ${where}: let its controller finish and run again`);
      }
      await sleep(delay);
      delay = Math.min(delay * 2, MAX_BACKOFF_MS);
    }
  }
}

async function deleteService(ctx: Context, ref: ServiceRef, uid: string | undefined, where: string): Promise<void> {
  try {
    await ctx.rest.delete(paths.service(ref.namespace, ref.name), { propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) });
  } catch (err) {
    if (isStatus(err, 404)) return;
    if (isStatus(err, 409)) throw new UserError(`Service ${keyOf(ref)} was replaced by someone else before it could be deleted; nothing of it was deleted; ${where} holds the earlier object: compare, delete that Secret and run again`);
    throw err;
  }
}

async function waitGone(ctx: Context, ref: ServiceRef, uid: string | undefined): Promise<void> {
  const deadline = nowMs() + ctx.options.deleteTimeoutMs;
  for (;;) {
    const current = await ctx.rest.getOptional(paths.service(ref.namespace, ref.name));
    if (!current || uidOf(current) !== uid) return;
    if (nowMs() > deadline) throw new UserError(`Service ${keyOf(ref)} is still terminating ${Math.round(ctx.options.deleteTimeoutMs / 1000)} s after its delete (finalizers: ${(current.metadata?.finalizers ?? []).join(", ") || "none"}); let its controller finish and run again`);
    await sleep(POLL_MS);
  }
}

interface Completion {
  result: MoveResult;
  /** The rest of the move (Endpoints settle, re-link, verify, journal removal); awaited before the report. */
  tail: Promise<void>;
  /** True when the tail mostly waits (the Endpoints settle) and need not hold a lane. */
  background: boolean;
}

/** Deletes (the vacated stand-in, or the original) and creates at toIP; returns the created object and the gap. */
async function swapIn(ctx: Context, entry: JournalEntry, live: KubeObject | undefined, where: string): Promise<{ created: KubeObject; gapMillis: number; attempts: number }> {
  const key = serviceKey(entry.namespace, entry.name);
  const { body } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  const oldUid = uidOf(entry.service);
  if (entry.vacate) {
    // The final DNS swap: the old DNS Service (old IP, nobody resolves through it after the node rollout) goes
    // first, so that the stand-in's delete and the create at the final IP are back to back.
    if (live && uidOf(live) === oldUid) {
      await deleteService(ctx, entry, oldUid, where);
      await waitGone(ctx, entry, oldUid);
      faultPoint("after-old-dns-delete", key);
    }
    const standIn = await ctx.rest.getOptional(paths.service(entry.vacate.namespace, entry.vacate.name));
    if (standIn && clusterIpsOf(standIn).includes(entry.toIP)) {
      await deleteService(ctx, entry.vacate, uidOf(standIn), where);
    }
    const deleted = nowMs();
    faultPoint("after-vacate", key);
    const { created, attempts } = await createWhenFree(ctx, body, key, uidOf(standIn), where);
    return { created, gapMillis: nowMs() - deleted, attempts };
  }
  if (live && uidOf(live) === oldUid && !live.metadata?.deletionTimestamp) {
    await deleteService(ctx, entry, oldUid, where);
  }
  const deleted = nowMs();
  faultPoint("after-delete", key);
  const { created, attempts } = await createWhenFree(ctx, body, key, oldUid, where);
  return { created, gapMillis: nowMs() - deleted, attempts };
}

async function verifyService(ctx: Context, entry: JournalEntry, live: KubeObject, where: string): Promise<void> {
  const key = serviceKey(entry.namespace, entry.name);
  const { body } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  if (!clusterIpsOf(live).includes(entry.toIP)) {
    throw new UserError(`Service ${key} holds ${clusterIpsOf(live).join(", ")} after its re-create, not the planned ${entry.toIP}; ${where} keeps the original`);
  }
  const differences = differingUserFields(body, live);
  if (differences.length > 0) {
    throw new UserError(`Service ${key} at ${entry.toIP} differs from its original in ${differences.join(", ")}; ${where} keeps the original: compare, fix, and run again`);
  }
}

/** Everything after the create: Endpoints, dependents, a last verification, then the journal goes. */
async function finish(ctx: Context, entry: JournalEntry, created: KubeObject, result: MoveResult): Promise<void> {
  const key = serviceKey(entry.namespace, entry.name);
  const where = journalWhere(ctx, entry);
  const uidMap = new Map<string, string>([[uidOf(entry.service)!, uidOf(created)!]]);
  if (entry.endpoints) {
    const restored = await restoreEndpoints(ctx, entry, uidMap);
    uidMap.set(uidOf(entry.endpoints)!, uidOf(restored.object)!);
    result.restoredEndpoints = true;
    faultPoint("after-endpoints-restore", key);
    await settleEndpoints(ctx, entry, uidMap);
  }
  result.relinkedDependents = await relinkDependents(ctx, entry, uidMap);
  faultPoint("after-dependents-relink", key);
  const now = await ctx.rest.getOptional(paths.service(entry.namespace, entry.name));
  if (!now || uidOf(now) !== uidOf(created)) throw new UserError(`Service ${key} was deleted or replaced by someone else right after its re-create; ${where} keeps the original`);
  await verifyService(ctx, entry, now, where);
  if (entry.endpoints) {
    const endpoints = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
    if (!sameEndpoints(endpoints, entry.endpoints)) throw new UserError(`Endpoints ${key} could not be restored as they were; ${where} keeps them`);
  }
  faultPoint("after-verify", key);
  await removeJournal(ctx, entry);
  faultPoint("after-journal-remove", key);
}

async function completeMove(ctx: Context, entry: JournalEntry, created: KubeObject, result: MoveResult): Promise<Completion> {
  await verifyService(ctx, entry, created, journalWhere(ctx, entry));
  const { correctedAnnotations, pinnedInLastApplied } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  result.correctedAnnotations = correctedAnnotations;
  result.pinnedInLastApplied = pinnedInLastApplied;
  return { result, tail: finish(ctx, entry, created, result), background: entry.endpoints !== undefined };
}

async function executeMove(ctx: Context, decision: Exclude<Decision, { kind: "skip" }>, ownedBy: Map<string, JournaledDependent[]>, endpointsOf: Map<string, KubeObject>): Promise<Completion> {
  const { request } = decision;
  const key = keyOf(request);
  const where = journalWhere(ctx, request);
  let entry: JournalEntry;
  let live: KubeObject | undefined;
  let outcome: MoveResult["outcome"];
  if (decision.kind === "move") {
    faultPoint("before-journal", key);
    live = decision.live;
    const endpoints = endpointsOf.get(key);
    const found = [uidOf(live), uidOf(endpoints)].flatMap((uid) => (uid ? ownedBy.get(uid) ?? [] : []));
    // Dependents an interrupted run already detached are only in its journal; its copies are the originals.
    const dependents = new Map<string, JournaledDependent>();
    for (const d of [...(decision.previous?.dependents ?? []), ...found]) {
      const uid = uidOf(d.object)!;
      if (!dependents.has(uid)) dependents.set(uid, d);
    }
    entry = {
      format: "cidr-migration.io/service-move/v1",
      kind: "recreate",
      namespace: request.namespace,
      name: request.name,
      fromIP: request.fromIP,
      toIP: request.toIP,
      recordedAt: decision.previous?.recordedAt ?? new Date().toISOString(),
      service: live,
      ...(endpoints ? { endpoints } : {}),
      dependents: [...dependents.values()],
      ...(request.vacate ? { vacate: { ...request.vacate } } : {}),
    };
    await writeJournal(ctx, entry, decision.journalVersion);
    faultPoint("after-journal", key);
    await detachDependents(ctx, entry.dependents, new Set([uidOf(live), uidOf(endpoints)].filter((u): u is string => !!u)));
    faultPoint("after-detach-dependents", key);
    outcome = "moved";
  } else {
    entry = decision.entry;
    live = decision.live;
    outcome = "completed-from-journal";
  }
  const result: MoveResult = { namespace: request.namespace, name: request.name, outcome, fromIP: entry.fromIP, ip: entry.toIP };
  if (live && uidOf(live) !== uidOf(entry.service)) {
    // An interrupted run had already created it.
    return completeMove(ctx, entry, live, result);
  }
  const swapped = await swapIn(ctx, entry, live, where);
  result.gapMillis = round(swapped.gapMillis);
  result.createAttempts = swapped.attempts;
  faultPoint("after-create", key);
  ctx.options.log?.(`Service ${key}: ${entry.fromIP} -> ${entry.toIP} (gap ${result.gapMillis} ms)`);
  return completeMove(ctx, entry, swapped.created, result);
}

// ---------------------------------------------------------------- default/kubernetes

async function moveKubernetesService(ctx: Context, view: ClusterView, request: KubernetesServiceRequest): Promise<KubernetesServiceResult> {
  const ref = { namespace: "default", name: "kubernetes" };
  const key = keyOf(ref);
  const where = journalWhere(ctx, ref);
  const live = view.services.get(key);
  const journal = view.journals.get(key)?.entry;
  if (live && clusterIpsOf(live).includes(request.toIP) && !journal) return { outcome: "already-moved", ip: request.toIP };

  let entry = journal;
  let gapMillis: number | undefined;
  if (live && clusterIpsOf(live).includes(request.fromIP) && !live.metadata?.deletionTimestamp) {
    entry = {
      format: "cidr-migration.io/service-move/v1", kind: "apiserver-recreates", namespace: "default", name: "kubernetes",
      fromIP: request.fromIP, toIP: request.toIP, recordedAt: journal?.recordedAt ?? new Date().toISOString(), service: live, dependents: [],
    };
    await writeJournal(ctx, entry, view.journals.get(key)?.resourceVersion);
    await deleteService(ctx, ref, uidOf(live), where);
    faultPoint("after-kubernetes-delete", key);
  } else if (live && !clusterIpsOf(live).includes(request.toIP) && !live.metadata?.deletionTimestamp) {
    throw new UserError(`Service ${key} holds ${clusterIpsOf(live).join(", ")}, expected ${request.fromIP} or ${request.toIP}; is kube-apiserver on the new --service-cluster-ip-range? Nothing was changed`);
  }
  const deleted = nowMs();
  const oldUid = uidOf(entry?.service ?? live);
  const deadline = deleted + ctx.options.kubernetesServiceTimeoutMs;
  let recreated: KubeObject | undefined;
  for (;;) {
    recreated = await ctx.rest.getOptional(paths.service("default", "kubernetes"));
    if (recreated && uidOf(recreated) !== oldUid) break;
    if (nowMs() > deadline) {
      throw new UserError(`kube-apiserver did not re-create Service ${key} within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s of its delete; check that kube-apiserver runs (its bootstrap controller re-creates it every 10 s)${entry ? `; ${where} keeps the original's labels and annotations` : ""}`);
    }
    await sleep(POLL_MS);
  }
  if (live && uidOf(live) === oldUid) gapMillis = round(nowMs() - deleted);
  if (!clusterIpsOf(recreated).includes(request.toIP)) {
    throw new UserError(`kube-apiserver re-created Service ${key} at ${clusterIpsOf(recreated).join(", ")}, not at the new range's first IP ${request.toIP}; its --service-cluster-ip-range is not the new range yet`);
  }
  if (entry) {
    // The apiserver writes only its own labels; the user's labels and annotations come back from the journal.
    const meta = entry.service.metadata ?? {};
    const missing = (wanted: Record<string, string> | undefined, have: Record<string, string> | undefined) =>
      Object.fromEntries(Object.entries(wanted ?? {}).filter(([k]) => !(have ?? {})[k]));
    const labels = missing(meta.labels, recreated.metadata?.labels);
    const annotations = missing(meta.annotations, recreated.metadata?.annotations);
    if (Object.keys(labels).length + Object.keys(annotations).length > 0) {
      await ctx.rest.mergePatch(paths.service("default", "kubernetes"), { metadata: { labels, annotations } });
    }
    await removeJournal(ctx, ref);
  }
  ctx.options.log?.(`Service ${key}: re-created by kube-apiserver at ${request.toIP}${gapMillis !== undefined ? ` (gap ${gapMillis} ms)` : ""}`);
  return { outcome: gapMillis !== undefined ? "moved" : "completed-from-journal", ip: request.toIP, ...(gapMillis !== undefined ? { gapMillis } : {}) };
}

// ---------------------------------------------------------------- stand-ins

async function ensureStandIn(ctx: Context, view: ClusterView, request: StandInRequest): Promise<{ outcome: "created" | "present" }> {
  const key = keyOf(request);
  const existing = view.services.get(key);
  if (existing) {
    if (clusterIpsOf(existing).includes(request.ip)) return { outcome: "present" };
    throw new UserError(`Service ${key} exists at ${clusterIpsOf(existing).join(", ")}, but the stand-in for ${keyOf(request.of)} must be at ${request.ip}; delete it or choose another stand-in name`);
  }
  const holder = view.ipHolders.get(request.ip);
  if (holder) throw new UserError(`the stand-in for ${keyOf(request.of)} needs ${request.ip}, which Service ${holder} holds; nothing was changed`);
  const source = view.services.get(keyOf(request.of));
  if (!source) throw new UserError(`Service ${keyOf(request.of)} does not exist, so no stand-in can copy its selector and ports; check cidr-migration:dns`);
  await ctx.rest.create(paths.services(request.namespace), buildStandInBody(source, request));
  faultPoint("after-stand-in-create", key);
  return { outcome: "created" };
}

// ---------------------------------------------------------------- the run

/**
 * Journal entries this run did not ask for, turned back into requests. After a crash the next plan no longer
 * lists a Service that was deleted (discovery cannot see it) or already re-created (it is in the new range), so
 * the bulk run adopts every interrupted move it finds. Entries with a stand-in to vacate (the DNS swap) are left
 * to the run that lists them.
 */
function adoptedJournals(view: ClusterView, moveSpec: ServiceMoveSpec, adopt: boolean): ServiceMoveRequest[] {
  if (!adopt) return [];
  const requested = new Set(moveSpec.moves.map(keyOf));
  return [...view.journals.values()]
    .map(({ entry }) => entry)
    .filter((entry) => entry.kind === "recreate" && !entry.vacate && !requested.has(serviceKey(entry.namespace, entry.name)))
    .map((entry) => ({ namespace: entry.namespace, name: entry.name, fromIP: entry.fromIP, toIP: entry.toIP, type: spec(entry.service).type as string | undefined }));
}

function adoptedKubernetesJournal(view: ClusterView, adopt: boolean): KubernetesServiceRequest | undefined {
  const entry = view.journals.get("default/kubernetes")?.entry;
  return adopt && entry?.kind === "apiserver-recreates" ? { fromIP: entry.fromIP, toIP: entry.toIP } : undefined;
}

export async function runServiceMoves(kc: KubeConfig, moveSpec: ServiceMoveSpec, options: MoverOptions): Promise<MoveReport> {
  const started = nowMs();
  const invalid = validateSpec(moveSpec);
  if (invalid.length > 0) throw new UserError(invalid.join("\n"));
  const rest = await kubeRest(kc, { maxSockets: Math.max(8, options.parallelism * 2) });
  const ctx: Context = {
    rest,
    options: {
      parallelism: Math.max(1, Math.floor(options.parallelism)),
      allowLoadBalancerRecreate: options.allowLoadBalancerRecreate,
      journalNamespace: options.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
      deleteTimeoutMs: options.deleteTimeoutMs ?? 120_000,
      kubernetesServiceTimeoutMs: options.kubernetesServiceTimeoutMs ?? 60_000,
      endpointsSettleMs: options.endpointsSettleMs ?? 1500,
      serviceCidr: options.serviceCidr,
      log: options.log,
    },
    journalNamespace: options.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
    warnings: [],
  };
  try {
    let view: ClusterView;
    try {
      view = await readCluster(ctx);
    } catch (err) {
      throw new UserError(failureLine(err, rest.server, "reading Services and journals"));
    }
    const problems: string[] = [];
    const requests = [...moveSpec.moves, ...adoptedJournals(view, moveSpec, options.adoptJournals === true)];
    const decisions = requests.map((m) => decide(ctx, view, m, problems)).filter((d): d is Decision => d !== undefined);
    if (problems.length > 0) throw new UserError(problems.join("\n"));

    const report: MoveReport = { results: [], standIns: [], warnings: ctx.warnings, totalMillis: 0 };
    for (const standIn of moveSpec.standIns ?? []) {
      report.standIns.push({ namespace: standIn.namespace, name: standIn.name, ip: standIn.ip, ...(await ensureStandIn(ctx, view, standIn)) });
    }

    const toMove = decisions.filter((d): d is Extract<Decision, { kind: "move" }> => d.kind === "move");
    const endpointsOf = new Map<string, KubeObject>();
    let ownedBy = new Map<string, JournaledDependent[]>();
    if (toMove.length > 0) {
      await inLanes(toMove.filter((d) => !hasSelector(d.live)), ctx.options.parallelism * 2, async (d) => {
        const endpoints = await rest.getOptional(paths.endpoints(d.request.namespace, d.request.name));
        if (endpoints) endpointsOf.set(keyOf(d.request), endpoints);
      }, () => false);
      const owners = new Set<string>();
      for (const d of toMove) {
        owners.add(uidOf(d.live)!);
        const endpoints = endpointsOf.get(keyOf(d.request));
        if (endpoints) owners.add(uidOf(endpoints)!);
      }
      const scan = await findOwnedObjects(rest, new Set(toMove.map((d) => d.request.namespace)), owners);
      ownedBy = scan.byOwner;
      ctx.warnings.push(...scan.warnings);
    }

    const failures: string[] = [];
    const tails: Promise<void>[] = [];
    const kubernetesRequest = moveSpec.kubernetesService ?? adoptedKubernetesJournal(view, options.adoptJournals === true);
    const kubernetes = kubernetesRequest
      ? moveKubernetesService(ctx, view, kubernetesRequest).catch((err) => {
        failures.push(failureLine(err, rest.server, "moving Service default/kubernetes"));
        return undefined;
      })
      : Promise.resolve(undefined);
    for (const d of decisions) if (d.kind === "skip") report.results.push(d.result);
    const work = decisions.filter((d): d is Exclude<Decision, { kind: "skip" }> => d.kind !== "skip");
    let startedMoves = 0;
    await inLanes(work, ctx.options.parallelism, async (d) => {
      const key = keyOf(d.request);
      startedMoves++;
      const fail = (err: unknown) => { failures.push(failureLine(err, rest.server, `moving Service ${key}`)); };
      try {
        const completion = await executeMove(ctx, d, ownedBy, endpointsOf);
        report.results.push(completion.result);
        // Only the Endpoints settle waits outside the lane: it is idle time, not API work.
        if (completion.background) tails.push(completion.tail.catch(fail));
        else await completion.tail;
      } catch (err) {
        fail(err);
      }
    }, () => failures.length > 0);
    await Promise.all(tails);
    report.kubernetesService = await kubernetes;
    if (failures.length > 0) {
      const notStarted = work.length - startedMoves;
      throw new UserError([...failures, ...(notStarted > 0 ? [`${notStarted} other Service move(s) were not started; run again once the above is fixed`] : [])].join("\n"));
    }
    report.results.sort((a, b) => keyOf(a).localeCompare(keyOf(b)));
    report.totalMillis = round(nowMs() - started);
    return report;
  } finally {
    rest.close();
  }
}
