import { KubeConfig } from "@kubernetes/client-node";
import { hasSelector } from "./dependents";
import { findOwnedObjects } from "./dependentsScan";
import { faultPoint } from "./faultHook";
import { DEFAULT_JOURNAL_NAMESPACE, JournaledDependent } from "./journal";
import { serviceRefKey } from "./serviceRef";
import { JournalStore, loadJournal } from "./journalStore";
import { isStatus, KubeApiError, KubeObject, kubeRest, paths } from "./kubeRest";
import { plannedIps, KubernetesServiceRequest, KubernetesServiceResult, MoveReport, MoverOptions, ServiceMoveRequest, ServiceMoveSpec } from "./moveTypes";
import { spec } from "./recreateBody";
import { adaptiveLimit, inAdaptiveLanes } from "./adaptiveLanes";
import { decide, readCluster, validateSpec } from "./decide";
import { PendingBridge, finishMove, sweepBridges } from "./finish";
import { moveKubernetesService } from "./kubernetesServiceMove";
import { ClusterView, Context, Decision, WIDE_LANES, failureLine, moveError, nowMs, retrying, round, uidOf, withMoverDefaults } from "./moverContext";
import { inLanes } from "../concurrency/inLanes";
import { Prepared, abandon, detachMove, journalEntryFor, preparedMove } from "./prepare";
import { ensureStandIn } from "./standInMove";
import { Swapped, allEndpointSlicesPath, swapMove, waitGone } from "./swap";
import { mirrorSlices } from "./sliceMirror";
import { watchDeletions } from "./deletionWatch";
import { bridgesOwnSlices } from "./endpointBridge";
import { AHEAD_ANNOTATION, removeNewIpsAhead, routeNewIpsAhead } from "./newIpAhead";
import { sleep } from "../concurrency/sleep";
import { prepareStandIns, removeStandIns } from "./inPlaceMove";

/**
 * The Service mover: re-creates Services at their planned ClusterIPs and loses nothing on the way. With
 * services.moveInPlace, ClusterIP Services with a selector move in place instead (inPlace.ts): the same phases,
 * with their stand-ins made before phase 1 and removed after phase 3, and two writes in place of the swap.
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
 * Each phase is one file: decide.ts (read-only, before phase 1), prepare.ts (1), swap.ts (2) and finish.ts (3);
 * default/kubernetes is kubernetesServiceMove.ts, stand-ins standInMove.ts, and what they share moverContext.ts.
 * This file is the run: it calls them in order over all the moves.
 * default/kubernetes (re-created by the apiserver itself, which takes up to its 10 s loop) runs alongside, outside
 * the bound, because it only waits.
 */

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

type MoveDecision = Extract<Decision, { kind: "move" }>;

/** What the three phases share: the report they fill, the failures that stop them, and the dependents found. */
interface Run {
  ctx: Context;
  report: MoveReport;
  failures: string[];
  /** default/kubernetes: the apiserver re-creates it, so it only waits, alongside the phases. */
  kubernetes: Promise<KubernetesServiceResult | undefined>;
  endpointsOf: Map<string, KubeObject>;
  ownedBy: Map<string, JournaledDependent[]>;
  /** Bookkeeping (journal writes and removals) runs wider than the moves: it deletes nothing. */
  wide: number;
}

function failWith(run: Run, key: string): (err: unknown) => void {
  return (err) => { run.failures.push(failureLine(err, run.ctx.rest.server, `moving Service ${key}`)); };
}

/** Hand-made Endpoints and the objects owned by each moving Service (or its Endpoints), read once for all moves. */
async function findDependents(ctx: Context, toMove: MoveDecision[]): Promise<Pick<Run, "endpointsOf" | "ownedBy">> {
  const endpointsOf = new Map<string, KubeObject>();
  if (toMove.length === 0) return { endpointsOf, ownedBy: new Map() };
  await inLanes(toMove.filter((d) => !hasSelector(d.live)), ctx.options.parallelism * 2, async (d) => {
    const endpoints = await ctx.rest.getOptional(paths.endpoints(d.request.namespace, d.request.name));
    if (endpoints) endpointsOf.set(serviceRefKey(d.request), endpoints);
  }, () => false);
  const owners = new Set<string>();
  for (const d of toMove) {
    owners.add(uidOf(d.live)!);
    const endpoints = endpointsOf.get(serviceRefKey(d.request));
    if (endpoints) owners.add(uidOf(endpoints)!);
  }
  const scan = await findOwnedObjects(ctx.rest, new Set(toMove.map((d) => d.request.namespace)), owners);
  ctx.warnings.push(...scan.warnings);
  return { endpointsOf, ownedBy: scan.byOwner };
}

