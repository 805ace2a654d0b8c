import { parse as parseYaml } from "yaml";
import { familyOf } from "../net/cidr";
import { faultPoint } from "./faultHook";
import { isStatus, isTransient, KubeObject, paths } from "./kubeRest";
import { plannedIps, StandInRequest } from "./moveTypes";
import { clusterIpsOf, spec } from "./recreateBody";
import { serviceRefKey } from "./serviceRef";
import { buildStandInBody, STAND_IN_ANNOTATION } from "./standIn";
import { HOP_STAND_IN_LABEL, hopInBody, hopOutPatch, hopStandInName, hopStandInRequest, isHoppedOut, movesInPlace, pickStandInIps, standInHostName } from "./inPlace";
import { MANAGED_BY_LABEL } from "./dependents";
import { BRIDGE_COPY_LABEL, ownSliceCopies, SERVICE_NAME_LABEL, SLICE_CONTROLLER } from "./endpointBridge";
import { ClusterView, Context, Decision, journalWhere, moveError, nowMs, retrying, uidOf, WIDE_LANES } from "./moverContext";
import { journalNewerOriginal, originalBody, Prepared } from "./prepare";
import { withoutNewIpAhead } from "./newIpAhead";
import { relinkDependents } from "./finish";
import { inLanes } from "../concurrency/inLanes";
import { sleep } from "../concurrency/sleep";
import { allEndpointSlicesPath, endpointSlicesPath } from "./swap";

/** The in-place move's runtime (see inPlace.ts): its stand-ins before the swaps, the two writes, the stand-ins' removal. */

type MoveDecision = Extract<Decision, { kind: "move" }>;

const SLICES_WAIT_MS = 30_000;

/** The cluster's DNS domain, from kubeadm's kubelet-config (clusterDomain); cluster.local when it cannot be read. */
async function clusterDomainOf(ctx: Context): Promise<string> {
  // the path spelled out: `paths.configMap` calls `paths.configMaps`, which the provider's serialized closure lacks
  const config = await ctx.rest.getOptional("/api/v1/namespaces/kube-system/configmaps/kubelet-config").catch(() => undefined);
  const kubelet = (config?.data as Record<string, string> | undefined)?.kubelet;
  try {
    const domain = kubelet ? (parseYaml(kubelet) as { clusterDomain?: unknown })?.clusterDomain : undefined;
    if (typeof domain === "string" && domain !== "") return domain.replace(/\.$/, "");
  } catch {
    // an unreadable kubelet-config: the default below, said in the log
  }
  ctx.options.log?.("the cluster's DNS domain could not be read from ConfigMap kube-system/kubelet-config; the in-place moves' stand-ins are named under cluster.local");
  return "cluster.local";
}

/**
 * Before phase 1: a stand-in for every move that goes in place, each at a free address of the new range, then time
 * for the endpointslice controller to give them endpoints and for kube-proxy to program them. Stand-ins an
 * interrupted run made are used again. Returns them by the key of the Service they stand in for; none when the
 * run does not move in place. A failure removes what this call created and stops the run with nothing moved.
 */
