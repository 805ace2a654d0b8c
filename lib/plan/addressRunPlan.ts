import { configProblem } from "../config/configReader";
import { ConfigError, UserError } from "../config/errors";
import { MigrationConfig } from "../config/migrationConfig";
import { cidrContains, dnsServiceIP, familyOf, isIpAddress, kubernetesServiceIP, normalizeCidr, parseCidr } from "../net/cidr";
import { Inventory } from "./inventory";
import { NodeAddressPlan } from "./nodeAddressPlan";
import { planAddressPhases } from "./phases";
import { NodeMove, Plan } from "./planModel";

/**
 * Pure: the Plan of a run that changes node addresses only (nodeAddresses without serviceCidr and podCidr), in the
 * shape the graph's node rollout and plan order read. No range moves: serviceCidr and podCidr are the cluster's own,
 * from and to alike, no Service moves, and the nodes are the workers whose address changes, in the node address
 * plan's batches. Each is re-registered at its new address, and kube-controller-manager, which keeps allocating,
 * gives it a subnet of the pod range it already uses (podCidrAllocation "controller"). Control-plane nodes follow,
 * one at a time, outside the node rollout (components/controlPlaneAddress), as in a range move.
 */
export function planAddressRun(config: MigrationConfig, inventory: Inventory, addressPlan: NodeAddressPlan): Plan {
  if (config.platform === "openshift" || config.cni === "ovn-kubernetes") throw new UserError(`platform "openshift" (cni "ovn-kubernetes") is planned only: \`cidr-migration plan\` prints its node address runbook`);
  const { serviceRanges, podRanges } = clusterRanges(inventory);
  refuseAddressesInRanges(config, [...serviceRanges.map((r) => ["Service", r]), ...podRanges.map((r) => ["Pod", r])]);
  const liveNodes = new Map(inventory.nodes.map((n) => [n.name, n]));
  refuseWorkersWithoutSubnet(config, addressPlan, liveNodes);
  const nodes: NodeMove[] = addressPlan.steps.filter((s) => s.role === "worker").map((s) => {
    const live = liveNodes.get(s.name);
    return {
      name: s.name,
      role: "worker",
      ...(live?.podCIDR ? { oldPodCIDR: live.podCIDR } : {}),
      newPodCIDR: podRanges[0],
      podCidrAllocation: "controller",
      action: "move",
      batch: s.batch,
      canary: s.canary,
      ...(podRanges.length > 1 ? { oldPodCIDRs: live?.podCIDRs ?? [], newPodCIDRs: podRanges } : {}),
    };
  });
  const kubernetesIP = clusterIpOf(inventory, "default", "kubernetes") ?? kubernetesServiceIP(serviceRanges[0]);
  const dnsIP = clusterIpOf(inventory, config.dns.namespace, config.dns.name) ?? dnsServiceIP(serviceRanges[0]);
  const phases = planAddressPhases(config.etcd.endpoints[0] ?? "etcd", nodes);
  const oursSeconds = phases.reduce((sum, p) => sum + p.estimateSeconds, 0) + addressPlan.steps.filter((s) => s.role === "control-plane").reduce((sum, s) => sum + s.estimateSeconds, 0);
  return {
    serviceCidr: { from: serviceRanges[0], to: serviceRanges[0] },
    podCidr: { from: podRanges[0], to: podRanges[0], nodeMaskSize: nodeMaskOf(inventory, podRanges[0]) },
    kubernetesService: { oldClusterIP: kubernetesIP, newClusterIP: kubernetesIP },
    dns: { namespace: config.dns.namespace, name: config.dns.name, oldClusterIP: dnsIP, newClusterIP: dnsIP },
    cni: config.cni === "auto" ? inventory.cni.detected : config.cni,
    services: [],
    nodes,
    phases,
    estimate: { oursSeconds, manualMinutes: { ...addressPlan.estimate.manualMinutes } },
    warnings: [],
  };
}

/** The cluster's Service and Pod ranges, as kubeadm records them (a dual-stack pair comma-separated, primary first). */
function clusterRanges(inventory: Inventory): { serviceRanges: string[]; podRanges: string[] } {
  const service = inventory.kubeadmConfig?.serviceSubnet;
  const pod = inventory.kubeadmConfig?.podSubnet;
  if (!service || !pod) {
    throw new UserError(`ConfigMap kube-system/kubeadm-config has no ${!service ? "networking.serviceSubnet" : "networking.podSubnet"}: a run that changes node addresses only keeps the cluster's ranges and reads them there; set it in kubeadm-config's ClusterConfiguration (the range the cluster runs on), or give serviceCidr and podCidr`);
  }
  return { serviceRanges: service.split(",").map((r) => normalizeCidr(r.trim())), podRanges: pod.split(",").map((r) => normalizeCidr(r.trim())) };
}

/** A node's new address inside the cluster's own Service or Pod range would collide with what the cluster hands out. */
function refuseAddressesInRanges(config: MigrationConfig, ranges: string[][]): void {
  const problems = config.nodeAddresses.flatMap((c, i) => ranges
    .filter(([, range]) => familyOf(range) === familyOf(c.to) && cidrContains(range, c.to))
    .map(([kind, range]) => configProblem(`nodeAddresses[${i}].to`, `${c.to} lies in the cluster's ${kind} range ${range} (kubeadm-config), where the cluster gives out addresses of its own; choose an address outside it`)));
  if (problems.length > 0) throw new ConfigError(problems);
}

/**
 * The rejoin waits for kube-controller-manager to give the re-registered Node a subnet: a worker it gave none before
 * (allocation off) would wait for ever.
 */
function refuseWorkersWithoutSubnet(config: MigrationConfig, addressPlan: NodeAddressPlan, liveNodes: Map<string, { podCIDR?: string }>): void {
  const problems = addressPlan.steps
    .filter((s) => s.role === "worker" && liveNodes.has(s.name) && !liveNodes.get(s.name)!.podCIDR)
    .map((s) => configProblem(`nodeAddresses[${config.nodeAddresses.findIndex((c) => c.name === s.name)}].name`, `Node ${s.name} has no podCIDR: kube-controller-manager does not allocate node subnets here, and a run that changes node addresses only waits for the one it gives the re-registered Node; not supported on this cluster yet`));
  if (problems.length > 0) throw new ConfigError(problems);
}

function clusterIpOf(inventory: Inventory, namespace: string, name: string): string | undefined {
  const ip = inventory.services.find((s) => s.namespace === namespace && s.name === name)?.clusterIP;
  return isIpAddress(ip) ? ip : undefined;
}

/** The node mask the nodes' subnets show in the primary family; kubeadm's default when none holds one. */
function nodeMaskOf(inventory: Inventory, podRange: string): number {
  const subnet = inventory.nodes.map((n) => n.podCIDRs?.[0] ?? n.podCIDR).find((c): c is string => c !== undefined && familyOf(c) === familyOf(podRange));
  return subnet ? parseCidr(subnet).prefix : familyOf(podRange) === "IPv4" ? 24 : 64;
}
