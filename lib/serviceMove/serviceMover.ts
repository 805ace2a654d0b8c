import { KubeConfig } from "@kubernetes/client-node";
import { cidrContains, isCidr } from "../net/cidr";
import { EXIT_INVALID_INPUT } from "../config/errors";
import {
  hasSelector, isOwnedByAny, MANAGED_BY_LABEL, relinkedOwners, restorableCopy, sameEndpoints, sameOwners, withoutOwners,
} from "./dependents";
import { findOwnedObjects } from "./dependentsScan";
import { faultPoint } from "./faultHook";
import { DEFAULT_JOURNAL_NAMESPACE, JournaledDependent, JournalEntry } from "./journal";
import { ServiceRef, serviceRefKey } from "./serviceRef";
import { JournalStore, loadJournal } from "./journalStore";
import { isKubeApiError, isStatus, isTransient, KubeApiError, KubeObject, kubeRest, KubeRest, paths } from "./kubeRest";
import {
  DEFAULT_DELETE_TIMEOUT_SECONDS, KubernetesServiceRequest, KubernetesServiceResult, MoveReport, MoveResult, MoverOptions, ServiceMoveRequest,
  ServiceMoveSpec, StandInRequest,
} from "./moveTypes";
import { buildRecreateBody, clusterIpsOf, differingUserFields, holdsNoClusterIp, spec, userMetadata } from "./recreateBody";
import { adaptiveLimit, inAdaptiveLanes } from "./adaptiveLanes";
import { buildStandInBody } from "./standIn";
import { BRIDGE_MANAGER, bridgeEndpoints, bridgeSlices, controllerSlicesOf, SERVICE_NAME_LABEL } from "./endpointBridge";

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
 * A run goes in three phases over all its moves:
 * 1. every move is checked against the live cluster (expected old IP, planned IP free, LoadBalancer consent),
 *    then journaled with its dependents detached; if anything fails here, phase 1 is undone and no Service was
 *    deleted;
 * 2. the swaps, `parallelism` at a time: delete (preconditions: the journaled uid and resourceVersion, so an
 *    edit made since is journaled first, never lost) and, at once, create; while a finalizer keeps the old object
 *    the create is retried with a tight backoff. The gap is measured from the delete's answer to the create's.
 *    Nothing else competes with the swaps for the apiserver: on a busy control plane a create waits behind
 *    every request in flight, and that wait is the gap;
 * 3. bookkeeping: dependents re-linked, everything verified, journal entries removed.
 * default/kubernetes (re-created by the apiserver itself, which takes up to its 10 s loop) runs alongside, outside
 * the bound, because it only waits.
 */

const POLL_MS = 50;
const SETTLE_POLL_MS = 100;
const MAX_BACKOFF_MS = 25;
/** An allocation conflict lasting this long after the old object is gone is looked into. */
const LEAK_SUSPICION_MS = 2000;
/** Lanes for the journal writes and removals, which delete nothing. */
const WIDE_LANES = 16;

/** The mover's options with every default filled in: the one place the defaults live. */
export type ResolvedMoverOptions = Required<Omit<MoverOptions, "serviceCidr" | "log" | "adoptJournals">> & Pick<MoverOptions, "serviceCidr" | "log">;

export function withMoverDefaults(options: MoverOptions): ResolvedMoverOptions {
  return {
    parallelism: Math.max(1, Math.floor(options.parallelism)),
    allowLoadBalancerRecreate: options.allowLoadBalancerRecreate,
    journalNamespace: options.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
    deleteTimeoutMs: options.deleteTimeoutMs ?? DEFAULT_DELETE_TIMEOUT_SECONDS * 1000,
    kubernetesServiceTimeoutMs: options.kubernetesServiceTimeoutMs ?? 60_000,
    allocationLeakTimeoutMs: options.allocationLeakTimeoutMs ?? 12 * 60_000,
    endpointsSettleMs: options.endpointsSettleMs ?? 1500,
    serviceCidr: options.serviceCidr,
    log: options.log,
  };
}

interface Context {
  rest: KubeRest;
  options: ResolvedMoverOptions;
  journalNamespace: string;
  journal: JournalStore;
  warnings: string[];
}

type Decision =
  | { kind: "skip"; request: ServiceMoveRequest; result: MoveResult }
  | { kind: "move"; request: ServiceMoveRequest; live: KubeObject; previous?: JournalEntry }
  | { kind: "resume"; request: ServiceMoveRequest; entry: JournalEntry; live?: KubeObject };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const round = (ms: number) => Math.round(ms * 100) / 100;

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

/**
 * A failure the operator reads: one line per problem, and exitCode like lib/config/errors' UserError (the CLI exits with
 * it). A plain Error, not a UserError instance: Error subclasses do not survive the SDK's by-value serialization
 * of the provider (see kubeRest's KubeApiError).
 */
export interface MoveError extends Error {
  name: "UserError";
  exitCode: number;
}

export function moveError(message: string): MoveError {
  return Object.assign(new Error(message), { name: "UserError" as const, exitCode: EXIT_INVALID_INPUT });
}

export function isMoveError(err: unknown): err is MoveError {
  return err instanceof Error && err.name === "UserError" && typeof (err as MoveError).exitCode === "number";
}

/** Network failures that mean the apiserver is not reachable (as opposed to answering with an error). */
const UNREACHABLE = ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ETIMEDOUT", "ECONNRESET", "EAI_AGAIN", "EPIPE"];

/** One line for the operator: what failed, where, and (from the message) what to do. */
function failureLine(err: unknown, server: string, action: string): string {
  if (isMoveError(err)) return err.message;
  if (isKubeApiError(err)) {
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

/**
 * Runs a step that first reads and then writes what it needs, again after a transient failure (network, 5xx,
 * 429, an etcd blip): each attempt starts from what the cluster holds, so repeating one is safe.
 */
async function retrying<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isTransient(err) || attempt >= 5) throw err;
      await sleep(50 * attempt);
    }
  }
}

function journalWhere(ctx: Context, ref: ServiceRef): string {
  return ctx.journal.where(serviceRefKey(ref));
}