/**
 * Phase 1: every move journaled, in packs, before the first delete; then its dependents detached. If anything
 * fails here, phase 1 is undone and the run stops with no Service deleted.
 */
async function journalPhase(run: Run, work: Array<Exclude<Decision, { kind: "skip" }>>): Promise<Prepared[]> {
  const { ctx, failures } = run;
  const prepared: Prepared[] = [];
  const fresh = work.filter((d): d is MoveDecision => d.kind === "move");
  try {
    const entries = fresh.map((d) => journalEntryFor(d, run.ownedBy, run.endpointsOf));
    for (const d of fresh) faultPoint("before-journal", serviceRefKey(d.request));
    await ctx.journal.writeAll(entries);
    for (const d of fresh) faultPoint("after-journal", serviceRefKey(d.request));
    await inLanes(fresh.map((d, i) => ({ d, entry: entries[i] })), run.wide, async ({ d, entry }) => {
      try {
        prepared.push(await detachMove(ctx, d.request, entry));
      } catch (err) {
        failWith(run, serviceRefKey(d.request))(err);
      }
    }, () => failures.length > 0);
  } catch (err) {
    failures.push(failureLine(err, ctx.rest.server, "journaling the Service moves"));
  }
  for (const d of work) {
    if (d.kind !== "resume") continue;
    // its re-create body is built here: a journaled original it cannot be built from stops the run before any delete
    try {
      prepared.push(preparedMove(ctx, d.request, d.entry, d.live, "completed-from-journal"));
    } catch (err) {
      failWith(run, serviceRefKey(d.request))(err);
    }
  }
  if (failures.length === 0) return prepared;
  const undone = await Promise.all(fresh.map((d) => {
    const entry = ctx.journal.entries.get(serviceRefKey(d.request));
    return entry ? abandon(ctx, { entry, outcome: "moved" }).catch((err) => { failWith(run, serviceRefKey(d.request))(err); return false; }) : false;
  }));
  await ctx.journal.remove(fresh.filter((_, i) => undone[i]).map((d) => serviceRefKey(d.request))).catch((err) => { failures.push(failureLine(err, ctx.rest.server, "removing journal entries")); });
  await run.kubernetes;
  throw moveError([...failures, "no Service was deleted; run again once the above is fixed"].join("\n"));
}

interface SwapPhase {
  /** Swapped moves whose bookkeeping waits for phase 3. */
  swapped: Swapped[];
  /** Moves with hand-made Endpoints: their settle started at once, beside the other swaps. */
  settling: Promise<void>[];
  started: Set<Prepared>;
  /** Keys of moves finished (their journal entries may go). */
  finished: string[];
  /** Moved Services still answering through their endpoint bridge, for the sweep after the last move. */
  bridgesLeft: PendingBridge[];
}

function finishInto(run: Run, phase: SwapPhase): (s: Swapped) => Promise<void> {
  return (s) => finishMove(run.ctx, s).then((bridgeLeft) => {
    if (bridgeLeft) phase.bridgesLeft.push(bridgeLeft);
    phase.finished.push(serviceRefKey(s.prepared.request));
  }, failWith(run, serviceRefKey(s.prepared.request)));
}

/**
 * Phase 2: the swaps, `parallelism` at a time (adapting to the gaps measured) and nothing else in flight but the
 * Endpoints settles. Selector-less Services go first: their settle then overlaps the other swaps.
 */
async function swapPhase(run: Run, prepared: Prepared[]): Promise<SwapPhase> {
  const { ctx, report } = run;
  const phase: SwapPhase = { swapped: [], settling: [], started: new Set(), finished: [], bridgesLeft: [] };
  prepared.sort((a, b) => Number(a.entry.endpoints === undefined) - Number(b.entry.endpoints === undefined));
  const lanes = adaptiveLimit(ctx.options.parallelism);
  await inAdaptiveLanes(prepared, lanes, async (p) => {
    phase.started.add(p);
    const cutsAtStart = lanes.cuts();
    try {
      const s = await swapMove(ctx, p);
      report.results.push(s.result);
      if (s.result.gapMillis !== undefined) lanes.record(s.result.gapMillis, cutsAtStart);
      report.swapLanes = lanes.range();
      // the settle is mostly waiting: it starts at once and holds no lane
      if (p.entry.endpoints) phase.settling.push(finishInto(run, phase)(s));
      else phase.swapped.push(s);
    } catch (err) {
      failWith(run, serviceRefKey(p.request))(err);
    }
  }, () => run.failures.length > 0);
  return phase;
}

