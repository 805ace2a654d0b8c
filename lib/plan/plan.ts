import { AddressMapper } from "../net/addressMapper";
import { addressOffset, cidrContains, dnsServiceIP, isIpAddress, kubernetesServiceIP, parseCidr } from "../net/cidr";
import { allocateNodeSubnets } from "../net/nodeSubnets";
import { ConfigError, UserError } from "../config/errors";
import { Inventory, NodeInfo, ServiceInfo } from "./inventory";
import { MigrationConfig } from "../config/migrationConfig";
import { assertPlanConsistent } from "./planConsistency";
import { NodeMove, Plan, PlanWarning, ServiceMove } from "./planModel";
import { planRefusals } from "./planRefusals";
import { standInName } from "../serviceMove/planMoves";
import { isKubernetesService, serviceRefKey } from "../serviceMove/serviceRef";
import { planPhases } from "./phases";
import { calicoPoolPlan } from "./calicoPools";

/**
 * Pure: (MigrationConfig, Inventory) → Plan. No I/O, no clock, no randomness: the same inputs give byte-identical JSON.
 * Services and nodes are sorted by name before anything else so that the cluster's listing order cannot leak in.
 */

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Sorts by a key computed once per item (a comparator building strings would rebuild them n log n times). */
function sortedBy<T>(items: T[], key: (item: T) => string): T[] {
  return items
    .map((item) => ({ item, k: key(item) }))
    .sort((a, b) => compare(a.k, b.k))
    .map((e) => e.item);
}

/**
 * The plan `plan`, `gate` and the graph (index.ts) run: refuses, with one line per problem naming the config key
 * (exit 2), a config the cluster contradicts or a migration that could not finish — a missing DNS Service, a CNI or
 * Service range other than the cluster's, a node that must move but cannot be rolled. Every plan is then checked
 * to agree with itself (lib/plan/planConsistency.ts) and is never returned when it does not.
 */
export function buildPlan(config: MigrationConfig, inventory: Inventory): Plan {
  const plan = planCluster(config, inventory);
  const problems = planRefusals(config, inventory, plan);
  if (problems.length > 0) throw new ConfigError(problems);
  assertPlanConsistent(plan);
  return plan;
}

/**
 * The plan of the cluster as it is found, refusing nothing the cluster itself may show mid- or post-migration (a
 * missing DNS Service, a Node not in the config): verify holds the cluster to it and reports those as findings.
 * Still checked for consistency.
 */
export function planAsFound(config: MigrationConfig, inventory: Inventory): Plan {
  const plan = planCluster(config, inventory);
  assertPlanConsistent(plan);
  return plan;
}

