import * as pulumi from "@pulumi/pulumi";
import { createHash } from "crypto";
import { runServiceMoves } from "../lib/serviceMove/serviceMover";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { waitForServiceWatchers, WatchersWait } from "../lib/serviceMove/serviceWatchers";
import { KubeConfig } from "@kubernetes/client-node";
import { isIpAddress } from "../lib/net/cidr";
import { inRangeList, isRangeList, rangeForFamilyOf } from "../lib/net/rangeList";
import { DEFAULT_JOURNAL_NAMESPACE } from "../lib/serviceMove/journal";
import { DEFAULT_SERVICE_PARALLELISM } from "../lib/config/migrationConfig";
import { parseServiceRefKey, serviceRefKey } from "../lib/serviceMove/serviceRef";
import { containsUnknown, kubeConfigFrom, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";
import {
  DEFAULT_DELETE_TIMEOUT_SECONDS, FamilyMove, KubernetesServiceRequest, KubernetesServiceResult, MoveResult, ServiceMoveRequest, StandInRequest,
} from "../lib/serviceMove/moveTypes";

/**
 * Service moves into the new range as a dynamic resource: journaled, parallel up to a bound, idempotent.
 * The work itself is lib/serviceMove/serviceMover.ts; this file is the Pulumi face of it.
 *
 * Granularity: one resource for a whole set of moves (the bulk phase; the DNS stand-in and the final DNS swap
 * are two more, see components/dnsContinuity.ts), not one resource per Service, because:
 * - the configured bound (services.parallelism) must hold exactly; Pulumi's own --parallel is a CLI flag that
 *   applies to the whole graph, and a per-Service resource cannot see its siblings;
 * - every move is checked against the live cluster before the first delete (expected old IP, planned IP free,
 *   LoadBalancer consent): with per-Service resources the engine would start deleting the first Services while
 *   later ones have not been checked yet;
 * - the dependents scan (every kind, once) and the journal listing are done once, not 500 times.
 * Reviewers still see each Service: `moves` is a map keyed "namespace/name" holding { fromIP, toIP, type }, so
 * `pulumi preview` prints one line per Service with its old IP and its planned IP, and on an update the engine's
 * property diff names each Service whose planned IP changed (moves["ns/name"].toIP: old => new). The Node
 * dynamic-provider host in @pulumi/pulumi 3.248 passes no detailedDiff from a provider (its DiffResult has none),
 * so the per-Service diff comes from the shape of the inputs, which is what the engine diffs.
 *
 * The provider is serialized into the state and run by the engine's dynamic-provider host: it captures no live
 * object, builds its kube client from the kubeconfig input inside each method, and check/diff never talk to the
 * cluster (they run during preview) and accept unknown values. The kubeconfig is a secret input and never part of
 * the outputs. Delete is a no-op: the moved Services stay where they are, and this resource only records moves.
 */

export const SERVICE_RECREATION_PROVIDER_VERSION = "1";

export interface ServiceMoveEntry {
  fromIP: string;
  toIP: string;
  /** The type discovery saw; "LoadBalancer" needs allowLoadBalancerRecreate. */
  type?: string;
  /** "namespace/name" of a Service holding toIP that goes just before the create (the DNS stand-in). */
  vacate?: string;
  /** A dual-stack Service's second ClusterIP and its planned address (issue 17). */
  otherFamily?: FamilyMove;
}

export interface ServiceRecreationArgs {
  /** The kubeconfig's content (not a path); stored only as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** The Services to move, keyed "namespace/name". May be empty (a stand-in-only resource). */
  moves: pulumi.Input<Record<string, pulumi.Input<ServiceMoveEntry>>>;
  /** default/kubernetes: the apiserver re-creates it at the new first IP once deleted. Omit to leave it. */
  kubernetesService?: pulumi.Input<KubernetesServiceRequest>;
  /** Temporary Services copying another's selector and ports at a given IP (the DNS stand-in), keyed "namespace/name". */
  standIns?: pulumi.Input<Record<string, pulumi.Input<{ of: string; ip: string }>>>;
  /** Moves in flight at once (config services.parallelism). Default the config's, DEFAULT_SERVICE_PARALLELISM. */
  parallelism?: pulumi.Input<number>;
  /** Consent to re-create LoadBalancer Services (config services.allowLoadBalancerRecreate). Default false. */
  allowLoadBalancerRecreate?: pulumi.Input<boolean>;
  /** Keep each moved Service at its old ClusterIP too, as an externalIP (config services.bridgeOldIps). Left out when false. */
  bridgeOldIps?: pulumi.Input<boolean>;
  /** Route each planned ClusterIP to its Service's endpoints first, as an externalIP (config services.routeNewIpsFirst). Left out when false. */
  routeNewIpsFirst?: pulumi.Input<boolean>;
  /** Seconds kube-proxy gets to program the addresses routed first, before the first swap. Default 10. */
  routeAheadSettleSeconds?: pulumi.Input<number>;
  /** Move single-stack ClusterIP Services with a selector in place, through a stand-in (config services.moveInPlace). Left out when false. */
  moveInPlace?: pulumi.Input<boolean>;
  /** Seconds the in-place moves' stand-ins stay after the last move. Default DEFAULT_STAND_IN_LINGER_MS. */
  standInLingerSeconds?: pulumi.Input<number>;
  /** The apiserver's Service watches before the control plane restarted (preflight's count): the moves wait for them. */
  serviceWatchersBefore?: pulumi.Input<number | undefined>;
  /** The new Service range: Services already inside it are left alone, and every toIP must lie in it. */
  serviceCidr?: pulumi.Input<string>;
  /** Namespace of the journal Secrets. Default kube-system. */
  journalNamespace?: pulumi.Input<string>;
  /** Finish interrupted moves found in the journal that `moves` no longer lists. Default true (the bulk phase). */
  adoptJournals?: pulumi.Input<boolean>;
  /** Seconds an old object may linger (finalizers) after its delete before the move stops. Default DEFAULT_DELETE_TIMEOUT_SECONDS. */
  deleteTimeoutSeconds?: pulumi.Input<number>;
  /** Provider behaviour version recorded in the state. Default SERVICE_RECREATION_PROVIDER_VERSION. */
  version?: pulumi.Input<string>;
}

interface StandInEntry {
  of: string;
  ip: string;
}

/** The inputs once checked, with the defaults applied. */
interface RecreationInputs {
  kubeconfig: string;
  moves: Record<string, ServiceMoveEntry>;
  kubernetesService?: KubernetesServiceRequest;
  standIns: Record<string, StandInEntry>;
  parallelism: number;
  allowLoadBalancerRecreate: boolean;
  bridgeOldIps?: boolean;
  routeNewIpsFirst?: boolean;
  routeAheadSettleSeconds?: number;
  moveInPlace?: boolean;
  standInLingerSeconds?: number;
  serviceWatchersBefore?: number;
  serviceCidr?: string;
  journalNamespace: string;
  adoptJournals: boolean;
  deleteTimeoutSeconds: number;
  version: string;
}

/** What the state holds: the inputs (no kubeconfig) and what each move did. */
export interface ServiceRecreationOutputs extends Omit<RecreationInputs, "kubeconfig"> {
  /** Keyed "namespace/name": outcome, IP now held, gap in milliseconds. */
  results: Record<string, MoveResult>;
  kubernetesServiceResult?: KubernetesServiceResult;
  standInResults: Record<string, { ip: string; outcome: string }>;
  /** Median and largest per-Service gap of this run, in milliseconds (0 when nothing moved). */
  gapP50Millis: number;
  gapMaxMillis: number;
  warnings: string[];
  /** how long the moves waited for the apiserver's Service watches to come back (serviceWatchersBefore) */
  watchersWaitMillis?: number;
  totalMillis: number;
}

type Inputs = Wire<RecreationInputs>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function checkInputs(news: Inputs): { inputs: Inputs; failures: pulumi.dynamic.CheckFailure[] } {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const fail = (property: string, reason: string) => { failures.push({ property, reason }); };
  const inputs: Inputs = { ...news };
  const defaults: Partial<RecreationInputs> = {
    parallelism: DEFAULT_SERVICE_PARALLELISM, allowLoadBalancerRecreate: false, journalNamespace: DEFAULT_JOURNAL_NAMESPACE,
    adoptJournals: true, deleteTimeoutSeconds: DEFAULT_DELETE_TIMEOUT_SECONDS, version: SERVICE_RECREATION_PROVIDER_VERSION, standIns: {},
  };
  for (const [key, value] of Object.entries(defaults) as Array<[keyof RecreationInputs, unknown]>) if (news[key] === undefined) inputs[key] = value;

  if (news.kubeconfig === undefined) fail("kubeconfig", "kubeconfig is required: the kubeconfig's content, as a secret");
  else if (!containsUnknown(news.kubeconfig) && (typeof news.kubeconfig !== "string" || news.kubeconfig.trim() === "")) {
    fail("kubeconfig", "kubeconfig must be the kubeconfig file's content (a non-empty string), not a path");
  }
  const parallelism = inputs.parallelism;
  if (!containsUnknown(parallelism) && (typeof parallelism !== "number" || !Number.isInteger(parallelism) || parallelism < 1)) {
    fail("parallelism", `parallelism (cidr-migration:services.parallelism) must be a whole number of at least 1; got ${JSON.stringify(parallelism)}`);
  }
  const timeout = inputs.deleteTimeoutSeconds;
  if (!containsUnknown(timeout) && (typeof timeout !== "number" || !(timeout > 0))) {
    fail("deleteTimeoutSeconds", `deleteTimeoutSeconds must be a positive number of seconds; got ${JSON.stringify(timeout)}`);
  }
  for (const key of ["routeAheadSettleSeconds", "standInLingerSeconds"] as const) {
    const seconds = inputs[key];
    if (seconds !== undefined && !containsUnknown(seconds) && (typeof seconds !== "number" || !(seconds >= 0))) {
      fail(key, `${key} must be a number of seconds, 0 or more; got ${JSON.stringify(seconds)}`);
    }
  }
  for (const key of ["allowLoadBalancerRecreate", "adoptJournals", "bridgeOldIps", "routeNewIpsFirst", "moveInPlace"] as const) {
    if ((key === "bridgeOldIps" || key === "routeNewIpsFirst" || key === "moveInPlace") && inputs[key] === undefined) continue;
    if (!containsUnknown(inputs[key]) && typeof inputs[key] !== "boolean") fail(key, `${key} must be true or false; got ${JSON.stringify(inputs[key])}`);
  }
  const watchers = news.serviceWatchersBefore;
  if (watchers !== undefined && !containsUnknown(watchers) && (typeof watchers !== "number" || !Number.isInteger(watchers) || watchers < 0)) {
    fail("serviceWatchersBefore", `serviceWatchersBefore must be a count of watches (a whole number, 0 or more); got ${JSON.stringify(watchers)}`);
  }
  const serviceCidr = containsUnknown(news.serviceCidr) ? undefined : news.serviceCidr;
  if (serviceCidr !== undefined && !isRangeList(serviceCidr)) {
    fail("serviceCidr", `serviceCidr must be the new Service range in CIDR notation, e.g. "10.100.0.0/16", or a dual-stack pair "10.100.0.0/16,fd00:10:100::/112"; got ${JSON.stringify(serviceCidr)}`);
  }
  const ranges = isRangeList(serviceCidr) ? serviceCidr : undefined;
  const ipProblem = (ip: unknown, what: string): string | undefined => {
    if (containsUnknown(ip)) return undefined;
    if (!isIpAddress(ip)) return `${what} must be an IP address; got ${JSON.stringify(ip)}`;
    return undefined;
  };

  const moves = news.moves;
  if (moves === undefined) fail("moves", "moves is required: the Services to move, keyed \"namespace/name\" (it may be empty)");
  else if (!containsUnknown(moves) || isRecord(moves)) {
    if (!isRecord(moves)) {
      fail("moves", `moves must be a map of "namespace/name" to { fromIP, toIP }; got ${JSON.stringify(moves)}`);
    } else {
      const planned = new Map<string, string>();
      for (const [key, entry] of Object.entries(moves)) {
        const property = `moves["${key}"]`;
        if (!parseServiceRefKey(key)) { fail(property, `"${key}" is not a Service key; use "namespace/name"`); continue; }
        if (containsUnknown(entry) && !isRecord(entry)) continue;
        if (!isRecord(entry)) { fail(property, `Service ${key}: the move must be { fromIP, toIP }; got ${JSON.stringify(entry)}`); continue; }
        for (const field of ["fromIP", "toIP"]) {
          const problem = ipProblem(entry[field], `Service ${key}: ${field}`);
          if (problem) fail(property, problem);
        }
        // a dual-stack Service's second family moves with it
        const otherFamily = entry.otherFamily;
        if (otherFamily !== undefined && !containsUnknown(otherFamily)) {
          if (!isRecord(otherFamily)) fail(property, `Service ${key}: otherFamily must be { fromIP, toIP }; got ${JSON.stringify(otherFamily)}`);
          else for (const field of ["fromIP", "toIP"]) {
            const problem = ipProblem(otherFamily[field], `Service ${key}: otherFamily.${field}`);
            if (problem) fail(property, problem);
          }
        }
        const targets = [["toIP", entry.toIP], ["otherFamily.toIP", isRecord(otherFamily) ? otherFamily.toIP : undefined]].filter((t): t is [string, string] => isIpAddress(t[1]));
        for (const [field, toIP] of targets) {
          if (ranges && !inRangeList(ranges, toIP)) fail(property, `Service ${key}: ${field} ${toIP} is outside the new range ${rangeForFamilyOf(ranges, toIP) ?? ranges}`);
          const other = planned.get(toIP);
          if (other) fail(property, `Services ${other} and ${key} are both planned at ${toIP}; each needs its own IP`);
          planned.set(toIP, key);
        }
        if (entry.type === "LoadBalancer" && inputs.allowLoadBalancerRecreate !== true && !containsUnknown(inputs.allowLoadBalancerRecreate)) {
          fail(property, `Service ${key} is a LoadBalancer: re-creating it can give its cloud load balancer a new external address; set cidr-migration:services.allowLoadBalancerRecreate to true to consent, or leave it out`);
        }
        if (entry.vacate !== undefined && !containsUnknown(entry.vacate) && (typeof entry.vacate !== "string" || !parseServiceRefKey(entry.vacate))) {
          fail(property, `Service ${key}: vacate must be a "namespace/name"; got ${JSON.stringify(entry.vacate)}`);
        }
      }
    }
  }
  const kubernetes = news.kubernetesService;
  if (kubernetes !== undefined && !containsUnknown(kubernetes)) {
    if (!isRecord(kubernetes)) fail("kubernetesService", `kubernetesService must be { fromIP, toIP }; got ${JSON.stringify(kubernetes)}`);
    else for (const field of ["fromIP", "toIP"]) {
      const problem = ipProblem(kubernetes[field], `kubernetesService.${field}`);
      if (problem) fail("kubernetesService", problem);
    }
  }
  const standIns = inputs.standIns;
  if (!containsUnknown(standIns)) {
    if (!isRecord(standIns)) fail("standIns", `standIns must be a map of "namespace/name" to { of, ip }; got ${JSON.stringify(standIns)}`);
    else for (const [key, entry] of Object.entries(standIns)) {
      const property = `standIns["${key}"]`;
      if (!parseServiceRefKey(key)) { fail(property, `"${key}" is not a Service key; use "namespace/name"`); continue; }
      if (containsUnknown(entry)) continue;
      if (!isRecord(entry) || typeof entry.of !== "string" || !parseServiceRefKey(entry.of)) { fail(property, `stand-in ${key}: of must be the "namespace/name" of the Service it stands in for`); continue; }
      const problem = ipProblem(entry.ip, `stand-in ${key}: ip`);
      if (problem) fail(property, problem);
    }
  }
  return { inputs, failures };
}

/**
 * A change is a Service to move that the state has not moved to the same IP yet, or a different kubernetes or
 * stand-in request. A Service that left `moves` (after a successful run the next plan sees it in the new range
 * and no longer lists it) is not a change: there is nothing to do for it.
 */
function diffInputs(olds: Partial<ServiceRecreationOutputs>, news: Inputs): pulumi.dynamic.DiffResult {
  if (containsUnknown(news.moves) || containsUnknown(news.kubernetesService) || containsUnknown(news.standIns)) return { changes: true };
  // check has passed on news: its maps hold entries of their shape
  const oldMoves = olds.moves ?? {};
  const newMoves = (isRecord(news.moves) ? news.moves : {}) as Record<string, ServiceMoveEntry>;
  const movesChanged = Object.entries(newMoves).some(([key, entry]) => oldMoves[key]?.toIP !== entry.toIP || oldMoves[key]?.vacate !== entry.vacate || oldMoves[key]?.otherFamily?.toIP !== entry.otherFamily?.toIP);
  const newKubernetes = news.kubernetesService as KubernetesServiceRequest | undefined;
  const kubernetesChanged = newKubernetes !== undefined && olds.kubernetesService?.toIP !== newKubernetes.toIP;
  const oldStandIns = olds.standIns ?? {};
  const standInsChanged = Object.entries((news.standIns ?? {}) as Record<string, StandInEntry>)
    .some(([key, entry]) => oldStandIns[key]?.ip !== entry.ip || oldStandIns[key]?.of !== entry.of);
  const versionChanged = news.version !== undefined && olds.version !== news.version;
  return { changes: movesChanged || kubernetesChanged || standInsChanged || versionChanged };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
}

/** The engine shows a provider's error by its message: make sure there always is one, and only one line per problem. */
function readable(err: unknown): Error {
  if (err instanceof Error && typeof err.message === "string" && err.message !== "") return err;
  let text: string;
  try {
    text = JSON.stringify(err) ?? String(err);
  } catch {
    text = String(err);
  }
  return new Error(`Service moves failed: ${text}`);
}

async function apply(news: Inputs): Promise<ServiceRecreationOutputs> {
  try {
    return await applyChecked(news);
  } catch (err) {
    throw readable(err);
  }
}

/** The inputs once check passes on them (defaults applied), or every failure in one error. */
function asInputs(news: Inputs): RecreationInputs {
  const { inputs, failures } = checkInputs(news);
  throwIfFailed(failures);
  return inputs as RecreationInputs;
}

async function applyChecked(news: Inputs): Promise<ServiceRecreationOutputs> {
  const inputs = asInputs(news);
  const kc = kubeConfigFrom(inputs.kubeconfig);
  const { moves, standIns } = inputs;
  const requests: ServiceMoveRequest[] = Object.entries(moves).map(([key, entry]) => ({
    ...parseServiceRefKey(key)!, fromIP: entry.fromIP, toIP: entry.toIP, type: entry.type,
    ...(entry.otherFamily ? { otherFamily: { fromIP: entry.otherFamily.fromIP, toIP: entry.otherFamily.toIP } } : {}),
    ...(entry.vacate ? { vacate: parseServiceRefKey(entry.vacate)! } : {}),
  }));
  const standInRequests: StandInRequest[] = Object.entries(standIns).map(([key, entry]) => ({ ...parseServiceRefKey(key)!, of: parseServiceRefKey(entry.of)!, ip: entry.ip }));
  // the clients that program Services (kube-proxy, CoreDNS) are watching again before any Service moves
  const watchers = inputs.serviceWatchersBefore !== undefined && requests.length > 0 ? await waitForWatchers(kc, inputs.serviceWatchersBefore) : undefined;
  const report = await runServiceMoves(kc, {
    moves: requests,
    standIns: standInRequests,
    kubernetesService: inputs.kubernetesService,
  }, {
    parallelism: inputs.parallelism,
    allowLoadBalancerRecreate: inputs.allowLoadBalancerRecreate,
    bridgeOldIps: inputs.bridgeOldIps === true,
    routeNewIpsFirst: inputs.routeNewIpsFirst === true,
    ...(inputs.routeAheadSettleSeconds !== undefined ? { routeAheadSettleMs: inputs.routeAheadSettleSeconds * 1000 } : {}),
    moveInPlace: inputs.moveInPlace === true,
    ...(inputs.standInLingerSeconds !== undefined ? { standInLingerMs: inputs.standInLingerSeconds * 1000 } : {}),
    serviceCidr: inputs.serviceCidr,
    journalNamespace: inputs.journalNamespace,
    adoptJournals: inputs.adoptJournals,
    deleteTimeoutMs: inputs.deleteTimeoutSeconds * 1000,
  });
  const gaps = report.results.flatMap((r) => (r.gapMillis === undefined ? [] : [r.gapMillis])).sort((a, b) => a - b);
  const { kubeconfig: _secret, kubernetesService, serviceCidr, ...recorded } = inputs;
  return {
    ...recorded,
    ...(kubernetesService ? { kubernetesService } : {}),
    ...(serviceCidr ? { serviceCidr } : {}),
    results: Object.fromEntries(report.results.map((r) => [serviceRefKey(r), r])),
    ...(report.kubernetesService ? { kubernetesServiceResult: report.kubernetesService } : {}),
    standInResults: Object.fromEntries(report.standIns.map((s) => [serviceRefKey(s), { ip: s.ip, outcome: s.outcome }])),
    gapP50Millis: percentile(gaps, 0.5),
    gapMaxMillis: gaps.length ? gaps[gaps.length - 1] : 0,
    warnings: [...(watchers?.warning ? [watchers.warning] : []), ...report.warnings],
    ...(watchers ? { watchersWaitMillis: Math.round(watchers.waitedMillis) } : {}),
    totalMillis: report.totalMillis,
  };
}

async function waitForWatchers(kc: KubeConfig, before: number): Promise<WatchersWait> {
  const rest = await kubeRest(kc, { maxSockets: 1 });
  try {
    return await waitForServiceWatchers(rest, before);
  } finally {
    rest.close();
  }
}

function resourceId(news: Inputs): string {
  const keys = [...Object.keys((news.moves ?? {}) as object), ...Object.keys((news.standIns ?? {}) as object)].sort();
  return `service-recreation-${createHash("sha256").update(JSON.stringify(keys)).digest("hex").slice(0, 16)}`;
}

export const serviceRecreationProvider: TypedProvider<RecreationInputs, ServiceRecreationOutputs> = {
  async check(_olds, news) {
    return checkInputs(news);
  },

  async diff(_id, olds, news) {
    return diffInputs(olds, news);
  },

  async create(news) {
    return { id: resourceId(news), outs: await apply(news) };
  },

  async update(_id, _olds, news) {
    return { outs: await apply(news) };
  },

  async delete(): Promise<void> {
    // Moved Services stay moved; a stand-in is removed only by the final DNS swap.
  },
};

export class ServiceRecreation extends pulumi.dynamic.Resource {
  declare readonly results: pulumi.Output<Record<string, MoveResult>>;
  declare readonly kubernetesServiceResult: pulumi.Output<KubernetesServiceResult | undefined>;
  declare readonly standInResults: pulumi.Output<Record<string, { ip: string; outcome: string }>>;
  declare readonly gapP50Millis: pulumi.Output<number>;
  declare readonly gapMaxMillis: pulumi.Output<number>;
  declare readonly warnings: pulumi.Output<string[]>;

  constructor(name: string, args: ServiceRecreationArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      serviceRecreationProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        moves: args.moves,
        kubernetesService: args.kubernetesService,
        standIns: args.standIns ?? {},
        parallelism: args.parallelism ?? DEFAULT_SERVICE_PARALLELISM,
        allowLoadBalancerRecreate: args.allowLoadBalancerRecreate ?? false,
        // only when asked for: a stack from before the bridge existed sees no change
        ...(args.bridgeOldIps ? { bridgeOldIps: args.bridgeOldIps } : {}),
        ...(args.routeNewIpsFirst ? { routeNewIpsFirst: args.routeNewIpsFirst } : {}),
        ...(args.routeAheadSettleSeconds !== undefined ? { routeAheadSettleSeconds: args.routeAheadSettleSeconds } : {}),
        ...(args.moveInPlace ? { moveInPlace: args.moveInPlace } : {}),
        ...(args.standInLingerSeconds !== undefined ? { standInLingerSeconds: args.standInLingerSeconds } : {}),
        ...(args.serviceWatchersBefore !== undefined ? { serviceWatchersBefore: args.serviceWatchersBefore } : {}),
        serviceCidr: args.serviceCidr,
        journalNamespace: args.journalNamespace ?? DEFAULT_JOURNAL_NAMESPACE,
        adoptJournals: args.adoptJournals ?? true,
        deleteTimeoutSeconds: args.deleteTimeoutSeconds ?? DEFAULT_DELETE_TIMEOUT_SECONDS,
        version: args.version ?? SERVICE_RECREATION_PROVIDER_VERSION,
        results: undefined,
        kubernetesServiceResult: undefined,
        standInResults: undefined,
        gapP50Millis: undefined,
        gapMaxMillis: undefined,
        warnings: undefined,
        totalMillis: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "ServiceRecreation",
    );
  }
}
