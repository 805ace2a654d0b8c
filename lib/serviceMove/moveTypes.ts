/** What the Service mover is asked to do, and what it reports. Plain data: the dynamic provider's inputs and outputs. */
import { ServiceRef } from "./serviceRef";

/** One address family's ClusterIP of a Service, old and planned. */
export interface FamilyMove {
  fromIP: string;
  toIP: string;
}

/** Where a move puts a Service: its planned ClusterIP, and a dual-stack Service's second one. */
export function plannedIps(move: { toIP: string; otherFamily?: FamilyMove }): string[] {
  return move.otherFamily ? [move.toIP, move.otherFamily.toIP] : [move.toIP];
}

/** Where a Service was before its move: its old ClusterIP, and a dual-stack Service's second one. */
export function previousIps(move: { fromIP: string; otherFamily?: FamilyMove }): string[] {
  return move.otherFamily ? [move.fromIP, move.otherFamily.fromIP] : [move.fromIP];
}

/** One Service to re-create at its planned ClusterIP. */
export interface ServiceMoveRequest extends ServiceRef {
  /** The ClusterIP the plan saw, in the old range. */
  fromIP: string;
  /** The planned ClusterIP in the new range. */
  toIP: string;
  /** The type the plan saw; the live type is checked again before anything changes. */
  type?: string;
  /** A dual-stack Service's second ClusterIP (spec.clusterIPs[1]) and its planned address: both move in one re-create. */
  otherFamily?: FamilyMove;
  /**
   * A Service that holds toIP now and is deleted right before the create (the DNS stand-in at the final swap).
   * The create follows its delete back to back; that gap is the one reported.
   */
  vacate?: ServiceRef;
}

/** default/kubernetes: deleted, then re-created by the apiserver's bootstrap controller at the new first IP. */
export interface KubernetesServiceRequest {
  fromIP: string;
  toIP: string;
}

/** A temporary Service at `ip` that selects the same pods on the same ports as `of` (the DNS stand-in). */
export interface StandInRequest extends ServiceRef {
  of: ServiceRef;
  ip: string;
}

export interface ServiceMoveSpec {
  moves: ServiceMoveRequest[];
  kubernetesService?: KubernetesServiceRequest;
  standIns?: StandInRequest[];
}

/**
 * How long the in-place moves' stand-ins outlive the last move: longer than the TTL CoreDNS gives Service records
 * (kubeadm's Corefile: 30 s), so a client that resolved a name during its move has asked again before its stand-in goes.
 */
export const DEFAULT_STAND_IN_LINGER_MS = 35_000;

/** How long an old Service may linger (finalizers) after its delete before a move stops; the mover's and the provider's default. */
export const DEFAULT_DELETE_TIMEOUT_SECONDS = 120;