export async function prepareStandIns(ctx: Context, view: ClusterView, decisions: Decision[]): Promise<Map<string, StandInRequest>> {
  const hops = new Map<string, StandInRequest>();
  const moves = decisions.filter((d): d is MoveDecision => d.kind === "move" && movesInPlace(d.live, d.request));
  if (!ctx.options.moveInPlace || moves.length === 0) return hops;
  if (!ctx.options.serviceCidr) throw moveError("moving Services in place needs the new Service range (serviceCidr) for the stand-ins; nothing was changed");
  ctx.clusterDomain = await clusterDomainOf(ctx);
  const taken = new Set([...view.ipHolders.keys(), ...decisions.flatMap((d) => plannedIps(d.request))]);
  const existing = moves.map((d) => view.services.get(serviceRefKey({ namespace: d.request.namespace, name: hopStandInName(d.request.name) })));
  const foreign = existing.find((s) => s && s.metadata?.labels?.[HOP_STAND_IN_LABEL] !== "true");
  if (foreign) throw moveError(`Service ${foreign.metadata?.namespace}/${foreign.metadata?.name} has the name an in-place move's stand-in needs and is not one; rename it, or set cidr-migration:services.moveInPlace to false; nothing was changed`);
  moves.forEach((d, i) => {
    if (existing[i]) hops.set(serviceRefKey(d.request), hopStandInRequest(d.request, clusterIpsOf(existing[i]!)[0]));
  });
  // each stand-in in its Service's family: a lookup during the hop must get the record type it asked for
  const missing = moves.filter((_, i) => !existing[i]);
  for (const family of new Set(missing.map((d) => familyOf(d.request.toIP)))) {
    const ofFamily = missing.filter((d) => familyOf(d.request.toIP) === family);
    const ips = pickStandInIps(ctx.options.serviceCidr, ofFamily[0].request.toIP, taken, ofFamily.length);
    if (!ips) throw moveError(`the new Service range ${ctx.options.serviceCidr} has no room for ${ofFamily.length} temporary stand-in Service(s) (${family}) beside the planned IPs; set cidr-migration:services.moveInPlace to false (the Services are then re-created) or plan a larger range; nothing was changed`);
    ofFamily.forEach((d, i) => hops.set(serviceRefKey(d.request), hopStandInRequest(d.request, ips[i])));
  }
  const created: StandInRequest[] = [];
  try {
    await inLanes(moves.filter((_, i) => !existing[i]), Math.max(ctx.options.parallelism, 8), async (d) => {
      const request = hops.get(serviceRefKey(d.request))!;
      const body = buildStandInBody(d.live, request, {
        labels: { [HOP_STAND_IN_LABEL]: "true" },
        // kube-proxy forwards the planned IP before DNS hands it out, as services.routeNewIpsFirst does for a re-create
        externalIPs: ctx.options.routeNewIpsFirst ? [d.request.toIP] : [],
      });
      await retrying(() => ctx.rest.create(paths.services(request.namespace), body).catch((err) => { if (!isStatus(err, 409)) throw err; return body; }));
      created.push(request);
    }, () => false);
  } catch (err) {
    await Promise.all(created.map((s) => ctx.rest.delete(paths.service(s.namespace, s.name)).catch(() => undefined)));
    throw moveError(`the temporary stand-in Services for the in-place moves could not be created (${(err as Error).message.split("\n")[0]}); nothing was moved; run again once that is fixed, or set cidr-migration:services.moveInPlace to false`);
  }
  for (const d of moves) faultPoint("after-hop-stand-ins", serviceRefKey(d.request));
  await copyEndpointsToStandIns(ctx, moves, hops);
  await waitForStandInEndpoints(ctx, moves, hops);
  ctx.options.log?.(`${hops.size} stand-in(s) for the in-place moves; giving kube-proxy ${Math.round(ctx.options.routeAheadSettleMs / 100) / 10} s before the first move`);
  await sleep(ctx.options.routeAheadSettleMs);
  return hops;
}

/**
 * Each Service's endpoints copied under its stand-in's name, born the endpointslice controller's (endpointBridge.ts
 * ownSliceCopies): it replaces them with its own when it gets to the stand-in, but at its default 20 writes a second
 * that took 19 s for 400 stand-ins (bench:services), which the moves would otherwise wait. Best effort: without a
 * copy the wait below waits for the controller.
 */
async function copyEndpointsToStandIns(ctx: Context, moves: MoveDecision[], hops: Map<string, StandInRequest>): Promise<void> {
  try {
    const slices = await ctx.rest.list(await allEndpointSlicesPath(ctx), { labelSelector: `${MANAGED_BY_LABEL}=${SLICE_CONTROLLER}` });
    const byOwner = new Map<string, KubeObject[]>();
    for (const slice of slices) {
      if (!Array.isArray(slice.endpoints) || slice.endpoints.length === 0) continue;
      for (const owner of slice.metadata?.ownerReferences ?? []) byOwner.set(owner.uid, [...(byOwner.get(owner.uid) ?? []), slice]);
    }
    await inLanes(moves, Math.max(ctx.options.parallelism, 8), async (d) => {
      const standIn = hops.get(serviceRefKey(d.request))!;
      const copies = ownSliceCopies(byOwner.get(uidOf(d.live)!) ?? [], standIn);
      const slicesPath = await endpointSlicesPath(ctx, standIn.namespace);
      await Promise.all(copies.map((copy) => ctx.rest.create(slicesPath, copy).catch((err) => { if (!isStatus(err, 409)) throw err; })));
    }, () => false);
  } catch (err) {
    ctx.warnings.push(`the in-place moves' stand-ins could not be given their Services' endpoints at once (${(err as Error).message.split("\n")[0]}); the moves wait for the endpointslice controller instead`);
  }
}

