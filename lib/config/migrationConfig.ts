import { IpFamily } from "../net/cidr";
import { Sensitive } from "./sensitive";

/** The typed, validated stack config. Produced only by lib/config.ts; every CIDR here is normalized. */

export type Cni = "calico" | "flannel" | "cilium" | "ovn-kubernetes" | "none" | "auto";
/** kubeadm: the clusters this tool runs on; openshift: planned only (`cidr-migration plan` prints the oc runbook). */
export type Platform = "kubeadm" | "openshift";
export type NodeRole = "control-plane" | "worker";
export type RolloutStrategy = "reregister" | "kubeadm-rejoin" | "etcd-rewrite";
/** recreate: each Service deleted and created at its new IP through the API; etcd-rewrite: moved in place in etcd. */
export type ServiceStrategy = "recreate" | "etcd-rewrite";

export interface CidrMove {
  from: string;
  to: string;
}

export interface PodCidrMove extends CidrMove {
  nodeMaskSize: number;
}

/**
 * The second address family of a dual-stack run (issue 17): moved beside the primary one, or added to a
 * single-stack cluster ("add": no `from`; the primary family's from and to are then equal).
 */
export interface SecondFamily {
  family: IpFamily;
  role: "move" | "add";
  serviceCidr: { from?: string; to: string };
  podCidr: { from?: string; to: string; nodeMaskSize: number };
}

export interface NodeTarget {
  name: string;
  host: string;
  port: number;
  user: string;
  role: NodeRole;
}

/** One node's IP change (nodeAddresses, issue 16); both addresses normalized and of one family. */
export interface NodeAddressChange {
  name: string;
  from: string;
  to: string;
  /** The node's role in nodes: the planner orders and guards control-plane changes by it. */
  role: NodeRole;
  /** The prefix length of the interface's address (the entry's own, else hostAddress.prefix). */
  prefix?: number;
}

/** How a node's host address is changed (hostAddress; lib/remote/scripts/nodeAddressChange). */
export interface HostAddressSettings {
  persistence: "netplan" | "nmcli" | "hook" | "none";
  hookPath?: string;
  interface?: string;
}

export interface MigrationConfig {
  /**
   * The ranges a CIDR move moves. Both are absent on a run that changes node addresses only (nodeAddresses without
   * serviceCidr and podCidr): check with movesRanges().
   */
  serviceCidr?: CidrMove;
  podCidr?: PodCidrMove;
  /** Absent on a single-stack run. What a dual-stack run cannot do yet is refused by lib/plan/dualStackRefusals. */
  secondFamily?: SecondFamily;
  platform: Platform;
  cni: Cni;
  /** A kubeconfig path, or its content as a secret. */
  kubeconfig: { path?: string; content?: Sensitive };
  etcd: {
    endpoints: string[];
    caCert?: Sensitive;
    cert?: Sensitive;
    key?: Sensitive;
  };
  nodes: NodeTarget[];
  /** Node IP changes; empty when nodeAddresses is absent. Workers' run with the node rollout; control-plane ones after it (components/controlPlaneAddress). */
  nodeAddresses: NodeAddressChange[];
  /** Present when nodeAddresses is not empty. */
  hostAddress?: HostAddressSettings;
  ssh: { user: string; privateKey?: Sensitive };
  dns: { namespace: string; name: string };
  nodeRollout: {
    strategy: RolloutStrategy;
    maxUnavailable: number;
    /** The node that goes first and alone. */
    canary?: string;
    drainTimeoutSeconds: number;
    /** kubeadm-rejoin: preflight checks `kubeadm join` skips, as the nodes' first join did (e.g. SystemVerification on cgroup v1). */
    ignorePreflightErrors?: string[];
    /** Keep one DNS pod answering while nodes drain: a temporary PodDisruptionBudget (maxUnavailable 1) over them. */
    dnsDisruptionBudget: boolean;
  };
  services: {
    /**
     * recreate (default), or etcd-rewrite: every Service's ClusterIP and every Node's podCIDR rewritten in place in
     * etcd while the apiservers are stopped (uids kept); then nodeRollout.strategy is etcd-rewrite too.
     */
    strategy: ServiceStrategy;
    /** How many Service moves run at once (the DNS Service always moves alone and last). Default DEFAULT_SERVICE_PARALLELISM. */
    parallelism: number;
    /** Consent to re-create LoadBalancer Services (a cloud load balancer can get a new external address). */
    allowLoadBalancerRecreate: boolean;
    /**
     * Keep each moved Service answering at its old ClusterIP (an externalIP) until every pod has been re-created,
     * for clients that cached the address; removed at the end.
     */
    bridgeOldIps: boolean;
    /**
     * recreate: before the swaps, each moving Service also answers at its planned ClusterIP (an externalIP), so that
     * kube-proxy forwards the new address before the re-created Service appears there and DNS hands it out.
     */
    routeNewIpsFirst: boolean;
    /**
     * recreate: single-stack ClusterIP Services with a selector keep their object (uid, EndpointSlices) and their
     * name resolves throughout: each goes ExternalName naming a temporary stand-in, then back at its planned IP.
     */
    moveInPlace: boolean;
  };
  snapshot: {
    /** Directory on the machine running `pulumi up` where the etcd snapshot is written. */
    directory: string;
    /** Change this to take a new snapshot. */
    trigger: string;
  };
}

/** A run that moves the Service and Pod ranges (every run but one that changes node addresses only). */
export type RangeMigrationConfig = MigrationConfig & { serviceCidr: CidrMove; podCidr: PodCidrMove };

export function movesRanges(config: MigrationConfig): config is RangeMigrationConfig {
  return config.serviceCidr !== undefined && config.podCidr !== undefined;
}

/**
 * Service moves in flight at once when services.parallelism is not set; also the ServiceRecreation provider's
 * default. On the test bed 8 moved 500 Services 25x faster than a kubectl loop with a p99 gap of 56 ms; at 20 the
 * p99 gap passed 190 ms (bench/services.bench.ts: beyond ~8 the swaps only queue behind the apiserver's ClusterIP
 * allocator, and each queued request lengthens the gap).
 */
export const DEFAULT_SERVICE_PARALLELISM = 8;
