import { MANAGED_BY_LABEL, sameEndpoints } from "./dependents";
import { faultPoint } from "./faultHook";
import { ServiceRef, serviceRefKey } from "./serviceRef";
import { isStatus, isTransient, KubeApiError, KubeObject, paths } from "./kubeRest";
import { MoveResult, plannedIps } from "./moveTypes";
import { clusterIpsOf, differingUserFields, holdsClusterIps, spec } from "./recreateBody";
import { bridgeEndpoints, bridgeSliceName, bridgeSlices, bridgesOwnSlices, ownSliceCopies, SERVICE_NAME_LABEL, SLICE_CONTROLLER, SliceTarget } from "./endpointBridge";
import { ownBridgeSlices, restoreEndpoints, verifyService } from "./finish";
import { Context, LEAK_SUSPICION_MS, MAX_BACKOFF_MS, POLL_MS, journalWhere, moveError, nowMs, retrying, round, uidOf, writeJournal } from "./moverContext";
import { journalNewerOriginal, Prepared, rollBack } from "./prepare";
import { sleep } from "../concurrency/sleep";
import { moveInPlace } from "./inPlaceMove";

/** Phase 2: the swap itself, delete and at once re-create at the planned IP, with the waits for finalizers and leaked allocations and the Endpoints bridge from a stand-in. */

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
export async function createWhenFree(ctx: Context, body: KubeObject, key: string, oldUid: string | undefined, where: string): Promise<{ created: KubeObject; attempts: number }> {
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

export async function deleteService(ctx: Context, ref: ServiceRef, uid: string | undefined, where: string): Promise<void> {
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

export async function waitGone(ctx: Context, ref: ServiceRef, uid: string | undefined): Promise<void> {
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
 * once more just before, for the same reason (the apiserver deletes them with the Service). A refreshed original
 * gets its re-create body built again.
 */
async function deleteJournaled(ctx: Context, prepared: Prepared, where: string): Promise<void> {
  const { entry } = prepared;
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
      await journalNewerOriginal(ctx, prepared, current);
    }
  }
}

/** Deletes (the vacated stand-in, or the original) and creates at toIP; returns the created object and the gap. */
async function swapIn(ctx: Context, prepared: Prepared, where: string): Promise<{ created: KubeObject; gapMillis: number; attempts: number; createdAt?: number; bridgedMillis?: number; copies?: string[] }> {
  const { entry, live } = prepared;
  const key = serviceRefKey(entry);
  const oldUid = uidOf(entry.service);
  if (entry.vacate) {
    // The final DNS swap: the old DNS Service (old IP, nobody resolves through it after the node rollout) goes
    // first, so that the stand-in's delete and the create at the final IP are back to back.
    // What the DNS pods look like to kube-proxy, for the endpoint bridge (see endpointBridge.ts): the stand-in's
    // slices, or, while a busy endpointslice controller has not written those yet, the old DNS Service's own
    // (same selector, same ports), read before it goes.
    const slicesPath = await endpointSlicesPath(ctx, entry.namespace);
    const controllerSlices = (service: string) => controllerSlicesNamed(ctx, slicesPath, service);
    let oldSlices: KubeObject[] = [];
    let oldEndpoints: KubeObject | undefined;
    if (live && uidOf(live) === oldUid) {
      oldSlices = (await controllerSlices(entry.name)).filter((slice) => ownerUidsOf(slice).includes(oldUid!));
      oldEndpoints = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
      if (!live.metadata?.deletionTimestamp) await deleteJournaled(ctx, prepared, where);
      await waitGone(ctx, entry, oldUid);
      faultPoint("after-old-dns-delete", key);
    }
    const { body } = prepared.recreate;
    const standIn = await ctx.rest.getOptional(paths.service(entry.vacate.namespace, entry.vacate.name));
    const fromStandIn = standIn ? await controllerSlices(entry.vacate.name) : [];
    const standInSlices = fromStandIn.some(hasEndpoints) ? fromStandIn : oldSlices;
    const fromStandInEndpoints = standIn ? await ctx.rest.getOptional(paths.endpoints(entry.vacate.namespace, entry.vacate.name)) : undefined;
    const standInEndpoints = Array.isArray(fromStandInEndpoints?.subsets) && fromStandInEndpoints!.subsets.length > 0 ? fromStandInEndpoints : oldEndpoints;
    // the slices are copied under the DNS Service's name before the stand-in goes, as for any other move
    const preCopied = standInSlices.length > 0 && (await copySlices(ctx, slicesPath, standInSlices, { namespace: entry.namespace, name: entry.name }));
    if (standIn && clusterIpsOf(standIn).includes(entry.toIP)) {
      await deleteService(ctx, entry.vacate, uidOf(standIn), where);
    }
    const deleted = nowMs();
    faultPoint("after-vacate", key);
    const { created, attempts } = await createWhenFree(ctx, body, key, uidOf(standIn), where);
    const createdAt = nowMs();
    await bridgeEndpointsTo(ctx, created, slicesPath, preCopied ? [] : standInSlices, standInEndpoints);
    if (preCopied) await ownBridgeSlices(ctx, slicesPath, standInSlices.map((_, i) => bridgeSliceName(entry.name, i)), { namespace: entry.namespace, name: entry.name, uid: uidOf(created)! });
    faultPoint("after-dns-bridge", key);
    return { created, gapMillis: createdAt - deleted, attempts, createdAt, bridgedMillis: nowMs() - createdAt };
  }
  // A selector Service's endpoints as the controller wrote them, copied under its name before the delete
  // (endpointBridge.ts): DNS answers the new IP at once, and until kube-proxy has endpoints for it, a connection
  // there is refused (seen on the node lab: about a second per Service). Before, not beside: a copy that lands
  // after the create lets kube-proxy program the new Service without endpoints (a REJECT) for a sync period; on
  // the node lab, with the copy made beside the delete, single requests were refused again.
  let oldSlices: KubeObject[] = [];
  let slicesPath = "";
  const current = live && uidOf(live) === oldUid && !live.metadata?.deletionTimestamp;
  if (current && bridgesOwnSlices(entry)) {
    try {
      slicesPath = await endpointSlicesPath(ctx, entry.namespace);
      const mirrored = ctx.slices?.slicesOf(entry.namespace, entry.name)?.filter((slice) => slice.metadata?.labels?.[MANAGED_BY_LABEL] === SLICE_CONTROLLER);
      const slices = mirrored ?? await controllerSlicesNamed(ctx, slicesPath, entry.name);
      oldSlices = slices.filter((slice) => ownerUidsOf(slice).includes(oldUid!) && hasEndpoints(slice));
    } catch (err) {
      // best effort, like the bridge itself: the move goes on, and the controllers write the endpoints as ever
      ctx.warnings.push(`Service ${key}: its endpoints could not be read for the bridge (${(err as Error).message.split("\n")[0]}); it answers once the endpointslice controller has written them`);
    }
  }
  const copies = ownSliceCopies(oldSlices, { namespace: entry.namespace, name: entry.name });
  const copyNames = copies.map((copy) => copy.metadata!.name!);
  const preCopied = copies.length > 0 && (await createCopies(ctx, slicesPath, copies, key));
  let answered: Promise<void> = Promise.resolve();
  try {
    if (current) {
      const deletion = startDelete(ctx, prepared, where, oldUid!);
      answered = deletion.answered;
      answered.catch(() => undefined); // awaited below, once the create is done; a failure before that is gone's too
      await deletion.gone;
    }
  } catch (err) {
    if (preCopied) await removeCopies(ctx, slicesPath, copyNames);
    throw err;
  }
  const deleted = nowMs();
  faultPoint("after-delete", key);
  // read after the delete: deleteJournaled may have refreshed the journaled original
  const { body } = prepared.recreate;
  const { created, attempts } = await createWhenFree(ctx, body, key, oldUid, where);
  const createdAt = nowMs();
  const swapped = { created, gapMillis: createdAt - deleted, attempts };
  let bridged = {};
  if (oldSlices.length > 0 && !preCopied) {
    await bridgeEndpointsTo(ctx, created, slicesPath, oldSlices, undefined, true);
    bridged = { bridgedMillis: nowMs() - createdAt, copies: copyNames };
  } else if (oldSlices.length > 0) {
    // the copies are the endpointslice controller's to replace (endpointBridge.ts ownSliceCopies): nothing to hand over
    bridged = { bridgedMillis: 0 };
  }
  // before the move writes anything more (hand-made Endpoints): the apiserver removes the old Service's Endpoints
  // after its delete, just before it answers
  await answered;
  return { ...swapped, ...bridged };
}

/**
 * The journaled delete: `gone` settles with the apiserver's answer or, sooner, when the deletion watch reports the
 * Service gone (deletionWatch.ts); `answered` with the answer.
 */
function startDelete(ctx: Context, prepared: Prepared, where: string, uid: string): { gone: Promise<void>; answered: Promise<void> } {
  const answer = deleteJournaled(ctx, prepared, where);
  if (!ctx.deletions) return { gone: answer, answered: answer };
  const deletions = ctx.deletions;
  let reported = false;
  let isAnswered = false;
  const watched = deletions.deleted(uid).then(() => {
    reported = true;
    if (!isAnswered) deletions.ahead++;
  });
  return {
    gone: Promise.race([answer.finally(() => { isAnswered = true; }), watched]),
    // once the watch has reported it gone, a failed answer (a lost connection) changes nothing
    answered: answer.catch((err) => { if (!reported) throw err; }),
  };
}

/** Copies of `slices` under the Service's name, without an owner, made before its delete; false if they could not be made. */
async function copySlices(ctx: Context, slicesPath: string, slices: KubeObject[], target: SliceTarget): Promise<boolean> {
  return createCopies(ctx, slicesPath, bridgeSlices(slices, target), `${target.namespace}/${target.name}`);
}

async function createCopies(ctx: Context, slicesPath: string, copies: KubeObject[], key: string): Promise<boolean> {
  try {
    await Promise.all(copies.map((copy) => ctx.rest.create(slicesPath, copy).catch((err) => { if (!isStatus(err, 409)) throw err; })));
    return true;
  } catch (err) {
    ctx.warnings.push(`Service ${key}: its endpoints could not be copied before its move (${(err as Error).message.split("\n")[0]}); they are copied right after its create`);
    return false;
  }
}

/** The copies made for a move whose delete then failed: the Service stays as it was, so they go; best effort (the controller deletes them too, at its next sync of the Service that does not own them). */
async function removeCopies(ctx: Context, slicesPath: string, names: string[]): Promise<void> {
  await Promise.all(names.map((name) => ctx.rest.delete(`${slicesPath}/${encodeURIComponent(name)}`).catch((err) => { if (!isStatus(err, 404)) throw err; })))
    .catch(() => undefined);
}

/** The endpointslice controller's slices labelled with the Service name `service` (of any uid). */
function controllerSlicesNamed(ctx: Context, slicesPath: string, service: string): Promise<KubeObject[]> {
  return ctx.rest.list(slicesPath, { labelSelector: `${SERVICE_NAME_LABEL}=${service},${MANAGED_BY_LABEL}=${SLICE_CONTROLLER}` });
}

function ownerUidsOf(object: KubeObject): string[] {
  return (object.metadata?.ownerReferences ?? []).map((ref) => ref.uid);
}

function hasEndpoints(slice: KubeObject): boolean {
  return Array.isArray(slice.endpoints) && slice.endpoints.length > 0;
}

/** The discovery.k8s.io version this cluster serves EndpointSlices at (v1 from 1.21, v1beta1 on 1.20); asked once a run. */
function endpointSlicesGroup(ctx: Context): Promise<string> {
  ctx.endpointSlicesVersion ??= ctx.rest.getOptional("/apis/discovery.k8s.io")
    .then((group) => (group?.preferredVersion as { version?: string } | undefined)?.version ?? "v1");
  return ctx.endpointSlicesVersion.then((version) => `/apis/discovery.k8s.io/${version}`);
}

/** Every namespace's EndpointSlices. */
export async function allEndpointSlicesPath(ctx: Context): Promise<string> {
  return `${await endpointSlicesGroup(ctx)}/endpointslices`;
}

/** The EndpointSlices of `namespace`. */
export async function endpointSlicesPath(ctx: Context, namespace: string): Promise<string> {
  return `${await endpointSlicesGroup(ctx)}/namespaces/${encodeURIComponent(namespace)}/endpointslices`;
}

/** The stand-in's endpoints copied to the new Service right after its create; best effort (the controllers follow). */
async function bridgeEndpointsTo(ctx: Context, created: KubeObject, slicesPath: string, standInSlices: KubeObject[], standInEndpoints: KubeObject | undefined, ownSlices = false): Promise<void> {
  const target = { namespace: created.metadata!.namespace!, name: created.metadata!.name!, uid: uidOf(created)! };
  const ignoreExisting = (err: unknown) => { if (!isStatus(err, 409)) throw err; };
  try {
    const endpoints = bridgeEndpoints(standInEndpoints, target);
    await Promise.all([
      ...bridgeSlices(standInSlices, target, ownSlices).map((slice) => ctx.rest.create(slicesPath, slice).catch(ignoreExisting)),
      ...(endpoints ? [ctx.rest.create(paths.endpointsList(target.namespace), endpoints).catch(ignoreExisting)] : []),
    ]);
  } catch (err) {
    ctx.warnings.push(`Service ${target.namespace}/${target.name}: its endpoints could not be bridged from the stand-in (${(err as Error).message.split("\n")[0]}); it answers once the endpoints controllers have written them`);
  }
}

/** A move whose Service is back at its planned IP (and hand-made Endpoints restored); what is left is bookkeeping. */
export interface Swapped {
  prepared: Prepared;
  /** When the create was accepted (DNS swap: the reference for the endpoint timings). */
  createdAt?: number;
  created: KubeObject;
  /** The endpoint bridge's copies this run made for it: bookkeeping trusts the slice mirror once it shows them. */
  copies?: string[];
  result: MoveResult;
  /** Moved in place: the same object, nothing of an endpoint bridge to end. */
  inPlace?: boolean;
  /** Old uid → new uid, for the Service and its Endpoints: what dependents are re-linked by. */
  uidMap: Map<string, string>;
}

/** Phase 2, gap-critical: delete, create at toIP, verify, hand-made Endpoints back. */
export async function swapMove(ctx: Context, prepared: Prepared): Promise<Swapped> {
  const { entry, request } = prepared;
  const key = serviceRefKey(request);
  const where = journalWhere(ctx, request);
  const result: MoveResult = { namespace: request.namespace, name: request.name, outcome: prepared.outcome, fromIP: entry.fromIP, ip: entry.toIP };
  let created: KubeObject;
  let swappedAt: number | undefined;
  let copies: string[] | undefined;
  const inPlace = await moveInPlace(ctx, prepared);
  if (inPlace) {
    created = inPlace.created;
    result.gapMillis = round(inPlace.gapMillis);
    result.movedInPlace = true;
    faultPoint("after-create", key);
    ctx.options.log?.(`Service ${key}: ${entry.fromIP} -> ${entry.toIP} in place (${result.gapMillis} ms as ExternalName)`);
  } else if (prepared.live && (uidOf(prepared.live) !== uidOf(entry.service) || holdsClusterIps(prepared.live, plannedIps(entry)))) {
    created = prepared.live; // an interrupted run had already created it (or moved it in place)
    if (uidOf(created) === uidOf(entry.service)) result.movedInPlace = true;
  } else {
    let swapped: Awaited<ReturnType<typeof swapIn>>;
    try {
      swapped = await swapIn(ctx, prepared, where);
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
    copies = swapped.copies;
    faultPoint("after-create", key);
    ctx.options.log?.(`Service ${key}: ${entry.fromIP} -> ${entry.toIP} (gap ${result.gapMillis} ms)`);
  }
  verifyService(prepared, created, where);
  const { correctedAnnotations, pinnedInLastApplied } = prepared.recreate;
  result.correctedAnnotations = correctedAnnotations;
  result.pinnedInLastApplied = pinnedInLastApplied;
  const uidMap = new Map<string, string>([[uidOf(entry.service)!, uidOf(created)!]]);
  if (entry.endpoints) {
    const restored = await restoreEndpoints(ctx, entry, uidMap);
    uidMap.set(uidOf(entry.endpoints)!, uidOf(restored.object)!);
    result.restoredEndpoints = true;
    faultPoint("after-endpoints-restore", key);
  }
  return { prepared, created, result, uidMap, createdAt: swappedAt, copies, inPlace: inPlace !== undefined };
}