/** Until every stand-in whose Service has endpoints has some too (the endpointslice controller writes them); a warning after 30 s. */
async function waitForStandInEndpoints(ctx: Context, moves: MoveDecision[], hops: Map<string, StandInRequest>): Promise<void> {
  const deadline = nowMs() + SLICES_WAIT_MS;
  for (;;) {
    const slices = await ctx.rest.list(await allEndpointSlicesPath(ctx), { labelSelector: `${MANAGED_BY_LABEL}=${SLICE_CONTROLLER}` });
    const withEndpoints = new Set(slices.filter((s) => Array.isArray(s.endpoints) && s.endpoints.length > 0)
      .map((s) => `${s.metadata?.namespace}/${s.metadata?.labels?.[SERVICE_NAME_LABEL]}`));
    const waiting = moves.filter((d) => withEndpoints.has(serviceRefKey(d.request)) && !withEndpoints.has(serviceRefKey(hops.get(serviceRefKey(d.request))!)));
    if (waiting.length === 0) return;
    if (nowMs() > deadline) {
      ctx.warnings.push(`${waiting.length} stand-in(s) had no endpoints ${SLICES_WAIT_MS / 1000} s after their create (first: Service ${serviceRefKey(hops.get(serviceRefKey(waiting[0].request))!)}); a lookup during those Services' moves may get an address that does not answer yet: check kube-controller-manager`);
      return;
    }
    await sleep(250);
  }
}

/** A move done in place: the object (same uid) back at its planned IP, and how long it had no ClusterIP. */
export interface HopResult {
  created: KubeObject;
  gapMillis: number;
}

/**
 * The two writes of an in-place move, or only the second when an interrupted run made the first. Undefined when
 * the move does not go in place: no stand-in was planned for it, or the apiserver refused the ExternalName (an
 * admission policy): it is then re-created as before.
 */
export async function moveInPlace(ctx: Context, prepared: Prepared): Promise<HopResult | undefined> {
  const { entry } = prepared;
  const key = serviceRefKey(entry);
  const where = journalWhere(ctx, entry);
  let live = prepared.live;
  if (!live || uidOf(live) !== uidOf(entry.service)) return undefined;
  let hoppedAt = nowMs();
  if (!isHoppedOut(live, entry.toIP)) {
    const standIn = ctx.hops?.get(key);
    if (!standIn || live.metadata?.deletionTimestamp) return undefined;
    const hopped = await hopOut(ctx, prepared, standInHostName(standIn, ctx.clusterDomain ?? "cluster.local"));
    if (!hopped) return undefined;
    live = hopped;
    hoppedAt = nowMs();
    faultPoint("after-hop-out", key);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      const created = await retrying(() => ctx.rest.replace(paths.service(entry.namespace, entry.name), hopInBody(prepared.recreate.body, live!)));
      return { created, gapMillis: nowMs() - hoppedAt };
    } catch (err) {
      if (isStatus(err, 409) && attempt < 5) {
        live = await ctx.rest.get(paths.service(entry.namespace, entry.name));
        if (uidOf(live) !== uidOf(entry.service)) throw moveError(`Service ${key} was replaced by someone else while it moved in place; compare it with ${where} (the original), then delete that Secret`);
        if (!isHoppedOut(live, entry.toIP)) return { created: live, gapMillis: nowMs() - hoppedAt }; // our write went through, its answer was lost
        continue;
      }
      if (isTransient(err) || isStatus(err, 409)) throw err;
      return hopBack(ctx, prepared, live!, (err as Error).message.split("\n")[0]);
    }
  }
}

/** The first write, with the journaled resourceVersion: an edit made since is journaled first, then the write tried again. */
async function hopOut(ctx: Context, prepared: Prepared, hostName: string): Promise<KubeObject | undefined> {
  const { entry } = prepared;
  const path = paths.service(entry.namespace, entry.name);
  for (let attempt = 1; ; attempt++) {
    try {
      return await retrying(() => ctx.rest.mergePatch(path, hopOutPatch(entry.service.metadata?.resourceVersion, hostName, entry.toIP)));
    } catch (err) {
      if (isTransient(err) || (isStatus(err, 409) && attempt >= 5)) throw err;
      if (!isStatus(err, 409)) {
        ctx.warnings.push(`Service ${serviceRefKey(entry)}: kube-apiserver refused it as ExternalName for its in-place move (${(err as Error).message.split("\n")[0]}); it was re-created instead`);
        return undefined;
      }
      const current = await ctx.rest.getOptional(path);
      if (!current || uidOf(current) !== uidOf(entry.service) || current.metadata?.deletionTimestamp) return undefined; // the re-create path says what happened
      if (isHoppedOut(current, entry.toIP)) return current; // ours went through, its answer was lost
      await journalNewerOriginal(ctx, prepared, current);
    }
  }
}