function planCluster(config: MigrationConfig, inventory: Inventory): Plan {
  const warnings: PlanWarning[] = [];
  const cni = config.cni === "auto" ? inventory.cni.detected : config.cni;
  const newKubernetesIP = kubernetesServiceIP(config.serviceCidr.to);
  const services = planServices(config, inventory.services, newKubernetesIP, warnings);
  // What the summary says is what the table says: the kubernetes Service's old IP is the one it holds.
  const kubernetesRow = services.find(isKubernetesService);
  const kubernetesService = {
    oldClusterIP: kubernetesRow && isIpAddress(kubernetesRow.oldClusterIP) ? kubernetesRow.oldClusterIP : kubernetesServiceIP(config.serviceCidr.from),
    newClusterIP: newKubernetesIP,
  };
  const dnsKey = serviceRefKey(config.dns);
  const dnsMove = services.find((s) => s.namespace === config.dns.namespace && s.name === config.dns.name);
  const standInService = standInName(config.dns.name);
  const standIn = services.find((s) => s.namespace === config.dns.namespace && s.name === standInService);
  if (!dnsMove) {
    warnings.push(
      standIn && isIpAddress(standIn.oldClusterIP)
        ? { code: "DNS_SERVICE_MISSING", message: `the DNS Service was not found but its stand-in ${serviceRefKey(standIn)} holds ${standIn.oldClusterIP}: an interrupted dns/final-swap, which a re-run finishes from its journal`, object: `Service ${dnsKey}` }
        : { code: "DNS_SERVICE_MISSING", message: `the DNS Service was not found; it is planned at the conventional ${dnsServiceIP(config.serviceCidr.to)}`, object: `Service ${dnsKey}` },
    );
  }
  // Where the DNS Service ends up: its planned IP, else the IP it keeps; missing, where its stand-in stands.
  const dnsKeeps = dnsMove && isIpAddress(dnsMove.oldClusterIP) ? dnsMove.oldClusterIP : undefined;
  const dns = {
    namespace: config.dns.namespace,
    name: config.dns.name,
    oldClusterIP: dnsMove?.oldClusterIP,
    newClusterIP:
      dnsMove?.newClusterIP ?? dnsKeeps ?? (!dnsMove && standIn && isIpAddress(standIn.oldClusterIP) ? standIn.oldClusterIP : undefined) ?? dnsServiceIP(config.serviceCidr.to),
  };
  const nodes = planNodes(config, inventory.nodes, warnings);
  checkClusterConfig(config, inventory, warnings);
  const calicoPools = cni === "calico" ? calicoPoolPlan(inventory.cni, config.podCidr) : undefined;
  const phases = planPhases(config, cni, calicoPools, services, nodes, dnsKey, kubernetesService.oldClusterIP !== kubernetesService.newClusterIP);
  const oursSeconds = phases.reduce((sum, p) => sum + p.estimateSeconds, 0);
  const movingNodes = nodes.filter((n) => n.action === "move").length;
  const manualMinutes = phases.reduce(
    (sum, p) => {
      const factor = p.name === "nodes" ? movingNodes : 1;
      return { min: sum.min + p.manualMinutes.min * factor, max: sum.max + p.manualMinutes.max * factor };
    },
    { min: 0, max: 0 },
  );
  return {
    ...(config.services.strategy === "etcd-rewrite" ? { strategy: "etcd-rewrite" as const } : {}),
    serviceCidr: { ...config.serviceCidr },
    podCidr: { ...config.podCidr },
    kubernetesService,
    dns,
    cni,
    ...(calicoPools ? { calicoPools } : {}),
    services,
    nodes,
    phases,
    estimate: { oursSeconds, manualMinutes },
    warnings,
  };
}

/** Where a Service's ClusterIP lies, decided once per Service. */
type Placement = "no-ip" | "new-range" | "old-range" | "outside";

