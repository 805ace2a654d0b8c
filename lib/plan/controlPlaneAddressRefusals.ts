import { parse } from "yaml";
import { UserError } from "../config/errors";
import { NodeAddressChange } from "../config/migrationConfig";
import { endpointHost } from "../net/cidr";

/**
 * Pure: what a control-plane node's address change cannot run with, refused before any change (issue 16). Each is a
 * reference every other node or the run itself dials, which the node's own steps cannot move:
 * - the cluster's controlPlaneEndpoint (kubeadm-config) on the node's old address: every kubelet, kube-proxy and
 *   admin kubeconfig of the cluster dials it;
 * - the stack's kubeconfig server on it: the run's own API steps would lose the cluster half-way;
 * - every etcd endpoint of the stack on it: the run could not reach etcd while that member restarts;
 * - fewer than three control-plane nodes: etcd keeps quorum only while a majority answers, so its one or two
 *   members cannot spare the one whose address moves (the planner refuses two; one is refused here, for a run).
 */

export interface ControlPlaneAddressContext {
  /** kube-system/kubeadm-config's ClusterConfiguration text, when the cluster has one. */
  clusterConfiguration?: string;
  /** The server URL of the stack's kubeconfig. */
  kubeconfigServer?: string;
  /** The stack's etcd.endpoints. */
  etcdEndpoints: readonly string[];
  /** The cluster's control-plane nodes (each carries a stacked etcd member). */
  controlPlaneNodes: number;
}

export function controlPlaneAddressProblems(changes: readonly NodeAddressChange[], context: ControlPlaneAddressContext): string[] {
  const problems: string[] = [];
  const endpoint = context.clusterConfiguration ? (parse(context.clusterConfiguration) as { controlPlaneEndpoint?: unknown } | null)?.controlPlaneEndpoint : undefined;
  if (changes.length > 0 && context.controlPlaneNodes < 3) {
    problems.push(`nodeAddresses: ${changes.map((c) => c.name).join(", ")} ${changes.length === 1 ? "is a" : "are"} control-plane node${changes.length === 1 ? "" : "s"} of a cluster with ${context.controlPlaneNodes}: its etcd cannot keep quorum while a member's address moves; add control-plane nodes until there are 3, or change the address by hand in a maintenance window with the API down (the plan lists every reference)`);
  }
  for (const c of changes) {
    if (typeof endpoint === "string" && endpointHost(endpoint) === c.from) {
      problems.push(`nodeAddresses: ${c.name}'s old address ${c.from} is the cluster's controlPlaneEndpoint (${endpoint} in kube-system/kubeadm-config), which every node and client dials; put the endpoint on a load balancer or DNS name first (kubeadm-config, the kubeconfigs, the apiserver certificates), then change the node's address`);
    }
    if (context.kubeconfigServer && endpointHost(context.kubeconfigServer) === c.from) {
      problems.push(`cidr-migration:kubeconfig: its server ${context.kubeconfigServer} is ${c.name}'s old address, which the run moves; point the kubeconfig at another control-plane node or at the controlPlaneEndpoint`);
    }
    if (context.etcdEndpoints.length > 0 && context.etcdEndpoints.every((e) => endpointHost(e) === c.from)) {
      problems.push(`cidr-migration:etcd.endpoints: every endpoint (${context.etcdEndpoints.join(", ")}) is on ${c.name}'s old address, whose etcd member restarts; list another member's client URL too`);
    }
  }
  return problems;
}

export function refuseControlPlaneAddressProblems(changes: readonly NodeAddressChange[], context: ControlPlaneAddressContext): void {
  const problems = controlPlaneAddressProblems(changes, context);
  if (problems.length > 0) throw new UserError(`${problems.join("\n")}\nNothing was changed.`);
}