export interface MoverOptions {
  /** Moves in flight at once (config services.parallelism). */
  parallelism: number;
  /** Consent to re-create LoadBalancer Services (config services.allowLoadBalancerRecreate). */
  allowLoadBalancerRecreate: boolean;
  /** The new Service range, or a dual-stack pair comma-separated: a Service found already inside it is left alone. */
  serviceCidr?: string;
  /** Keep each moved Service answering at its old ClusterIP, as an externalIP, until the end (config services.bridgeOldIps). */
  bridgeOldIps?: boolean;
  /** Route each planned ClusterIP to its Service's endpoints, as an externalIP, before the swaps (config services.routeNewIpsFirst). */
  routeNewIpsFirst?: boolean;
  /** How long kube-proxy gets to program the addresses routed first before the first swap (default 10 s). */
  routeAheadSettleMs?: number;
  /**
   * Move single-stack ClusterIP Services with a selector in place (config services.moveInPlace): the object stays,
   * and its name resolves throughout, through a temporary stand-in (see inPlace.ts). Others are re-created.
   */
  moveInPlace?: boolean;
  /** How long the in-place moves' stand-ins stay after the last move (default DEFAULT_STAND_IN_LINGER_MS). */
  standInLingerMs?: number;
  /** Namespace of the journal Secrets (default kube-system). */
  journalNamespace?: string;
  /** How long an old object may linger (finalizers) before the move gives up, keeping its journal (default DEFAULT_DELETE_TIMEOUT_SECONDS). */
  deleteTimeoutMs?: number;
  /**
   * How long a create keeps trying when the old object is gone but kube-apiserver still holds one of its
   * allocations (a v1.20 leak for Services deleted with a finalizer, freed by its repair loop within ~10 min).
   * Default 12 min.
   */
  allocationLeakTimeoutMs?: number;
  /** How long the apiserver gets to re-create default/kubernetes (default 60 s; its loop runs every 10 s). */
  kubernetesServiceTimeoutMs?: number;
  /** How long restored hand-made Endpoints are watched for a late delete by the endpoints controller (default 1500 ms). */
  endpointsSettleMs?: number;
  /**
   * Also finish interrupted moves this run was not asked for (journal entries without a stand-in to vacate).
   * The bulk Service move sets it: after a crash, the next plan cannot list a Service that was deleted.
   */
  adoptJournals?: boolean;
  log?: (line: string) => void;
}

export type MoveOutcome =
  /** deleted and re-created at toIP by this run */
  | "moved"
  /** an earlier run was cut off; this run finished it from the journal */
  | "completed-from-journal"
  /** already at toIP, nothing journaled: nothing to do */
  | "already-moved"
  /** at another address inside the new range: left alone */
  | "in-new-range"
  /** headless or ExternalName: holds no ClusterIP, left alone */
  | "no-cluster-ip";

export interface MoveResult {
  namespace: string;
  name: string;
  outcome: MoveOutcome;
  fromIP?: string;
  /** The ClusterIP it holds now. */
  ip: string;
  /** Milliseconds between the delete being accepted and the create being accepted (no object held the name/IP). */
  gapMillis?: number;
  /**
   * Milliseconds from the create being accepted to the old (DNS: the stand-in's) endpoints bridged to the new
   * Service (0: copied before the delete), and, DNS swap only, to the endpointslice controller's own slice for it
   * being seen (polled every 50 ms).
   */
  endpointsBridgedMillis?: number;
  controllerSliceMillis?: number;
  /** Moved in place (services.moveInPlace): the same object, its uid and EndpointSlices kept. */
  movedInPlace?: boolean;
  /** Create attempts (more than one when the old object lingered). */
  createAttempts?: number;
  /** Hand-made Endpoints put back. */
  restoredEndpoints?: boolean;
  /** "<kind> <namespace>/<name>" of dependents re-linked to the new Service. */
  relinkedDependents?: string[];
  /** Annotation keys that carried the old IP and were corrected. */
  correctedAnnotations?: string[];
  /** The last-applied manifest pinned the old IP: the user's own manifest must change too. */
  pinnedInLastApplied?: boolean;
}

export interface KubernetesServiceResult {
  outcome: "moved" | "already-moved" | "completed-from-journal";
  ip: string;
  /** Milliseconds between the delete and the apiserver's re-created object being seen. */
  gapMillis?: number;
}

export interface MoveReport {
  results: MoveResult[];
  kubernetesService?: KubernetesServiceResult;
  standIns: Array<ServiceRef & { ip: string; outcome: "created" | "present" }>;
  warnings: string[];
  totalMillis: number;
  /** Where the time went: reading the cluster, journaling, the swaps, the bookkeeping after them. */
  timings?: { preflightMillis: number; journalMillis: number; swapMillis: number; finishMillis: number };
  /** The fewest and most swaps the run had in flight: the bound adapts to the gaps (serviceMove/adaptiveLanes). */
  swapLanes?: { min: number; max: number };
  /** How many re-creates started when a watch reported their delete, before the apiserver answered it (deletionWatch.ts). */
  createdAheadOfDeleteAnswer?: number;
}