function planServices(config: MigrationConfig, live: ServiceInfo[], kubernetesNewIP: string, warnings: PlanWarning[]): ServiceMove[] {
  const { from, to } = config.serviceCidr;
  const mapper = new AddressMapper(from, to, [kubernetesNewIP]);
  const dnsKey = serviceRefKey(config.dns);
  // Between dns/temporary-service and dns/final-swap the DNS stand-in holds the DNS Service's final IP: a re-run
  // plans the DNS Service onto that IP again rather than around it.
  const standInKey = serviceRefKey({ namespace: config.dns.namespace, name: standInName(config.dns.name) });
  // Sorted in place by a key computed once per Service: at 500,000 Services wrapper arrays cost more than the sort.
  const entries = live.map((s) => ({ s, key: serviceRefKey(s), placement: placementOf(s, from, to), newIp: undefined as string | undefined }));
  // The apiserver lists in etcd key order, which is namespace/name order: then the sort is one linear check.
  if (!entries.every((e, i) => i === 0 || compare(entries[i - 1].key, e.key) <= 0)) entries.sort((a, b) => compare(a.key, b.key));
  refuseDuplicateClusterIPs(entries);

  const moves = (e: (typeof entries)[number]) => e.placement === "old-range" && !isKubernetesService(e.s);
  const dns = entries.find((e) => e.key === dnsKey);
  const standIn = dns && moves(dns) ? entries.find((e) => e.key === standInKey && e.placement === "new-range") : undefined;
  // Addresses already in the new range stay where they are: nothing may be mapped onto them.
  for (const e of entries) if (e.placement === "new-range" && !isKubernetesService(e.s) && e !== standIn) mapper.reserve(e.s.clusterIP!);
  // The DNS Service is mapped first so that it keeps its offset (10.96.0.10 → <new>.10) whatever else moves.
  if (dns && moves(dns)) dns.newIp = mapper.map(dns.s.clusterIP!);
  if (standIn) mapper.reserve(standIn.s.clusterIP!);
  for (const e of entries) if (moves(e) && e !== dns) e.newIp = mapper.map(e.s.clusterIP!);

  return entries.map(({ s, key, placement, newIp }): ServiceMove => {
    const move = (action: ServiceMove["action"], reason: string, keepsOffset: boolean, newClusterIP?: string): ServiceMove => ({
      namespace: s.namespace,
      name: s.name,
      type: s.type,
      oldClusterIP: s.clusterIP,
      newClusterIP,
      action,
      reason,
      keepsOffset,
    });
    if (isKubernetesService(s)) {
      // An expansion keeps the first IP: nothing to re-create.
      return s.clusterIP === kubernetesNewIP
        ? move("unchanged", "already at the new range's first IP", true, kubernetesNewIP)
        : move("recreate", "re-created by the apiserver at the new range's first IP", true, kubernetesNewIP);
    }
    if (key === standInKey && placement === "new-range") return move("unchanged", "the DNS stand-in; dns/final-swap removes it", true, s.clusterIP);
    if (s.type === "ExternalName") return move("unchanged", "ExternalName has no ClusterIP", false);
    if (s.clusterIP === "None") return move("unchanged", "headless: no ClusterIP to move", false);
    if (placement === "no-ip") return move("unchanged", "no ClusterIP", false);
    if (placement === "new-range") return move("unchanged", "already in the new range", true, s.clusterIP);
    if (placement === "outside") {
      warnings.push({ code: "SERVICE_OUTSIDE_OLD_RANGE", message: `ClusterIP ${s.clusterIP} lies in neither the old nor the new Service range; left alone`, object: `Service ${key}` });
      return move("unchanged", "ClusterIP outside the old range", false);
    }
    const newClusterIP = newIp!;
    const keepsOffset = addressOffset(to, newClusterIP) === addressOffset(from, s.clusterIP!);
    if (s.type === "LoadBalancer") {
      warnings.push({
        code: config.services.allowLoadBalancerRecreate ? "LOADBALANCER_RECREATE" : "LOADBALANCER_NEEDS_CONSENT",
        message: config.services.allowLoadBalancerRecreate
          ? "re-creating a LoadBalancer Service can give it a new external address"
          : "a LoadBalancer Service can get a new external address when re-created; the move is refused until cidr-migration:services.allowLoadBalancerRecreate is true",
        object: `Service ${key}`,
      });
    }
    if (!keepsOffset) {
      warnings.push({ code: "SERVICE_OFFSET_TAKEN", message: `the offset of ${s.clusterIP} is not free in ${to}; planned at ${newClusterIP} instead`, object: `Service ${key}` });
    }
    return move("recreate", "ClusterIP in the old range", keepsOffset, newClusterIP);
  });
}

function placementOf(s: ServiceInfo, from: string, to: string): Placement {
  if (s.type === "ExternalName" || !s.clusterIP || !isIpAddress(s.clusterIP)) return "no-ip";
  if (cidrContains(to, s.clusterIP)) return "new-range";
  return cidrContains(from, s.clusterIP) ? "old-range" : "outside";
}

/** The apiserver never hands one ClusterIP to two Services; an inventory that does is corrupt, and planning it would collide. */
function refuseDuplicateClusterIPs(entries: Array<{ s: ServiceInfo; key: string; placement: Placement }>): void {
  // One Set insertion per Service; the owners are looked up only on the (corrupt, rare) duplicate.
  const seen = new Set<string>();
  for (const { s, key, placement } of entries) {
    if (placement === "no-ip") continue;
    const before = seen.size;
    if (seen.add(s.clusterIP!).size === before) {
      const first = entries.find((e) => e.placement !== "no-ip" && e.s.clusterIP === s.clusterIP)!;
      throw new UserError(`Services ${first.key} and ${key} both claim ClusterIP ${s.clusterIP}; the inventory is inconsistent — take it again from the live cluster`);
    }
  }
}

