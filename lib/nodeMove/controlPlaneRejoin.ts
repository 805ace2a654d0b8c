import { parse } from "yaml";
import { endpointHost } from "../net/cidr";

/**
 * Pure: which control-plane nodes the kubeadm-rejoin strategy resets and joins again as control-plane nodes, and why
 * each other one re-registers instead. A control-plane node's reset removes its stacked etcd member and the join
 * adds it back empty, so it is done only where the cluster can spare the member and the join has what it dials:
 * - three or more control-plane nodes (etcd keeps a majority while one member is away; the rollout's etcd check
 *   also proves every other member answers, right before each reset);
 * - stacked etcd, and kubeadm's default certificate dir (the join takes the certificates `kubeadm init phase
 *   upload-certs` uploads from there);
 * - not the node the join dials (the cluster's controlPlaneEndpoint), nor the one the run's own API steps and etcd
 *   checks dial (the stack's kubeconfig server, every etcd endpoint);
 * - its address not moving in the same run (nodeAddresses re-registers it).
 */

export interface ControlPlaneRejoinContext {
  /** kube-system/kubeadm-config's ClusterConfiguration text, when the cluster has one. */
  clusterConfiguration?: string;
  /** The server URL of the stack's kubeconfig. */
  kubeconfigServer?: string;
  /** The stack's etcd.endpoints. */
  etcdEndpoints: readonly string[];
  /** The cluster's control-plane nodes. */
  controlPlaneNodes: number;
}

export interface ControlPlaneNode {
  name: string;
  /** Its addresses: the Node's InternalIPs, the first the one it advertises. */
  addresses: readonly string[];
  /** Whether its address changes in this run (nodeAddresses). */
  addressMoves: boolean;
}

/** A control-plane node the strategy joins again: the address its apiserver advertises, and its etcd data dir. */
export interface ControlPlaneJoinTarget {
  advertiseAddress: string;
  etcdDataDir: string;
}

export type ControlPlaneRejoinDecision = { rejoin: true; target: ControlPlaneJoinTarget } | { rejoin: false; reason: string };

const DEFAULT_CERTIFICATES_DIR = "/etc/kubernetes/pki";
const DEFAULT_ETCD_DATA_DIR = "/var/lib/etcd";

interface ClusterConfiguration {
  controlPlaneEndpoint?: unknown;
  certificatesDir?: unknown;
  etcd?: { external?: unknown; local?: { dataDir?: unknown } };
}

export function controlPlaneRejoinOf(node: ControlPlaneNode, context: ControlPlaneRejoinContext): ControlPlaneRejoinDecision {
  const reregister = (reason: string): ControlPlaneRejoinDecision => ({ rejoin: false, reason });
  if (context.controlPlaneNodes < 3) return reregister(`the cluster has ${context.controlPlaneNodes} control-plane node(s): its etcd cannot spare a member while one is reset (3 or more are needed)`);
  const config = context.clusterConfiguration ? (parse(context.clusterConfiguration) as ClusterConfiguration | null) : undefined;
  if (!config) return reregister("kube-system/kubeadm-config has no ClusterConfiguration to join it from");
  if (config.etcd?.external !== undefined) return reregister("the cluster's etcd is external: a kubeadm-rejoin of a control-plane node is for stacked etcd members");
  if (config.certificatesDir !== undefined && config.certificatesDir !== DEFAULT_CERTIFICATES_DIR) {
    return reregister(`kubeadm-config's certificatesDir is ${String(config.certificatesDir)}: the join takes the certificates kubeadm uploads from ${DEFAULT_CERTIFICATES_DIR}`);
  }
  if (node.addressMoves) return reregister("its address changes in this run (nodeAddresses), which re-registers it");
  const advertiseAddress = node.addresses[0];
  if (!advertiseAddress) return reregister("its Node reports no InternalIP to advertise");
  const onNode = (url: string) => {
    const host = endpointHost(url);
    return host !== undefined && node.addresses.includes(host);
  };
  if (typeof config.controlPlaneEndpoint === "string" && onNode(config.controlPlaneEndpoint)) {
    return reregister(`it serves the cluster's controlPlaneEndpoint ${config.controlPlaneEndpoint}, which kubeadm join dials`);
  }
  if (context.kubeconfigServer && onNode(context.kubeconfigServer)) return reregister(`the stack's kubeconfig server ${context.kubeconfigServer} is on it`);
  if (context.etcdEndpoints.length > 0 && context.etcdEndpoints.every(onNode)) return reregister("every etcd endpoint of the stack (etcd.endpoints) is on it");
  const dataDir = config.etcd?.local?.dataDir;
  return { rejoin: true, target: { advertiseAddress, etcdDataDir: typeof dataDir === "string" && dataDir !== "" ? dataDir : DEFAULT_ETCD_DATA_DIR } };
}

/** Every control-plane node's decision: those joined again by name, and why each other one re-registers. */
export function controlPlaneRejoins(nodes: readonly ControlPlaneNode[], context: ControlPlaneRejoinContext): { joins: Record<string, ControlPlaneJoinTarget>; reregistered: Array<{ name: string; reason: string }> } {
  const joins: Record<string, ControlPlaneJoinTarget> = {};
  const reregistered: Array<{ name: string; reason: string }> = [];
  for (const node of nodes) {
    const decision = controlPlaneRejoinOf(node, context);
    if (decision.rejoin) joins[node.name] = decision.target;
    else reregistered.push({ name: node.name, reason: decision.reason });
  }
  return { joins, reregistered };
}