/**
 * The slices that swaps copy and bookkeeping looks for, mirrored for phases 2 and 3 when some move has endpoints to
 * bridge (see sliceMirror.ts); without the mirror each move reads its own.
 */
async function mirrorSlicesForBridges(ctx: Context, prepared: Prepared[]): Promise<void> {
  // in place, a Service keeps its own slices: nothing to bridge
  if (!prepared.some((p) => bridgesOwnSlices(p.entry) && !ctx.hops?.has(serviceRefKey(p.request)))) return;
  try {
    ctx.slices = await mirrorSlices(ctx.rest, await allEndpointSlicesPath(ctx));
  } catch (err) {
    ctx.options.log?.(`EndpointSlices could not be watched (${(err as Error).message.split("\n")[0]}); each move reads its Service's own`);
  }
}

/** The deletion watch for phase 2's re-creates (deletionWatch.ts); without it each waits for its delete's answer. */
async function watchDeletionsForSwaps(ctx: Context, prepared: Prepared[]): Promise<void> {
  if (!prepared.some((p) => !ctx.hops?.has(serviceRefKey(p.request)))) return;
  try {
    ctx.deletions = await watchDeletions(ctx.rest);
  } catch (err) {
    ctx.options.log?.(`Service deletions could not be watched (${(err as Error).message.split("\n")[0]}); each re-create waits for its delete's answer`);
  }
}

/**
 * Phase 3, bookkeeping: re-link, verify; undo phase 1 for moves never started; then the journal entries go, one
 * write per journal Secret. Returns how many moves were never started.
 */
async function finishPhase(run: Run, prepared: Prepared[], phase: SwapPhase): Promise<number> {
  const { ctx } = run;
  await inLanes(phase.swapped, run.wide, finishInto(run, phase), () => false);
  await Promise.all(phase.settling);
  await sweepBridges(ctx, phase.bridgesLeft).catch((err) => {
    ctx.warnings.push(`${failureLine(err, ctx.rest.server, "removing the endpoint bridges")}; the moved Services answer, some through copies of their old EndpointSlices (label endpointslice.kubernetes.io/managed-by=cidr-migration.io): check that kube-controller-manager runs, then delete those (it writes its own)`);
  });
  const notStarted = prepared.filter((p) => !phase.started.has(p));
  const undone = await Promise.all(notStarted.map((p) => abandon(ctx, p).catch((err) => { failWith(run, serviceRefKey(p.request))(err); return false; })));
  const removable = [...phase.finished, ...notStarted.filter((_, i) => undone[i]).map((p) => serviceRefKey(p.request))];
  await ctx.journal.remove(removable).catch((err) => { run.failures.push(failureLine(err, ctx.rest.server, "removing journal entries of finished moves")); });
  for (const key of phase.finished) faultPoint("after-journal-remove", key);
  run.report.kubernetesService = await run.kubernetes;
  return notStarted.length;
}

