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

export type DetectedCni = "calico" | "flannel" | "cilium" | "none";

export interface CniInfo {
  detected: DetectedCni;
  calicoPools: CalicoPoolInfo[];
  /** Network from kube-flannel-cfg's net-conf.json. */
  flannelNetwork?: string;
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