function planNodes(config: MigrationConfig, live: NodeInfo[], warnings: PlanWarning[]): NodeMove[] {
  const { to, nodeMaskSize } = config.podCidr;
  const configured = new Map(config.nodes.map((n) => [n.name, n]));
  const sorted = sortedBy(live, (n) => n.name);
  const liveNames = new Set(sorted.map((n) => n.name));
  for (const n of sorted) {
    if (!configured.has(n.name)) {
      warnings.push({ code: "NODE_NOT_IN_CONFIG", message: "this node is in the cluster but not in cidr-migration:nodes; add it with its SSH host or it cannot be rolled", object: `Node ${n.name}` });
    }
  }
  for (const n of config.nodes) {
    if (!liveNames.has(n.name)) {
      warnings.push({ code: "CONFIG_NODE_NOT_IN_CLUSTER", message: "listed in cidr-migration:nodes but no such Node exists; check the name", object: `nodes: ${n.name}` });
    }
  }

  const keepsSubnet = new Set(
    sorted.filter((n) => n.podCIDR !== undefined && cidrContains(to, n.podCIDR) && parseCidr(n.podCIDR).prefix === nodeMaskSize),
  );
  const keeps = (n: NodeInfo) => keepsSubnet.has(n);
  const moving = sorted.filter((n) => !keeps(n));
  const subnets = allocateNodeSubnets(to, nodeMaskSize, moving.map((n) => n.name), [...keepsSubnet].map((n) => n.podCIDR!));
  const isControlPlane = (n: NodeInfo) => configured.get(n.name)?.role === "control-plane" || (!configured.has(n.name) && n.controlPlane);

  // Rollout order: the canary alone, then control-plane nodes one at a time (etcd quorum), then workers in batches.
  const canaryName = config.nodeRollout.canary ?? (moving.find((n) => !isControlPlane(n)) ?? moving[0])?.name;
  const ordered: Array<{ node: NodeInfo; batch: number; canary: boolean }> = [];
  let batch = 0;
  const canary = moving.find((n) => n.name === canaryName);
  if (canary) ordered.push({ node: canary, batch: batch++, canary: true });
  for (const n of moving) {
    if (n !== canary && isControlPlane(n)) ordered.push({ node: n, batch: batch++, canary: false });
  }
  const workers = moving.filter((n) => n !== canary && !isControlPlane(n));
  for (let i = 0; i < workers.length; i += config.nodeRollout.maxUnavailable) {
    for (const n of workers.slice(i, i + config.nodeRollout.maxUnavailable)) ordered.push({ node: n, batch, canary: false });
    batch++;
  }

  const moves: NodeMove[] = ordered.map(({ node, batch: b, canary: c }) => ({
    name: node.name,
    role: isControlPlane(node) ? "control-plane" : "worker",
    oldPodCIDR: node.podCIDR,
    newPodCIDR: subnets.get(node.name)!,
    action: "move",
    batch: b,
    canary: c,
  }));
  for (const n of keepsSubnet) {
    moves.push({ name: n.name, role: isControlPlane(n) ? "control-plane" : "worker", oldPodCIDR: n.podCIDR, newPodCIDR: n.podCIDR!, action: "unchanged", batch: -1, canary: false });
  }
  return moves;
}

function checkClusterConfig(config: MigrationConfig, inventory: Inventory, warnings: PlanWarning[]): void {
  const { podCidr, serviceCidr } = config;
  const proxyCidr = inventory.kubeProxy?.clusterCIDR;
  if (proxyCidr && proxyCidr !== podCidr.from && proxyCidr !== podCidr.to) {
    warnings.push({ code: "KUBE_PROXY_CIDR_MISMATCH", message: `kube-proxy clusterCIDR is ${proxyCidr}, expected podCidr.from ${podCidr.from}; check the config`, object: "ConfigMap kube-system/kube-proxy" });
  }
  const kubeadm = inventory.kubeadmConfig;
  if (kubeadm?.podSubnet && kubeadm.podSubnet !== podCidr.from && kubeadm.podSubnet !== podCidr.to) {
    warnings.push({ code: "KUBEADM_POD_SUBNET_MISMATCH", message: `networking.podSubnet is ${kubeadm.podSubnet}, expected podCidr.from ${podCidr.from}`, object: "ConfigMap kube-system/kubeadm-config" });
  }
  if (kubeadm?.serviceSubnet && kubeadm.serviceSubnet !== serviceCidr.from && kubeadm.serviceSubnet !== serviceCidr.to) {
    warnings.push({ code: "KUBEADM_SERVICE_SUBNET_MISMATCH", message: `networking.serviceSubnet is ${kubeadm.serviceSubnet}, expected serviceCidr.from ${serviceCidr.from}`, object: "ConfigMap kube-system/kubeadm-config" });
  }
}