/** Everything read-only before phase 1: the cluster and journals read, each move decided, the new range probed. */
async function startRun(ctx: Context, moveSpec: ServiceMoveSpec, options: MoverOptions): Promise<{ run: Run; view: ClusterView; work: Array<Exclude<Decision, { kind: "skip" }>> }> {
  let view: ClusterView;
  try {
    ctx.journal = await loadJournal(ctx.rest, ctx.journalNamespace);
    await removeProbes(ctx);
    view = await readCluster(ctx);
  } catch (err) {
    throw moveError(failureLine(err, ctx.rest.server, "reading Services and journals"));
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
  const dependents = await findDependents(ctx, decisions.filter((d): d is MoveDecision => d.kind === "move"));
  const failures: string[] = [];
  const kubernetesRequest = moveSpec.kubernetesService ?? adoptedKubernetesJournal(view, options.adoptJournals === true);
  const kubernetes = kubernetesRequest
    ? moveKubernetesService(ctx, view, kubernetesRequest).catch((err) => {
      failures.push(failureLine(err, ctx.rest.server, "moving Service default/kubernetes"));
      return undefined;
    })
    : Promise.resolve(undefined);
  for (const d of decisions) if (d.kind === "skip") report.results.push(d.result);
  const run: Run = { ctx, report, failures, kubernetes, ...dependents, wide: Math.max(ctx.options.parallelism, WIDE_LANES) };
  return { run, view, work: decisions.filter((d): d is Exclude<Decision, { kind: "skip" }> => d.kind !== "skip") };
}

/**
 * Before phase 1 (config services.routeNewIpsFirst): every Service about to move also answers at its planned IP,
 * as an externalIP, and kube-proxy gets `routeAheadSettleMs` to program those before the first swap (see
 * newIpAhead.ts). Each decision then holds the Service as patched, which is what phase 1 journals. Not for the final
 * DNS swap: its stand-in holds the final IP already.
 */
async function routeAhead(run: Run, work: Array<Exclude<Decision, { kind: "skip" }>>): Promise<void> {
  const { ctx } = run;
  // an in-place move's stand-in answers at its planned IP already
  const moves = work.filter((d): d is MoveDecision => d.kind === "move" && !d.request.vacate && !ctx.hops?.has(serviceRefKey(d.request)));
  if (!ctx.options.routeNewIpsFirst || moves.length === 0) return;
  try {
    // patches only, nothing deleted yet: as wide as the bookkeeping
    const routed = await routeNewIpsAhead(ctx.rest, moves.map((d) => ({ live: d.live, toIPs: plannedIps(d.request) })), run.wide);
    moves.forEach((d, i) => { d.live = routed[i]; });
  } catch (err) {
    await sweepAhead(ctx);
    throw moveError(`${failureLine(err, ctx.rest.server, "routing the planned ClusterIPs first (services.routeNewIpsFirst)")}; no Service was deleted; run again once the above is fixed`);
  }
  for (const d of moves) faultPoint("after-route-ahead", serviceRefKey(d.request));
  ctx.options.log?.(`${moves.length} planned ClusterIP(s) routed first; giving kube-proxy ${Math.round(ctx.options.routeAheadSettleMs / 100) / 10} s before the first swap`);
  await sleep(ctx.options.routeAheadSettleMs);
}

/** What is still routed first after the run (moves that failed, were undone or never started) goes; a failure here only warns. */
async function sweepAhead(ctx: Context): Promise<void> {
  if (!ctx.options.routeNewIpsFirst) return;
  await removeNewIpsAhead(ctx.rest).catch((err) => {
    ctx.warnings.push(`${failureLine(err, ctx.rest.server, "removing the planned ClusterIPs routed first")}; Services still holding one carry the annotation ${AHEAD_ANNOTATION}: the next run removes them, or remove that externalIP and the annotation yourself`);
  });
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
    const { run, view, work } = await startRun(ctx, moveSpec, options);
    ctx.hops = await prepareStandIns(ctx, view, work).catch(async (err) => {
      await run.kubernetes;
      throw err;
    });
    await routeAhead(run, work);
    const journalStart = nowMs();
    const prepared = await journalPhase(run, work).catch(async (err) => {
      await sweepAhead(ctx);
      throw err;
    });
    const swapStart = nowMs();
    await mirrorSlicesForBridges(ctx, prepared);
    await watchDeletionsForSwaps(ctx, prepared);
    const phase = await swapPhase(run, prepared);
    const finishStart = nowMs();
    const notStarted = await finishPhase(run, prepared, phase);
    await sweepAhead(ctx);
    // also without moveInPlace: what an interrupted in-place run left goes once its moves are finished
    await removeStandIns(ctx, nowMs());
    const { report, failures } = run;
    report.timings = {
      preflightMillis: round(journalStart - started0),
      journalMillis: round(swapStart - journalStart),
      swapMillis: round(finishStart - swapStart),
      finishMillis: round(nowMs() - finishStart),
    };
    if (ctx.deletions) report.createdAheadOfDeleteAnswer = ctx.deletions.ahead;
    if (failures.length > 0) {
      throw moveError([...failures, ...(notStarted > 0 ? [`${notStarted} other Service move(s) were not started (nothing of them changed); run again once the above is fixed`] : [])].join("\n"));
    }
    report.results.sort((a, b) => serviceRefKey(a).localeCompare(serviceRefKey(b)));
    report.totalMillis = round(nowMs() - started0);
    return report;
  } finally {
    ctx.slices?.stop();
    ctx.deletions?.stop();
    rest.close();
  }
}
