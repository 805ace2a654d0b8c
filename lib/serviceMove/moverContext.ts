import { EXIT_INVALID_INPUT } from "../config/errors";
import { DEFAULT_JOURNAL_NAMESPACE, JournaledDependent, JournalEntry } from "./journal";
import { ServiceRef, serviceRefKey } from "./serviceRef";
import { JournalStore } from "./journalStore";
import { isKubeApiError, isTransient, KubeObject, KubeRest } from "./kubeRest";
import { DEFAULT_DELETE_TIMEOUT_SECONDS, DEFAULT_STAND_IN_LINGER_MS, MoveResult, MoverOptions, ServiceMoveRequest, StandInRequest } from "./moveTypes";
import { sleep } from "../concurrency/sleep";
import type { SliceMirror } from "./sliceMirror";
import type { DeletionWatch } from "./deletionWatch";

/** What every part of a Service-move run shares: the resolved options, the run's context, decisions, lanes, and one-line failures. */

export const POLL_MS = 50;

export const SETTLE_POLL_MS = 100;

export const MAX_BACKOFF_MS = 25;

/** An allocation conflict lasting this long after the old object is gone is looked into. */
export const LEAK_SUSPICION_MS = 2000;

/** Lanes for the journal writes and removals, which delete nothing. */
export const WIDE_LANES = 16;

/** The mover's options with every default filled in: the one place the defaults live. */
export type ResolvedMoverOptions = Required<Omit<MoverOptions, "serviceCidr" | "log" | "adoptJournals">> & Pick<MoverOptions, "serviceCidr" | "log">;

export function withMoverDefaults(options: MoverOptions): ResolvedMoverOptions {
  return {
    parallelism: Math.max(1, Math.floor(options.parallelism)),
    allowLoadBalancerRecreate: options.allowLoadBalancerRecreate,
    bridgeOldIps: options.bridgeOldIps ?? false,
    routeNewIpsFirst: options.routeNewIpsFirst ?? false,
    routeAheadSettleMs: options.routeAheadSettleMs ?? 10_000,
    moveInPlace: options.moveInPlace ?? false,
    standInLingerMs: options.standInLingerMs ?? DEFAULT_STAND_IN_LINGER_MS,
    journalNamespace: options.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
    deleteTimeoutMs: options.deleteTimeoutMs ?? DEFAULT_DELETE_TIMEOUT_SECONDS * 1000,
    kubernetesServiceTimeoutMs: options.kubernetesServiceTimeoutMs ?? 60_000,
    allocationLeakTimeoutMs: options.allocationLeakTimeoutMs ?? 12 * 60_000,
    endpointsSettleMs: options.endpointsSettleMs ?? 1500,
    serviceCidr: options.serviceCidr,
    log: options.log,
  };
}

export interface Context {
  rest: KubeRest;
  options: ResolvedMoverOptions;
  journalNamespace: string;
  journal: JournalStore;
  warnings: string[];
  /** The discovery.k8s.io version EndpointSlices are served at, once asked (swap.ts endpointSlicesPath). */
  endpointSlicesVersion?: Promise<string>;
  /** From the first swap to the end of the bookkeeping: the slices a move reads, mirrored by a watch (sliceMirror.ts). */
  slices?: SliceMirror;
  /** From the first swap to the end of the bookkeeping: Service deletions as a watch reports them (deletionWatch.ts). */
  deletions?: DeletionWatch;
  /** The in-place moves' stand-ins, by the key of the Service each stands in for (inPlaceMove.ts). */
  hops?: Map<string, StandInRequest>;
  /** The cluster's DNS domain, read when some move goes in place (prepareStandIns): the stand-ins' names end in it. */
  clusterDomain?: string;
}

export type Decision =
  | { kind: "skip"; request: ServiceMoveRequest; result: MoveResult }
  | { kind: "move"; request: ServiceMoveRequest; live: KubeObject; previous?: JournalEntry }
  | { kind: "resume"; request: ServiceMoveRequest; entry: JournalEntry; live?: KubeObject };


export const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

export const round = (ms: number) => Math.round(ms * 100) / 100;

export function uidOf(object: KubeObject | undefined): string | undefined {
  return object?.metadata?.uid;
}

export function describeDependent(d: JournaledDependent): string {
  return `${d.object.kind} ${d.object.metadata?.namespace}/${d.object.metadata?.name}`;
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
export function failureLine(err: unknown, server: string, action: string): string {
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
export async function retrying<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isTransient(err) || attempt >= 5) throw err;
      await sleep(50 * attempt);
    }
  }
}

export function journalWhere(ctx: Context, ref: ServiceRef): string {
  return ctx.journal.where(serviceRefKey(ref));
}

/** Writes (or rewrites) the entry; it is durable once the apiserver answers (etcd has committed it). */
export function writeJournal(ctx: Context, entry: JournalEntry): Promise<void> {
  return ctx.journal.write(entry);
}

export interface ClusterView {
  services: Map<string, KubeObject>;
  /** ClusterIP → key of the Service holding it */
  ipHolders: Map<string, string>;
  journals: Map<string, JournalEntry>;
}
