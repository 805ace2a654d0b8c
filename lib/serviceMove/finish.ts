import { MANAGED_BY_LABEL, relinkedOwners, restorableCopy, sameEndpoints, sameOwners } from "./dependents";
import { faultPoint } from "./faultHook";
import { JournalEntry } from "./journal";
import { plannedIps } from "./moveTypes";
import { serviceRefKey } from "./serviceRef";
import { isStatus, KubeObject, paths } from "./kubeRest";
import { retryOnConflict } from "./retryOnConflict";
import { clusterIpsOf, differingUserFields } from "./recreateBody";
import type { Prepared } from "./prepare";
import { BRIDGE_MANAGER, bridgeOwner, BridgeTarget, bridgesOwnSlices, controllerSlicesOf, handOverPatch, SERVICE_NAME_LABEL } from "./endpointBridge";
import { Context, POLL_MS, SETTLE_POLL_MS, describeDependent, journalWhere, moveError, nowMs, retrying, round, uidOf } from "./moverContext";
import { Swapped, endpointSlicesPath } from "./swap";
import { sleep } from "../concurrency/sleep";

/** Phase 3, bookkeeping: re-link the dependents, restore hand-made Endpoints, verify the new Service, and remove the Endpoints bridge. */

export async function relinkDependents(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<string[]> {
  const relinked: string[] = [];
  await Promise.all(entry.dependents.map((d) => retrying(async () => {
    const path = `${d.collection}/${encodeURIComponent(d.object.metadata?.name ?? "")}`;
    await retryOnConflict(5, async () => {
      const current = await ctx.rest.getOptional(path);
      if (!current) {
        await ctx.rest.create(d.collection, restorableCopy(d.object, uidMap));
        return;
      }
      const wanted = relinkedOwners(d.object.metadata?.ownerReferences, current.metadata?.ownerReferences, uidMap);
      if (sameOwners(wanted, current.metadata?.ownerReferences)) return;
      await ctx.rest.mergePatch(path, { metadata: { resourceVersion: current.metadata?.resourceVersion, ownerReferences: wanted } });
    });
    relinked.push(describeDependent(d));
  })));
  return relinked.sort();
}

/** Puts hand-made Endpoints back as journaled (owners re-linked); returns the object now in the cluster. */
export function restoreEndpoints(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<{ object: KubeObject; changed: boolean }> {
  return retrying(() => restoreEndpointsOnce(ctx, entry, uidMap));
}

async function restoreEndpointsOnce(ctx: Context, entry: JournalEntry, uidMap: ReadonlyMap<string, string>): Promise<{ object: KubeObject; changed: boolean }> {
  const path = paths.endpoints(entry.namespace, entry.name);
  const wanted = restorableCopy(entry.endpoints!, uidMap);
  return retryOnConflict(10, async () => {
    const current = await ctx.rest.getOptional(path);
    if (!current) return { object: await ctx.rest.create(paths.endpointsList(entry.namespace), wanted), changed: true };
    if (sameEndpoints(current, wanted) && sameOwners(current.metadata?.ownerReferences, wanted.metadata?.ownerReferences)) return { object: current, changed: false };
    const replaced = await ctx.rest.replace(path, { ...wanted, metadata: { ...wanted.metadata, resourceVersion: current.metadata?.resourceVersion } });
    return { object: replaced, changed: true };
  }, [404]);
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

export function verifyService(prepared: Prepared, live: KubeObject, where: string): void {
  const { entry, recreate: { body } } = prepared;
  const key = serviceRefKey(entry);
  const planned = plannedIps(entry);
  if (!planned.every((ip) => clusterIpsOf(live).includes(ip))) {
    throw moveError(`Service ${key} holds ${clusterIpsOf(live).join(", ")} after its re-create, not the planned ${planned.join(", ")}; ${where} keeps the original`);
  }
  const differences = differingUserFields(body, live);
  if (differences.length > 0) {
    throw moveError(`Service ${key} at ${entry.toIP} differs from its original in ${differences.join(", ")}; ${where} keeps the original: compare, fix, and run again`);
  }
}

/**
 * A Service's bridged slices, and whether the endpointslice controller has written its own for the Service `uid`.
 * From the slice mirror when it shows the copies this run made (`copies`): a mirror that has not seen them yet
 * would report no bridge, and leave it.
 */
async function bridgeState(ctx: Context, target: BridgeTarget, copies: string[] = []): Promise<{ slicesPath: string; bridge: KubeObject[]; replaced: boolean }> {
  const slicesPath = await endpointSlicesPath(ctx, target.namespace);
  const mirrored = ctx.slices?.slicesOf(target.namespace, target.name);
  const caughtUp = mirrored !== undefined && copies.every((name) => mirrored.some((slice) => slice.metadata?.name === name));
  const slices = caughtUp ? mirrored : await ctx.rest.list(slicesPath, { labelSelector: `${SERVICE_NAME_LABEL}=${target.name}` });
  const bridge = slices.filter((slice) => slice.metadata?.labels?.[MANAGED_BY_LABEL] === BRIDGE_MANAGER);
  return { slicesPath, bridge, replaced: controllerSlicesOf(slices, target.uid).length > 0 };
}

async function deleteBridge(ctx: Context, slicesPath: string, bridge: KubeObject[]): Promise<void> {
  await Promise.all(bridge.map((slice) => retrying(() => ctx.rest.delete(`${slicesPath}/${encodeURIComponent(slice.metadata!.name!)}`, { preconditions: { uid: uidOf(slice) } }).catch((err) => { if (!isStatus(err, 404)) throw err; }))));
}

function targetOf(created: KubeObject): BridgeTarget {
  return { namespace: created.metadata!.namespace!, name: created.metadata!.name!, uid: uidOf(created)! };
}

/**
 * The DNS swap's bridge: removed once the endpointslice controller has written the new Service's own slices,
 * waited for; returns when those were first seen.
 */
async function removeDnsBridge(ctx: Context, entry: JournalEntry, created: KubeObject, where: string): Promise<number | undefined> {
  const key = serviceRefKey(entry);
  let state = await bridgeState(ctx, targetOf(created));
  if (state.bridge.length === 0) return undefined;
  const deadline = nowMs() + ctx.options.kubernetesServiceTimeoutMs;
  while (!state.replaced) {
    if (nowMs() > deadline) {
      throw moveError(`Service ${key}: the endpointslice controller wrote no EndpointSlice for it within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s, so the bridged copies of the stand-in's stay (label ${MANAGED_BY_LABEL}=${BRIDGE_MANAGER}); check kube-controller-manager and run again (${where} is kept until then)`);
    }
    await sleep(POLL_MS);
    state = await bridgeState(ctx, targetOf(created));
  }
  const seen = nowMs();
  await deleteBridge(ctx, state.slicesPath, state.bridge);
  return seen;
}

/** Bridged slices named `names` get the new Service `target` as owner, so that they go with it; best effort (their removal goes by label). */
export async function ownBridgeSlices(ctx: Context, slicesPath: string, names: string[], target: BridgeTarget): Promise<void> {
  const patch = { metadata: { ownerReferences: [bridgeOwner(target)] } };
  await Promise.all(names.map((name) =>
    ctx.rest.mergePatch(`${slicesPath}/${encodeURIComponent(name)}`, patch).catch((err: Error) => {
      ctx.warnings.push(`Service ${target.namespace}/${target.name}: its bridged EndpointSlice ${name} could not be given it as owner (${err.message.split("\n")[0]}); it is removed by its label all the same`);
    })));
}

/** A moved Service whose bridge is still up (its hand-over failed); `copies` are the bridge slices last seen. */
export interface PendingBridge extends BridgeTarget {
  copies: string[];
}

/**
 * Ends a moved Service's bridge (see endpointBridge.ts): the copies go if the controller's own slices exist, else
 * they are handed to the controller. Returns the Service if its copies are still up (a hand-over failed), for the
 * sweep.
 */
async function endBridge(ctx: Context, target: BridgeTarget, copies?: string[]): Promise<PendingBridge | undefined> {
  const state = await bridgeState(ctx, target, copies);
  if (state.bridge.length === 0) return undefined;
  if (state.replaced) {
    await deleteBridge(ctx, state.slicesPath, state.bridge);
    return undefined;
  }
  try {
    await Promise.all(state.bridge.map((slice) => ctx.rest.mergePatch(`${state.slicesPath}/${encodeURIComponent(slice.metadata!.name!)}`, handOverPatch(target))));
    return undefined;
  } catch {
    return { ...target, copies: state.bridge.map((slice) => slice.metadata!.name!) };
  }
}

/**
 * After the last move: bridges whose hand-over failed are tried again, for at most kubernetesServiceTimeoutMs. One
 * left after that is a warning, not a failure: the Service is moved and answers, through copies of its endpoints
 * that nothing keeps current.
 */
export async function sweepBridges(ctx: Context, pending: PendingBridge[]): Promise<void> {
  const deadline = nowMs() + ctx.options.kubernetesServiceTimeoutMs;
  let left = pending;
  while (left.length > 0) {
    if (nowMs() > deadline) {
      ctx.warnings.push(`${left.length} moved Service(s) still answer through copies of their old endpoints (EndpointSlices labelled ${MANAGED_BY_LABEL}=${BRIDGE_MANAGER}, e.g. ${left[0].namespace}/${left[0].name}) that could not be handed to the endpointslice controller within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s; check that kube-controller-manager runs, then delete those slices (it writes its own)`);
      return;
    }
    await sleep(POLL_MS * 4);
    left = (await Promise.all(left.map((target) => retrying(() => endBridge(ctx, target, target.copies))))).filter((t): t is PendingBridge => t !== undefined);
  }
}

/**
 * Phase 3: Endpoints settled, the endpoint bridge ended, dependents re-linked, everything verified; then its journal
 * entry may go. Returns the Service when its endpoint bridge is still up (its hand-over failed), for sweepBridges.
 */
export async function finishMove(ctx: Context, swapped: Swapped): Promise<PendingBridge | undefined> {
  const { entry } = swapped.prepared;
  const key = serviceRefKey(entry);
  const where = journalWhere(ctx, entry);
  if (entry.endpoints) await settleEndpoints(ctx, entry, swapped.uidMap);
  let bridgeLeft: PendingBridge | undefined;
  if (entry.vacate) {
    const seen = await removeDnsBridge(ctx, entry, swapped.created, where);
    if (seen !== undefined && swapped.createdAt !== undefined) swapped.result.controllerSliceMillis = round(seen - swapped.createdAt);
  } else if (!swapped.inPlace && bridgesOwnSlices(entry)) {
    // The copies made before the delete are the controller's to replace (endpointBridge.ts); what is looked for
    // here are ours: copies made after the create (when those before the delete failed), by this run or an
    // interrupted one. A failure here leaves the bridge to the sweep, which tries again: the Service itself is
    // moved and verified.
    bridgeLeft = await retrying(() => endBridge(ctx, targetOf(swapped.created), swapped.copies)).catch(() => ({ ...targetOf(swapped.created), copies: swapped.copies ?? [] }));
  }
  swapped.result.relinkedDependents = await relinkDependents(ctx, entry, swapped.uidMap);
  faultPoint("after-dependents-relink", key);
  if (entry.endpoints || entry.dependents.length > 0) {
    // Something was restored around it: look once more at the whole (the create's answer was verified already).
    const now = await ctx.rest.getOptional(paths.service(entry.namespace, entry.name));
    if (!now || uidOf(now) !== uidOf(swapped.created)) throw moveError(`Service ${key} was deleted or replaced by someone else right after its re-create; ${where} keeps the original`);
    verifyService(swapped.prepared, now, where);
  }
  if (entry.endpoints) {
    const endpoints = await ctx.rest.getOptional(paths.endpoints(entry.namespace, entry.name));
    if (!sameEndpoints(endpoints, entry.endpoints)) throw moveError(`Endpoints ${key} could not be restored as they were; ${where} keeps them`);
  }
  faultPoint("after-verify", key);
  return bridgeLeft;
}