/**
 * The apiserver refused the Service back at its planned IP for a reason other than timing: it goes back to what it
 * was, old IP included, its dependents' owner references with it, and the move fails with both reasons; the journal
 * stays if even that is refused.
 */
async function hopBack(ctx: Context, prepared: Prepared, live: KubeObject, reason: string): Promise<never> {
  const { entry } = prepared;
  const key = serviceRefKey(entry);
  const where = journalWhere(ctx, entry);
  try {
    await retrying(() => ctx.rest.replace(paths.service(entry.namespace, entry.name), hopInBody(originalBody(withoutNewIpAhead(entry.service)), live)));
  } catch (err) {
    throw moveError(`Service ${key}: kube-apiserver refused it at ${entry.toIP} (${reason}) and back at ${entry.fromIP} too (${(err as Error).message.split("\n")[0]}); it is an ExternalName Service naming its stand-in until then, so its name still answers; the original is kept in ${where}: fix the cause and run again`);
  }
  await relinkDependents(ctx, entry, new Map());
  await ctx.journal.remove([key]);
  throw moveError(`Service ${key}: kube-apiserver refused it at ${entry.toIP} (${reason}); it was put back as it was at ${entry.fromIP}, nothing lost: fix the cause and run again`);
}

/**
 * After the bookkeeping: the stand-ins go, once clients that resolved a name during its move (CoreDNS answered the
 * stand-in's address, cached for the record's TTL) have asked again. A stand-in whose Service is still between its
 * two writes (a failed move) stays: that Service's name resolves through it. A failure here only warns.
 */
export async function removeStandIns(ctx: Context, lastHopAt: number | undefined): Promise<void> {
  try {
    if ((await ctx.rest.list("/api/v1/services", { labelSelector: `${HOP_STAND_IN_LABEL}=true` })).length === 0) return;
    const wait = (lastHopAt ?? nowMs()) + ctx.options.standInLingerMs - nowMs();
    if (wait > 0) {
      ctx.options.log?.(`removing the in-place moves' stand-ins in ${Math.round(wait / 1000)} s, once DNS answers cached during the moves have expired`);
      await sleep(wait);
    }
    const services = await ctx.rest.list("/api/v1/services");
    const byKey = new Map(services.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
    const removable = services.filter((s) => s.metadata?.labels?.[HOP_STAND_IN_LABEL] === "true"
      && spec(byKey.get(s.metadata?.annotations?.[STAND_IN_ANNOTATION] ?? "") ?? {}).type !== "ExternalName");
    await inLanes(removable, WIDE_LANES, (standIn) => retrying(() => ctx.rest.delete(paths.service(standIn.metadata!.namespace!, standIn.metadata!.name!), { preconditions: { uid: uidOf(standIn) } })
      .then(() => undefined, (err) => { if (!isStatus(err, 404) && !isStatus(err, 409)) throw err; })), () => false);
    // copies of their Services' endpoints the controller had not replaced yet: owned by nobody, nothing else removes them
    const removed = new Set(removable.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`));
    const copies = (await ctx.rest.list(await allEndpointSlicesPath(ctx), { labelSelector: `${BRIDGE_COPY_LABEL}=true` }))
      .filter((slice) => removed.has(`${slice.metadata?.namespace}/${slice.metadata?.labels?.[SERVICE_NAME_LABEL]}`));
    await inLanes(copies, WIDE_LANES, async (copy) => {
      const path = `${await endpointSlicesPath(ctx, copy.metadata!.namespace!)}/${encodeURIComponent(copy.metadata!.name!)}`;
      await retrying(() => ctx.rest.delete(path).then(() => undefined, (err) => { if (!isStatus(err, 404)) throw err; }));
    }, () => false);
  } catch (err) {
    ctx.warnings.push(`the in-place moves' stand-ins could not be removed (${(err as Error).message.split("\n")[0]}); the next run removes them, or delete the Services labelled ${HOP_STAND_IN_LABEL}=true yourself`);
  }
}
