/** What discovery reads from a live cluster. Read-only facts; the planner never talks to the cluster. */

export interface ServiceInfo {
  namespace: string;
  name: string;
  type: "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName";
  /** "None" for headless Services, undefined for ExternalName. */
  clusterIP?: string;
  clusterIPs?: string[];
  ipFamilies?: string[];
  /** False for selector-less Services (their Endpoints are hand-made). */
  hasSelector: boolean;
  externalIPs?: string[];
  loadBalancerIP?: string;
  /** The old ClusterIPs this Service still answers at, as externalIPs, while a run's bridge lasts (services.bridgeOldIps). */
  bridgedOldIPs?: string[];
  /** The planned ClusterIPs this Service answers at first, as externalIPs, while a run's swaps last (services.routeNewIpsFirst). */
  routedAheadIPs?: string[];
  /** ExternalName between the two writes of its in-place move (services.moveInPlace): the planned IP it goes back at. */
  movingInPlaceTo?: string;
  /** A temporary stand-in of an in-place move (services.moveInPlace), removed after the moves. */
  hopStandIn?: boolean;
}

export interface NodeInfo {
  name: string;
  podCIDR?: string;
  podCIDRs?: string[];
  internalIPs: string[];
  controlPlane: boolean;
  labels: Record<string, string>;
  unschedulable: boolean;
}

export interface CalicoPoolInfo {
  name: string;
  cidr: string;
  blockSize?: number;
  ipipMode?: string;
  vxlanMode?: string;
  natOutgoing?: boolean;
  nodeSelector?: string;
  disabled?: boolean;
}

/** One entry of Installation.spec.calicoNetwork.ipPools (operator.tigera.io/v1), as found; other fields are kept. */
export interface InstallationPool {
  name?: string;
  cidr: string;
  encapsulation?: string;
  natOutgoing?: string;
  nodeSelector?: string;
  blockSize?: number;
  disableNewAllocations?: boolean;
  [field: string]: unknown;
}

/** The Tigera operator's Installation `default`, when the cluster has one. */
export interface CalicoOperatorInfo {
  /** spec.calicoNetwork.ipPools; absent when the field is (the operator has not defaulted it yet). */
  ipPools?: InstallationPool[];
  /** APIServer default's status.state ("" before it has one; absent without the object): "Ready" lets the operator change pools. */
  apiServerState?: string;
  /** projectcalico.org/v3 IPPools are served (by the Calico API server or as CRDs). */
  v3Served: boolean;
}

export type DetectedCni = "calico" | "flannel" | "cilium" | "none";

export interface CniInfo {
  detected: DetectedCni;
  calicoPools: CalicoPoolInfo[];
  /** Present when an operator.tigera.io Installation `default` exists: the operator may own the pools. */
  calicoOperator?: CalicoOperatorInfo;
  /** Network from kube-flannel-cfg's net-conf.json. */
  flannelNetwork?: string;
  /** Where kube-flannel-cfg was found: kube-flannel (current manifests) or kube-system (older installs). */
  flannelNamespace?: string;
  /** The DaemonSet there that mounts kube-flannel-cfg (kube-flannel-ds, or kube-flannel-ds-amd64 in older manifests). */
  flannelDaemonSet?: string;
  /** IPv6Network from the same net-conf.json: flannel serves IPv6 pods only with it (dual-stack, issue 17). */
  flannelIpv6Network?: string;
  /** cluster-pool-ipv4-cidr from cilium-config. */
  ciliumClusterPoolCidr?: string;
}

export interface Inventory {
  serverVersion: { major: string; minor: string; gitVersion: string };
  services: ServiceInfo[];
  nodes: NodeInfo[];
  /** kube-system/kube-proxy config.conf */
  kubeProxy?: { clusterCIDR?: string; mode?: string };
  /** kube-system/kubeadm-config ClusterConfiguration */
  kubeadmConfig?: { podSubnet?: string; serviceSubnet?: string; kubernetesVersion?: string };
  /** kube-system/kubelet-config (kubelet-config-1.NN before kubeadm 1.24) key kubelet; configMapName says which. */
  kubeletConfig?: { configMapName: string; clusterDNS: string[] };
  cni: CniInfo;
  /**
   * networking.k8s.io/v1 ServiceCIDR objects (1.33+), or undefined when the apiserver does not serve them (the
   * legacy allocator: --service-cluster-ip-range alone decides).
   */
  serviceCidrs?: ServiceCidrInfo[];
}

export interface ServiceCidrInfo {
  name: string;
  cidrs: string[];
  terminating: boolean;
}
