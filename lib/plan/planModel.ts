/** The runbook as data: what lib/plan/plan.ts produces and everything downstream (index.ts, CLI, gate, report) reads. */

import { SecondFamily } from "../config/migrationConfig";

export type PhaseName =
  | "preflight"
  | "snapshot"
  | "control-plane"
  | "services"
  | "dns"
  | "cluster-config"
  | "cni"
  | "nodes"
  | "kube-proxy"
  | "verify";

/**
 * Phases are listed in runbook order; a step's dependsOn is the truth about when it runs. A few steps wait on a
 * later phase (the final DNS swap waits for the node rollout, the old Calico pool's removal for kube-proxy).
 */
export interface PlanStep {
  /** Stable id, e.g. "control-plane/cp-1/kube-controller-manager". */
  id: string;
  action: string;
  target: string;
  dependsOn: string[];
  /** Our estimate for this step, in seconds. */
  estimateSeconds: number;
}

export interface PlanPhase {
  name: PhaseName;
  steps: PlanStep[];
  estimateSeconds: number;
  /** The published manual runbook's figure for the same phase, in minutes. */
  manualMinutes: { min: number; max: number };
}

export interface ServiceMove {
  namespace: string;
  name: string;
  type: string;
  oldClusterIP?: string;
  newClusterIP?: string;
  action: "recreate" | "unchanged";
  reason: string;
  /** True when the old IP was pinned by the user (or is the DNS IP) and keeps its offset. */
  keepsOffset: boolean;
  /** services.moveInPlace: the move keeps the object (ExternalName through a stand-in, then back at the new IP). */
  inPlace?: boolean;
  /**
   * A dual-stack run: every ClusterIP the Service holds, in its own ipFamilies order, and where each ends; present
   * when it holds two. oldClusterIP/newClusterIP are the first of each, as spec.clusterIP is.
   */
  oldClusterIPs?: string[];
  newClusterIPs?: string[];
}

export interface NodeMove {
  name: string;
  role: "control-plane" | "worker";
  oldPodCIDR?: string;
  newPodCIDR: string;
  /**
   * "controller": a run that changes node addresses only keeps kube-controller-manager allocating, and the
   * re-registered Node takes the subnet it gives, anywhere in newPodCIDR (then the cluster's pod range).
   */
  podCidrAllocation?: "controller";
  /** "unchanged" when the node's subnet already lies in the new range (an expansion). */
  action: "move" | "unchanged";
  /** 0 is the canary batch; -1 for unchanged nodes. */
  batch: number;
  canary: boolean;
  /** A dual-stack run: the node's podCIDRs in the cluster's family order, before and after (the second one new on an add-family run). */
  oldPodCIDRs?: string[];
  newPodCIDRs?: string[];
}

export interface PlanWarning {
  code: string;
  message: string;
  object: string;
}

/** How the Calico pools move (lib/plan/calicoPools.ts); only on a Calico cluster. */
export interface CalicoPoolPlan {
  /** "operator": through Installation default's ipPools; "manifest": the IPPool objects directly. */
  management: "operator" | "manifest";
  /** The Installation the operator reads, on the operator path. */
  installation?: string;
  /** The pool holding the old pod range; undefined once it is gone. */
  oldPool?: string;
  newPool: string;
  /** Why this path, as plan and preview say it. */
  reason: string;
}

export interface Plan {
  /** Present when services.strategy is etcd-rewrite: Services and Node podCIDRs move in etcd, not through the API. */
  strategy?: "etcd-rewrite";
  serviceCidr: { from: string; to: string };
  podCidr: { from: string; to: string; nodeMaskSize: number };
  /** A dual-stack run's second family, as configured; on an add-family run serviceCidr and podCidr stay as they are. */
  secondFamily?: SecondFamily;
  kubernetesService: { oldClusterIP: string; newClusterIP: string };
  dns: { namespace: string; name: string; oldClusterIP?: string; newClusterIP: string };
  cni: "calico" | "flannel" | "cilium" | "none";
  calicoPools?: CalicoPoolPlan;
  services: ServiceMove[];
  nodes: NodeMove[];
  phases: PlanPhase[];
  estimate: { oursSeconds: number; manualMinutes: { min: number; max: number } };
  warnings: PlanWarning[];
}