/** Writes (or rewrites) the entry; it is durable once the apiserver answers (etcd has committed it). */
function writeJournal(ctx: Context, entry: JournalEntry): Promise<void> {
  return ctx.journal.write(entry);
}

// ---------------------------------------------------------------- preflight (read-only)

interface ClusterView {
  services: Map<string, KubeObject>;
  /** ClusterIP → key of the Service holding it */
  ipHolders: Map<string, string>;
  journals: Map<string, JournalEntry>;
}

async function readCluster(ctx: Context): Promise<ClusterView> {
  const services = await ctx.rest.list("/api/v1/services");
  const view: ClusterView = { services: new Map(), ipHolders: new Map(), journals: ctx.journal.entries };
  for (const service of services) {
    const key = serviceRefKey({ namespace: service.metadata?.namespace ?? "", name: service.metadata?.name ?? "" });
    view.services.set(key, service);
    for (const ip of clusterIpsOf(service)) if (ip !== "None") view.ipHolders.set(ip, key);
  }
  return view;
}

function decide(ctx: Context, view: ClusterView, request: ServiceMoveRequest, problems: string[]): Decision | undefined {
  const key = serviceRefKey(request);
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
  const vacateKey = request.vacate ? serviceRefKey(request.vacate) : undefined;
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
    const entry = journal;
    if (entry.toIP !== request.toIP) {
      problems.push(`${where}: ${journalWhere(ctx, request)} is for a move to ${entry.toIP}, the plan now says ${request.toIP}; finish the old move first (plan it to ${entry.toIP}), nothing was changed`);
      return undefined;
    }
    if (refuseLoadBalancer(entry.service)) return undefined;
    if (!live) return { kind: "resume", request, entry };
    if (uidOf(live) === uidOf(entry.service)) {
      if (live.metadata?.deletionTimestamp) return { kind: "resume", request, entry, live };
      return { kind: "move", request, live, previous: entry };
    }
    if (clusterIpsOf(live).includes(entry.toIP)) return { kind: "resume", request, entry, live };
    // put back at its old IP by a run whose create was rejected, cut off before it cleaned up: move it again
    if (clusterIpsOf(live).includes(entry.fromIP) && differingUserFields(originalBody(entry.service), live).length === 0) {
      return { kind: "move", request, live, previous: entry };
    }
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


function validateSpec(moveSpec: ServiceMoveSpec, options: MoverOptions): string[] {
  const problems: string[] = [];
  if (options.serviceCidr !== undefined && !isCidr(options.serviceCidr)) problems.push(`serviceCidr ${JSON.stringify(options.serviceCidr)} is not a CIDR; pass the new Service range, e.g. 10.100.0.0/16`);
  const keys = new Set<string>();
  const targets = new Map<string, string>();
  for (const move of moveSpec.moves) {
    const key = serviceRefKey(move);
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
  await Promise.all(dependents.map((d) => retrying(async () => {
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
  })));
}

async function relinkDependents(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<string[]> {
  const relinked: string[] = [];
  await Promise.all(entry.dependents.map((d) => retrying(async () => {
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
  })));
  return relinked.sort();
}

/** Puts hand-made Endpoints back as journaled (owners re-linked); returns the object now in the cluster. */
function restoreEndpoints(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<{ object: KubeObject; changed: boolean }> {
  return retrying(() => restoreEndpointsOnce(ctx, entry, uidMap));
}

async function restoreEndpointsOnce(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<{ object: KubeObject; changed: boolean }> {
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

/** Node ports a Service body asks for (its ports' nodePorts and its healthCheckNodePort). */
function nodePortsOf(service: KubeObject): number[] {
  const sp = spec(service) as { ports?: Array<{ nodePort?: number }>; healthCheckNodePort?: number };
  return [...(sp.ports ?? []).map((p) => p.nodePort), sp.healthCheckNodePort].filter((p): p is number => typeof p === "number" && p > 0);
}

/** Another live Service holding the body's planned IP or one of its node ports, if any. */
async function allocationHolder(ctx: Context, body: KubeObject, key: string): Promise<string | undefined> {
  const ips = clusterIpsOf(body);
  const ports = nodePortsOf(body);
  for (const other of await ctx.rest.list("/api/v1/services")) {
    const otherKey = serviceRefKey({ namespace: other.metadata?.namespace ?? "", name: other.metadata?.name ?? "" });
    if (otherKey === key) continue;
    const ip = clusterIpsOf(other).find((i) => ips.includes(i));
    if (ip) return `Service ${otherKey} (it holds ${ip})`;
    const port = nodePortsOf(other).find((p) => ports.includes(p));
    if (port) return `Service ${otherKey} (it holds node port ${port})`;
  }
  return undefined;
}

/**
 * Creates `body`, retrying while the old object (uid `oldUid`) still holds the name, its IP or its ports, and
 * while the apiserver fails transiently. A create whose answer was lost (the connection dropped after the
 * apiserver stored it) shows up as an AlreadyExists from an object equal to `body`: that one is ours.
 *
 * When the old object is gone and the apiserver still calls an IP or port allocated that no Service holds, it is
 * kube-apiserver's allocator leak (seen on v1.20: a Service deleted with a finalizer, such as the load-balancer
 * cleanup one, keeps its allocations if the allocator's repair loop runs while it terminates, until that loop has
 * seen them unused three times, 3 minutes apart). The create then keeps trying for allocationLeakTimeoutMs.
 */
async function createWhenFree(ctx: Context, body: KubeObject, key: string, oldUid: string | undefined, where: string): Promise<{ created: KubeObject; attempts: number }> {
  const namespace = body.metadata!.namespace!;
  const name = body.metadata!.name!;
  const toIP = clusterIpsOf(body)[0];
  const since = nowMs();
  let deadline = since + ctx.options.deleteTimeoutMs;
  let leakSeen = false;
  let delay = 1;
  let lastAnswer = "";
  for (let attempts = 1; ; attempts++) {
    try {
      return { created: await ctx.rest.create(paths.services(namespace), body), attempts };
    } catch (err) {
      const transient = isTransient(err);
      if (!isLingering(err) && !transient) {
        throw Object.assign(moveError(`Service ${key} was deleted but its re-create failed (${(err as Error).message.split("\n")[0]}); the original is kept in ${where}: fix the cause and run again, the re-run re-creates it`), { rejectedCreate: (err as Error).message.split("\n")[0] });
      }
      lastAnswer = (err as Error).message.split("\n")[0];
      if (attempts === 1) faultPoint("after-create-conflict", key);
      if (isStatus(err, 409)) {
        const holder = await ctx.rest.getOptional(paths.service(namespace, name));
        if (holder && uidOf(holder) !== oldUid) {
          if (clusterIpsOf(holder).includes(toIP) && differingUserFields(body, holder).length === 0) return { created: holder, attempts };
          throw moveError(`Service ${key} was re-created by someone else (at ${clusterIpsOf(holder).join(", ")}) while it was being moved; compare it with ${where} (the original), then delete that Secret`);
        }
      } else if (isStatus(err, 422) && !leakSeen && nowMs() - since > LEAK_SUSPICION_MS) {
        const old = await ctx.rest.getOptional(paths.service(namespace, name));
        if (!old || uidOf(old) !== oldUid) {
          const holder = await allocationHolder(ctx, body, key);
          if (holder) throw moveError(`Service ${key} cannot be re-created as it was: ${holder} took its place meanwhile; the original is kept in ${where}: free it (or plan another IP) and run again`);
          leakSeen = true;
          deadline = since + ctx.options.allocationLeakTimeoutMs;
          ctx.options.log?.(`Service ${key}: kube-apiserver still holds an allocation of the deleted Service (${lastAnswer}); waiting for its repair loop to free it, up to ${Math.round(ctx.options.allocationLeakTimeoutMs / 60_000)} min`);
        }
      }
      if (nowMs() > deadline) {
        const old = await ctx.rest.getOptional(paths.service(namespace, name));
        const finalizers = old?.metadata?.finalizers?.length ? ` (finalizers: ${old.metadata.finalizers.join(", ")})` : "";
        const leak = leakSeen ? " (kube-apiserver kept the deleted Service's allocation: its repair loop frees it within about 10 minutes)" : "";
        throw moveError(`Service ${key} could not be re-created within ${Math.round((deadline - since) / 1000)} s of its delete${finalizers}; the apiserver last answered: ${lastAnswer}${leak}; the original is kept in ${where}: run again later, the re-run re-creates it`);
      }
      await sleep(transient || leakSeen ? Math.max(delay, leakSeen ? 1000 : 50) : delay);
      delay = Math.min(delay * 2, MAX_BACKOFF_MS);
    }
  }
}

async function deleteService(ctx: Context, ref: ServiceRef, uid: string | undefined, where: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.rest.delete(paths.service(ref.namespace, ref.name), { propagationPolicy: "Background", ...(uid ? { preconditions: { uid } } : {}) });
      return;
    } catch (err) {
      if (isStatus(err, 404)) return;
      if (isStatus(err, 409)) throw moveError(`Service ${serviceRefKey(ref)} was replaced by someone else before it could be deleted; nothing of it was deleted; ${where} holds the earlier object: compare, delete that Secret and run again`);
      if (!isTransient(err) || attempt >= 5) throw err;
      // The delete may have happened and only its answer been lost.
      const current = await ctx.rest.getOptional(paths.service(ref.namespace, ref.name));
      if (!current || uidOf(current) !== uid || current.metadata?.deletionTimestamp) return;
      await sleep(50 * attempt);
    }
  }
}

async function waitGone(ctx: Context, ref: ServiceRef, uid: string | undefined): Promise<void> {
  const deadline = nowMs() + ctx.options.deleteTimeoutMs;
  for (;;) {
    const current = await ctx.rest.getOptional(paths.service(ref.namespace, ref.name));
    if (!current || uidOf(current) !== uid) return;
    if (nowMs() > deadline) throw moveError(`Service ${serviceRefKey(ref)} is still terminating ${Math.round(ctx.options.deleteTimeoutMs / 1000)} s after its delete (finalizers: ${(current.metadata?.finalizers ?? []).join(", ") || "none"}); let its controller finish and run again`);
    await sleep(POLL_MS);
  }
}

/**
 * Deletes the journaled Service, only if it is still exactly the journaled object: the preconditions carry its
 * uid and resourceVersion. If someone changed it since it was journaled, the journal is brought up to date and
 * the delete tried again, so the re-create never loses an edit made in the meantime. Hand-made Endpoints are read
 * once more just before, for the same reason (the apiserver deletes them with the Service).
 */
async function deleteJournaled(ctx: Context, entry: JournalEntry, where: string): Promise<void> {
  const key = serviceRefKey(entry);
  if (entry.endpoints) {
    const current = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
    if (current && !sameEndpoints(current, entry.endpoints)) {
      entry.endpoints = current;
      await writeJournal(ctx, entry);
    }
  }
  for (let attempt = 1; ; attempt++) {
    const meta = entry.service.metadata ?? {};
    try {
      await retrying(() => ctx.rest.delete(paths.service(entry.namespace, entry.name), { propagationPolicy: "Background", preconditions: { uid: meta.uid, resourceVersion: meta.resourceVersion } }));
      return;
    } catch (err) {
      if (isStatus(err, 404)) return;
      if (!isStatus(err, 409) || attempt >= 5) throw err;
      const current = await ctx.rest.getOptional(paths.service(entry.namespace, entry.name));
      if (!current) return; // gone meanwhile (a lost answer to our own delete)
      if (uidOf(current) !== meta.uid) {
        throw moveError(`Service ${key} was replaced by someone else before it could be deleted; nothing of it was deleted; ${where} holds the earlier object: compare, delete that Secret and run again`);
      }
      if (current.metadata?.deletionTimestamp) return; // our delete went through, its answer was lost
      entry.service = current;
      await writeJournal(ctx, entry);
    }
  }
}

/** Deletes (the vacated stand-in, or the original) and creates at toIP; returns the created object and the gap. */
async function swapIn(ctx: Context, entry: JournalEntry, live: KubeObject | undefined, where: string): Promise<{ created: KubeObject; gapMillis: number; attempts: number; createdAt?: number; bridgedMillis?: number }> {
  const key = serviceRefKey(entry);
  const oldUid = uidOf(entry.service);
  if (entry.vacate) {
    // The final DNS swap: the old DNS Service (old IP, nobody resolves through it after the node rollout) goes
    // first, so that the stand-in's delete and the create at the final IP are back to back.
    // What the DNS pods look like to kube-proxy, for the endpoint bridge (see endpointBridge.ts): the stand-in's
    // slices, or, while a busy endpointslice controller has not written those yet, the old DNS Service's own
    // (same selector, same ports), read before it goes.
    const slicesPath = await endpointSlicesPath(ctx, entry.namespace);
    const controllerSlices = (service: string) => ctx.rest.list(slicesPath, { labelSelector: `${SERVICE_NAME_LABEL}=${service},${MANAGED_BY_LABEL}=endpointslice-controller.k8s.io` });
    let oldSlices: KubeObject[] = [];
    let oldEndpoints: KubeObject | undefined;
    if (live && uidOf(live) === oldUid) {
      oldSlices = (await controllerSlices(entry.name)).filter((slice) => ownerUidsOf(slice).includes(oldUid!));
      oldEndpoints = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
      if (!live.metadata?.deletionTimestamp) await deleteJournaled(ctx, entry, where);
      await waitGone(ctx, entry, oldUid);
      faultPoint("after-old-dns-delete", key);
    }
    const { body } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
    const standIn = await ctx.rest.getOptional(paths.service(entry.vacate.namespace, entry.vacate.name));
    const fromStandIn = standIn ? await controllerSlices(entry.vacate.name) : [];
    const standInSlices = fromStandIn.some(hasEndpoints) ? fromStandIn : oldSlices;
    const fromStandInEndpoints = standIn ? await ctx.rest.getOptional(paths.endpoints(entry.vacate.namespace, entry.vacate.name)) : undefined;
    const standInEndpoints = Array.isArray(fromStandInEndpoints?.subsets) && fromStandInEndpoints!.subsets.length > 0 ? fromStandInEndpoints : oldEndpoints;
    if (standIn && clusterIpsOf(standIn).includes(entry.toIP)) {
      await deleteService(ctx, entry.vacate, uidOf(standIn), where);
    }
    const deleted = nowMs();
    faultPoint("after-vacate", key);
    const { created, attempts } = await createWhenFree(ctx, body, key, uidOf(standIn), where);
    const createdAt = nowMs();
    await bridgeEndpointsTo(ctx, created, slicesPath, standInSlices, standInEndpoints);
    faultPoint("after-dns-bridge", key);
    return { created, gapMillis: createdAt - deleted, attempts, createdAt, bridgedMillis: nowMs() - createdAt };
  }
  if (live && uidOf(live) === oldUid && !live.metadata?.deletionTimestamp) {
    await deleteJournaled(ctx, entry, where);
  }
  const deleted = nowMs();
  faultPoint("after-delete", key);
  // built after the delete: deleteJournaled may have refreshed the journaled original
  const { body } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  const { created, attempts } = await createWhenFree(ctx, body, key, oldUid, where);
  return { created, gapMillis: nowMs() - deleted, attempts };
}

function verifyService(entry: JournalEntry, live: KubeObject, where: string): void {
  const key = serviceRefKey(entry);
  const { body } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  if (!clusterIpsOf(live).includes(entry.toIP)) {
    throw moveError(`Service ${key} holds ${clusterIpsOf(live).join(", ")} after its re-create, not the planned ${entry.toIP}; ${where} keeps the original`);
  }
  const differences = differingUserFields(body, live);
  if (differences.length > 0) {
    throw moveError(`Service ${key} at ${entry.toIP} differs from its original in ${differences.join(", ")}; ${where} keeps the original: compare, fix, and run again`);
  }
}

function ownerUidsOf(object: KubeObject): string[] {
  return (object.metadata?.ownerReferences ?? []).map((ref) => ref.uid);
}

function hasEndpoints(slice: KubeObject): boolean {
  return Array.isArray(slice.endpoints) && slice.endpoints.length > 0;
}

/** Where this cluster serves EndpointSlices (discovery.k8s.io/v1 from 1.21, v1beta1 on 1.20). */
async function endpointSlicesPath(ctx: Context, namespace: string): Promise<string> {
  const group = await ctx.rest.getOptional("/apis/discovery.k8s.io");
  const version = (group?.preferredVersion as { version?: string } | undefined)?.version ?? "v1";
  return `/apis/discovery.k8s.io/${version}/namespaces/${encodeURIComponent(namespace)}/endpointslices`;
}

/** The stand-in's endpoints copied to the new Service right after its create; best effort (the controllers follow). */
async function bridgeEndpointsTo(ctx: Context, created: KubeObject, slicesPath: string, standInSlices: KubeObject[], standInEndpoints: KubeObject | undefined): Promise<void> {
  const target = { namespace: created.metadata!.namespace!, name: created.metadata!.name!, uid: uidOf(created)! };
  const ignoreExisting = (err: unknown) => { if (!isStatus(err, 409)) throw err; };
  try {
    const endpoints = bridgeEndpoints(standInEndpoints, target);
    await Promise.all([
      ...bridgeSlices(standInSlices, target).map((slice) => ctx.rest.create(slicesPath, slice).catch(ignoreExisting)),
      ...(endpoints ? [ctx.rest.create(paths.endpointsList(target.namespace), endpoints).catch(ignoreExisting)] : []),
    ]);
  } catch (err) {
    ctx.warnings.push(`Service ${target.namespace}/${target.name}: its endpoints could not be bridged from the stand-in (${(err as Error).message.split("\n")[0]}); it answers once the endpoints controllers have written them`);
  }
}

/**
 * Removes the bridge once the endpointslice controller has written the new Service's own slices; returns when
 * those were first seen.
 */
async function removeBridge(ctx: Context, entry: JournalEntry, created: KubeObject, where: string): Promise<number | undefined> {
  const key = serviceRefKey(entry);
  const slicesPath = await endpointSlicesPath(ctx, entry.namespace);
  const bridge = await ctx.rest.list(slicesPath, { labelSelector: `${SERVICE_NAME_LABEL}=${entry.name},${MANAGED_BY_LABEL}=${BRIDGE_MANAGER}` });
  if (bridge.length === 0) return undefined;
  const deadline = nowMs() + ctx.options.kubernetesServiceTimeoutMs;
  for (;;) {
    const slices = await ctx.rest.list(slicesPath, { labelSelector: `${SERVICE_NAME_LABEL}=${entry.name}` });
    if (controllerSlicesOf(slices, uidOf(created)!).length > 0) break;
    if (nowMs() > deadline) {
      throw moveError(`Service ${key}: the endpointslice controller wrote no EndpointSlice for it within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s, so the bridged copies of the stand-in's stay (label ${MANAGED_BY_LABEL}=${BRIDGE_MANAGER}); check kube-controller-manager and run again (${where} is kept until then)`);
    }
    await sleep(POLL_MS);
  }
  const seen = nowMs();
  await Promise.all(bridge.map((slice) => retrying(() => ctx.rest.delete(`${slicesPath}/${encodeURIComponent(slice.metadata!.name!)}`, { preconditions: { uid: uidOf(slice) } }).catch((err) => { if (!isStatus(err, 404)) throw err; }))));
  return seen;
}

/** The journaled Service as it was, old IP included: what a rollback creates. */
function originalBody(original: KubeObject): KubeObject {
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
async function rollBack(ctx: Context, prepared: Prepared, reason: string): Promise<never> {
  const { entry, request } = prepared;
  const key = serviceRefKey(request);
  const where = journalWhere(ctx, request);
  let restored: KubeObject;
  try {
    restored = (await createWhenFree(ctx, originalBody(entry.service), key, uidOf(entry.service), where)).created;
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
interface Prepared {
  request: ServiceMoveRequest;
  entry: JournalEntry;
  /** The Service as this run last saw it (undefined: it did not exist). */
  live?: KubeObject;
  outcome: "moved" | "completed-from-journal";
}

/** A move whose Service is back at its planned IP (and hand-made Endpoints restored); what is left is bookkeeping. */
interface Swapped {
  prepared: Prepared;
  /** When the create was accepted (DNS swap: the reference for the endpoint timings). */
  createdAt?: number;
  created: KubeObject;
  result: MoveResult;
  /** Old uid → new uid, for the Service and its Endpoints: what dependents are re-linked by. */
  uidMap: Map<string, string>;
}

/** Phase 1a: the journal entry of a move (written for all moves at once, see runServiceMoves). */
function journalEntryFor(decision: Extract<Decision, { kind: "move" }>, ownedBy: Map<string, JournaledDependent[]>, endpointsOf: Map<string, KubeObject>): JournalEntry {
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
    recordedAt: decision.previous?.recordedAt ?? new Date().toISOString(),
    service: live,
    ...(endpoints ? { endpoints } : {}),
    dependents: [...dependents.values()],
    ...(request.vacate ? { vacate: { ...request.vacate } } : {}),
  };
}

/** Phase 1b, once the entry is durable: dependents detached from the old owners. Nothing is deleted yet. */
async function detachMove(ctx: Context, request: ServiceMoveRequest, entry: JournalEntry): Promise<Prepared> {
  const owners = [uidOf(entry.service), uidOf(entry.endpoints)].filter((u): u is string => !!u);
  await detachDependents(ctx, entry.dependents, new Set(owners));
  faultPoint("after-detach-dependents", serviceRefKey(request));
  return { request, entry, live: entry.service, outcome: "moved" };
}

/**
 * Undoes phase 1 for a move that was never deleted (the run stopped first): owners back. Returns whether its
 * journal entry may go.
 */
async function abandon(ctx: Context, prepared: Prepared): Promise<boolean> {
  if (prepared.outcome !== "moved") return false; // an interrupted earlier move keeps its journal
  const live = await ctx.rest.getOptional(paths.service(prepared.entry.namespace, prepared.entry.name));
  if (!live || uidOf(live) !== uidOf(prepared.entry.service)) return false; // it was deleted after all: keep the journal
  await relinkDependents(ctx, prepared.entry, new Map());
  return true;
}

/** Phase 2, gap-critical: delete, create at toIP, verify, hand-made Endpoints back. */
async function swapMove(ctx: Context, prepared: Prepared): Promise<Swapped> {
  const { entry, request } = prepared;
  const key = serviceRefKey(request);
  const where = journalWhere(ctx, request);
  const result: MoveResult = { namespace: request.namespace, name: request.name, outcome: prepared.outcome, fromIP: entry.fromIP, ip: entry.toIP };
  let created: KubeObject;
  let swappedAt: number | undefined;
  if (prepared.live && uidOf(prepared.live) !== uidOf(entry.service)) {
    created = prepared.live; // an interrupted run had already created it
  } else {
    let swapped: Awaited<ReturnType<typeof swapIn>>;
    try {
      swapped = await swapIn(ctx, entry, prepared.live, where);
    } catch (err) {
      const rejected = (err as { rejectedCreate?: string }).rejectedCreate;
      if (rejected && !entry.vacate) return rollBack(ctx, prepared, rejected);
      throw err;
    }
    created = swapped.created;
    result.gapMillis = round(swapped.gapMillis);
    result.createAttempts = swapped.attempts;
    if (swapped.bridgedMillis !== undefined) result.endpointsBridgedMillis = round(swapped.bridgedMillis);
    swappedAt = swapped.createdAt;
    faultPoint("after-create", key);
    ctx.options.log?.(`Service ${key}: ${entry.fromIP} -> ${entry.toIP} (gap ${result.gapMillis} ms)`);
  }
  verifyService(entry, created, where);
  const { correctedAnnotations, pinnedInLastApplied } = buildRecreateBody(entry.service, entry.fromIP, entry.toIP);
  result.correctedAnnotations = correctedAnnotations;
  result.pinnedInLastApplied = pinnedInLastApplied;
  const uidMap = new Map<string, string>([[uidOf(entry.service)!, uidOf(created)!]]);
  if (entry.endpoints) {
    const restored = await restoreEndpoints(ctx, entry, uidMap);
    uidMap.set(uidOf(entry.endpoints)!, uidOf(restored.object)!);
    result.restoredEndpoints = true;
    faultPoint("after-endpoints-restore", key);
  }
  return { prepared, created, result, uidMap, createdAt: swappedAt };
}

/** Phase 3: Endpoints settled, dependents re-linked, everything verified; then its journal entry may go. */
async function finishMove(ctx: Context, swapped: Swapped): Promise<void> {
  const { entry } = swapped.prepared;
  const key = serviceRefKey(entry);
  const where = journalWhere(ctx, entry);
  if (entry.endpoints) await settleEndpoints(ctx, entry, swapped.uidMap);
  if (entry.vacate) {
    const seen = await removeBridge(ctx, entry, swapped.created, where);
    if (seen !== undefined && swapped.createdAt !== undefined) swapped.result.controllerSliceMillis = round(seen - swapped.createdAt);
  }
  swapped.result.relinkedDependents = await relinkDependents(ctx, entry, swapped.uidMap);
  faultPoint("after-dependents-relink", key);
  if (entry.endpoints || entry.dependents.length > 0) {
    // Something was restored around it: look once more at the whole (the create's answer was verified already).
    const now = await ctx.rest.getOptional(paths.service(entry.namespace, entry.name));
    if (!now || uidOf(now) !== uidOf(swapped.created)) throw moveError(`Service ${key} was deleted or replaced by someone else right after its re-create; ${where} keeps the original`);
    verifyService(entry, now, where);
  }
  if (entry.endpoints) {
    const endpoints = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
    if (!sameEndpoints(endpoints, entry.endpoints)) throw moveError(`Endpoints ${key} could not be restored as they were; ${where} keeps them`);
  }
  faultPoint("after-verify", key);
}

// ---------------------------------------------------------------- default/kubernetes

async function moveKubernetesService(ctx: Context, view: ClusterView, request: KubernetesServiceRequest): Promise<KubernetesServiceResult> {
  const ref = { namespace: "default", name: "kubernetes" };
  const key = serviceRefKey(ref);
  const where = journalWhere(ctx, ref);
  const live = view.services.get(key);
  const journal = view.journals.get(key);
  if (live && clusterIpsOf(live).includes(request.toIP) && !journal) return { outcome: "already-moved", ip: request.toIP };

  let entry = journal;
  let gapMillis: number | undefined;
  if (live && clusterIpsOf(live).includes(request.fromIP) && !live.metadata?.deletionTimestamp) {
    entry = {
      format: "cidr-migration.io/service-move/v1", kind: "apiserver-recreates", namespace: "default", name: "kubernetes",
      fromIP: request.fromIP, toIP: request.toIP, recordedAt: journal?.recordedAt ?? new Date().toISOString(), service: live, dependents: [],
    };
    await writeJournal(ctx, entry);
    await deleteService(ctx, ref, uidOf(live), where);
    faultPoint("after-kubernetes-delete", key);
  } else if (live && !clusterIpsOf(live).includes(request.toIP) && !live.metadata?.deletionTimestamp) {
    throw moveError(`Service ${key} holds ${clusterIpsOf(live).join(", ")}, expected ${request.fromIP} or ${request.toIP}; is kube-apiserver on the new --service-cluster-ip-range? Nothing was changed`);
  }
  const deleted = nowMs();
  const oldUid = uidOf(entry?.service ?? live);
  const deadline = deleted + ctx.options.kubernetesServiceTimeoutMs;
  let recreated: KubeObject | undefined;
  for (;;) {
    recreated = await ctx.rest.getOptional(paths.service("default", "kubernetes"));
    if (recreated && uidOf(recreated) !== oldUid) break;
    if (nowMs() > deadline) {
      throw moveError(`kube-apiserver did not re-create Service ${key} within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s of its delete; check that kube-apiserver runs (its bootstrap controller re-creates it every 10 s)${entry ? `; ${where} keeps the original's labels and annotations` : ""}`);
    }
    await sleep(POLL_MS);
  }
  if (live && uidOf(live) === oldUid) gapMillis = round(nowMs() - deleted);
  if (!clusterIpsOf(recreated).includes(request.toIP)) {
    throw moveError(`kube-apiserver re-created Service ${key} at ${clusterIpsOf(recreated).join(", ")}, not at the new range's first IP ${request.toIP}; its --service-cluster-ip-range is not the new range yet`);
  }
  if (entry) {
    // The apiserver writes only its own labels; the user's labels and annotations come back from the journal.
    const meta = entry.service.metadata ?? {};
    const missing = (wanted: Record<string, string> | undefined, have: Record<string, string> | undefined) =>
      Object.fromEntries(Object.entries(wanted ?? {}).filter(([k]) => !(have ?? {})[k]));
    const labels = missing(meta.labels, recreated.metadata?.labels);
    const annotations = missing(meta.annotations, recreated.metadata?.annotations);
    if (Object.keys(labels).length + Object.keys(annotations).length > 0) {
      await retrying(() => ctx.rest.mergePatch(paths.service("default", "kubernetes"), { metadata: { labels, annotations } }));
    }
    await ctx.journal.remove([key]);
  }
  ctx.options.log?.(`Service ${key}: re-created by kube-apiserver at ${request.toIP}${gapMillis !== undefined ? ` (gap ${gapMillis} ms)` : ""}`);
  return { outcome: gapMillis !== undefined ? "moved" : "completed-from-journal", ip: request.toIP, ...(gapMillis !== undefined ? { gapMillis } : {}) };
}

// ---------------------------------------------------------------- stand-ins

async function ensureStandIn(ctx: Context, view: ClusterView, request: StandInRequest): Promise<{ outcome: "created" | "present" }> {
  const key = serviceRefKey(request);
  const existing = view.services.get(key);
  if (existing) {
    if (clusterIpsOf(existing).includes(request.ip)) return { outcome: "present" };
    throw moveError(`Service ${key} exists at ${clusterIpsOf(existing).join(", ")}, but the stand-in for ${serviceRefKey(request.of)} must be at ${request.ip}; delete it or choose another stand-in name`);
  }
  const holder = view.ipHolders.get(request.ip);
  if (holder) throw moveError(`the stand-in for ${serviceRefKey(request.of)} needs ${request.ip}, which Service ${holder} holds; nothing was changed`);
  const source = view.services.get(serviceRefKey(request.of));
  if (!source) throw moveError(`Service ${serviceRefKey(request.of)} does not exist, so no stand-in can copy its selector and ports; check cidr-migration:dns`);
  await retrying(async () => {
    try {
      await ctx.rest.create(paths.services(request.namespace), buildStandInBody(source, request));
    } catch (err) {
      // a create whose answer was lost: it is there at its IP
      const now = isStatus(err, 409) ? await ctx.rest.getOptional(paths.service(request.namespace, request.name)) : undefined;
      if (!now || !clusterIpsOf(now).includes(request.ip)) throw err;
    }
  });
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
  const requested = new Set(moveSpec.moves.map(serviceRefKey));
  return [...view.journals.values()]
    .filter((entry) => entry.kind === "recreate" && !entry.vacate && !requested.has(serviceRefKey(entry)))
    .map((entry) => ({ namespace: entry.namespace, name: entry.name, fromIP: entry.fromIP, toIP: entry.toIP, type: spec(entry.service).type as string | undefined }));
}

function adoptedKubernetesJournal(view: ClusterView, adopt: boolean): KubernetesServiceRequest | undefined {
  const entry = view.journals.get("default/kubernetes");
  return adopt && entry?.kind === "apiserver-recreates" ? { fromIP: entry.fromIP, toIP: entry.toIP } : undefined;
}

const PROBE_LABEL = "cidr-migration.io/probe";
const PROBE_NAME = "cidr-migration-range-probe";

/**
 * Before the first delete, a short-lived Service created at a planned IP, and deleted at once, proves the apiserver
 * allocates in the new range. Whether it does is a property of the range (a ServiceCIDR that covers it on 1.33+, no
 * dual-written legacy bitmap on 1.33, the apiserver's flag before that), so one probe per run tells it; a refusal
 * here stops the run with nothing deleted, where after a delete not even the put-back at the old IP might be allowed
 * (the old default ServiceCIDR no longer allocates). A dry run cannot stand in: 1.37 answers it with "allocator not
 * ready". A probe left by a killed run is removed first, so it never holds a planned IP.
 */
async function probeNewRange(ctx: Context, decisions: Decision[], view: ClusterView): Promise<void> {
  // not at an IP held until the swap (the DNS stand-in's): that it is held there already proves the range allocates
  const firstMove = decisions.find((d): d is Extract<Decision, { kind: "move" }> => d.kind === "move" && !d.request.vacate && !view.ipHolders.has(d.request.toIP));
  if (!firstMove) return;
  const { namespace, toIP } = firstMove.request;
  try {
    await retrying(() => ctx.rest.create(paths.services(namespace), {
      apiVersion: "v1", kind: "Service",
      metadata: { name: PROBE_NAME, labels: { [PROBE_LABEL]: "range" } },
      spec: { type: "ClusterIP", clusterIP: toIP, ports: [{ port: 1, protocol: "TCP" }] },
    }));
  } catch (err) {
    if (!isStatus(err, 422)) throw moveError(failureLine(err, ctx.rest.server, `checking that ${toIP} can be allocated`));
    throw moveError(`kube-apiserver refuses ClusterIP ${toIP} (planned for Service ${serviceRefKey(firstMove.request)}): ${(err as KubeApiError).apiMessage}; nothing was deleted. Check that every kube-apiserver runs with the new --service-cluster-ip-range, that a ServiceCIDR covers the new range (step service-cidr-open) and, on 1.33, that DisableAllocatorDualWrite=true is set (preflight SERVICE_ALLOCATOR_DUAL_WRITE); then run again`);
  }
  await removeProbes(ctx);
}

async function removeProbes(ctx: Context): Promise<void> {
  const probes = await ctx.rest.list("/api/v1/services", { labelSelector: `${PROBE_LABEL}=range` });
  for (const probe of probes) {
    await retrying(() => ctx.rest.delete(paths.service(probe.metadata!.namespace!, probe.metadata!.name!)).catch((err) => {
      if (!isStatus(err, 404)) throw err;
      return {};
    }));
    await waitGone(ctx, { namespace: probe.metadata!.namespace!, name: probe.metadata!.name! }, probe.metadata!.uid);
  }
}

export async function runServiceMoves(kc: KubeConfig, moveSpec: ServiceMoveSpec, options: MoverOptions): Promise<MoveReport> {
  const started0 = nowMs();
  const invalid = validateSpec(moveSpec, options);
  if (invalid.length > 0) throw moveError(invalid.join("\n"));
  const rest = await kubeRest(kc, { maxSockets: Math.max(WIDE_LANES, options.parallelism) + 8 });
  const ctx: Context = {
    rest,
    options: withMoverDefaults(options),
    journalNamespace: options.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
    journal: undefined as unknown as JournalStore,
    warnings: [],
  };
  try {
    let view: ClusterView;
    try {
      ctx.journal = await loadJournal(rest, ctx.journalNamespace);
      await removeProbes(ctx);
      view = await readCluster(ctx);
    } catch (err) {
      throw moveError(failureLine(err, rest.server, "reading Services and journals"));
    }
    const problems: string[] = [];
    const requests = [...moveSpec.moves, ...adoptedJournals(view, moveSpec, options.adoptJournals === true)];
    const decisions = requests.map((m) => decide(ctx, view, m, problems)).filter((d): d is Decision => d !== undefined);
    if (problems.length > 0) throw moveError(problems.join("\n"));

    await probeNewRange(ctx, decisions, view);

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
        if (endpoints) endpointsOf.set(serviceRefKey(d.request), endpoints);
      }, () => false);
      const owners = new Set<string>();
      for (const d of toMove) {
        owners.add(uidOf(d.live)!);
        const endpoints = endpointsOf.get(serviceRefKey(d.request));
        if (endpoints) owners.add(uidOf(endpoints)!);
      }
      const scan = await findOwnedObjects(rest, new Set(toMove.map((d) => d.request.namespace)), owners);
      ownedBy = scan.byOwner;
      ctx.warnings.push(...scan.warnings);
    }

    const failures: string[] = [];
    const fail = (key: string) => (err: unknown) => { failures.push(failureLine(err, rest.server, `moving Service ${key}`)); };
    const stopped = () => failures.length > 0;
    const kubernetesRequest = moveSpec.kubernetesService ?? adoptedKubernetesJournal(view, options.adoptJournals === true);
    const kubernetes = kubernetesRequest
      ? moveKubernetesService(ctx, view, kubernetesRequest).catch((err) => {
        failures.push(failureLine(err, rest.server, "moving Service default/kubernetes"));
        return undefined;
      })
      : Promise.resolve(undefined);
    for (const d of decisions) if (d.kind === "skip") report.results.push(d.result);
    const work = decisions.filter((d): d is Exclude<Decision, { kind: "skip" }> => d.kind !== "skip");
    // Bookkeeping (journal writes and removals) runs wider than the moves: it deletes nothing.
    const wide = Math.max(ctx.options.parallelism, WIDE_LANES);

    // 1. Journal every move, in packs, before the first delete; then detach their dependents.
    const journalStart = nowMs();
    const prepared: Prepared[] = [];
    const fresh = work.filter((d): d is Extract<Decision, { kind: "move" }> => d.kind === "move");
    try {
      const entries = fresh.map((d) => journalEntryFor(d, ownedBy, endpointsOf));
      for (const d of fresh) faultPoint("before-journal", serviceRefKey(d.request));
      await ctx.journal.writeAll(entries);
      for (const d of fresh) faultPoint("after-journal", serviceRefKey(d.request));
      await inLanes(fresh.map((d, i) => ({ d, entry: entries[i] })), wide, async ({ d, entry }) => {
        try {
          prepared.push(await detachMove(ctx, d.request, entry));
        } catch (err) {
          fail(serviceRefKey(d.request))(err);
        }
      }, stopped);
    } catch (err) {
      failures.push(failureLine(err, rest.server, "journaling the Service moves"));
    }
    for (const d of work) if (d.kind === "resume") prepared.push({ request: d.request, entry: d.entry, live: d.live, outcome: "completed-from-journal" });
    if (failures.length > 0) {
      const undone = await Promise.all(fresh.map((d) => {
        const entry = ctx.journal.entries.get(serviceRefKey(d.request));
        return entry ? abandon(ctx, { request: d.request, entry, live: d.live, outcome: "moved" }).catch((err) => { fail(serviceRefKey(d.request))(err); return false; }) : false;
      }));
      await ctx.journal.remove(fresh.filter((_, i) => undone[i]).map((d) => serviceRefKey(d.request))).catch((err) => { failures.push(failureLine(err, rest.server, "removing journal entries")); });
      await kubernetes;
      throw moveError([...failures, "no Service was deleted; run again once the above is fixed"].join("\n"));
    }

    // 2. The swaps, `parallelism` at a time and nothing else in flight but the Endpoints settles. Selector-less
    // Services go first: their settle then overlaps the other swaps.
    prepared.sort((a, b) => Number(a.entry.endpoints === undefined) - Number(b.entry.endpoints === undefined));
    const swapStart = nowMs();
    const swapped: Swapped[] = [];
    const settling: Promise<void>[] = [];
    const started = new Set<Prepared>();
    const finished: string[] = [];
    const finish = (s: Swapped) => finishMove(ctx, s).then(() => { finished.push(serviceRefKey(s.prepared.request)); }, fail(serviceRefKey(s.prepared.request)));
    const lanes = adaptiveLimit(ctx.options.parallelism);
    await inAdaptiveLanes(prepared, lanes, async (p) => {
      started.add(p);
      try {
        const s = await swapMove(ctx, p);
        report.results.push(s.result);
        if (s.result.gapMillis !== undefined) lanes.record(s.result.gapMillis);
        report.swapLanes = lanes.range();
        // the settle is mostly waiting: it starts at once and holds no lane
        if (p.entry.endpoints) settling.push(finish(s));
        else swapped.push(s);
      } catch (err) {
        fail(serviceRefKey(p.request))(err);
      }
    }, stopped);

    // 3. Bookkeeping: re-link, verify; undo phase 1 for moves never started; then the journal entries go, one
    // write per journal Secret.
    const finishStart = nowMs();
    await inLanes(swapped, wide, finish, () => false);
    await Promise.all(settling);
    const notStarted = prepared.filter((p) => !started.has(p));
    const undone = await Promise.all(notStarted.map((p) => abandon(ctx, p).catch((err) => { fail(serviceRefKey(p.request))(err); return false; })));
    const removable = [...finished, ...notStarted.filter((_, i) => undone[i]).map((p) => serviceRefKey(p.request))];
    await ctx.journal.remove(removable).catch((err) => { failures.push(failureLine(err, rest.server, "removing journal entries of finished moves")); });
    for (const key of finished) faultPoint("after-journal-remove", key);
    report.kubernetesService = await kubernetes;
    report.timings = {
      preflightMillis: round(journalStart - started0),
      journalMillis: round(swapStart - journalStart),
      swapMillis: round(finishStart - swapStart),
      finishMillis: round(nowMs() - finishStart),
    };
    if (failures.length > 0) {
      throw moveError([...failures, ...(notStarted.length > 0 ? [`${notStarted.length} other Service move(s) were not started (nothing of them changed); run again once the above is fixed`] : [])].join("\n"));
    }
    report.results.sort((a, b) => serviceRefKey(a).localeCompare(serviceRefKey(b)));
    report.totalMillis = round(nowMs() - started0);
    return report;
  } finally {
    rest.close();
  }
}
