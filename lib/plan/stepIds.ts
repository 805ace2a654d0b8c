/**
 * Every step id a plan holds, built here only: the plan writes them (phases.ts) and the node rollout, the
 * consistency check and the gate read them back. An id is "<phase>/<what>", stable across runs, e.g.
 * "control-plane/cp-1/kube-controller-manager" or "services/shop/cart".
 */
import { ServiceRef, serviceRefKey } from "../serviceMove/serviceRef";

export type ControlPlaneStep = "backup" | "kube-controller-manager" | "kube-apiserver" | "apiserver-cert" | "stop";
export type CniStep =
  | { cni: "calico"; step: "new-pool" | "disable-old-pool" | "remove-old-pool" }
  | { cni: "flannel"; step: "net-conf" | "restart" | "net-conf-final" | "restart-final" }
  | { cni: "cilium"; step: "cluster-pool" | "restart" };

/** The prefixes a reader matches on (a Service's or a node's step). */
export const SERVICE_STEP_PREFIX = "services/";
export const NODE_STEP_PREFIX = "nodes/";

export const stepId = {
  preflight: "preflight/audit",
  snapshot: "snapshot/etcd",
  controlPlane: (node: string, step: ControlPlaneStep) => `control-plane/${node}/${step}`,
  /** services.strategy etcd-rewrite: every planned Service and Node podCIDR moved in etcd while the apiservers are stopped. */
  etcdRewrite: "control-plane/etcd-rewrite",
  kubernetesService: `${SERVICE_STEP_PREFIX}default/kubernetes`,
  service: (ref: ServiceRef) => `${SERVICE_STEP_PREFIX}${serviceRefKey(ref)}`,
  dnsTemporary: "dns/temporary-service",
  dnsFinal: "dns/final-swap",
  clusterConfig: (configMap: "kubeadm-config" | "kubelet-config") => `cluster-config/${configMap}`,
  cni: ({ cni, step }: CniStep) => `cni/${cni}/${step}`,
  node: (name: string) => `${NODE_STEP_PREFIX}${name}`,
  enableAllocation: (controlPlaneNode: string) => `${NODE_STEP_PREFIX}enable-cidr-allocation/${controlPlaneNode}`,
  kubeProxy: (step: "config" | "restart") => `kube-proxy/${step}`,
  verify: "verify/cluster",
} as const;
