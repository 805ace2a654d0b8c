import { AddressMapper } from "../net/addressMapper";
import { addressOffset, cidrContains, dnsServiceIP, familyOf, isIpAddress, kubernetesServiceIP, parseCidr } from "../net/cidr";
import { allocateNodeSubnets } from "../net/nodeSubnets";
import { ConfigError, UserError } from "../config/errors";
import { Inventory, NodeInfo, ServiceInfo } from "./inventory";
import { MigrationConfig, RangeMigrationConfig, movesRanges } from "../config/migrationConfig";
import { rangeLists } from "../config/rangeLists";
import { assertPlanConsistent } from "./planConsistency";
import { NodeMove, Plan, PlanWarning, ServiceMove } from "./planModel";
import { planRefusals } from "./planRefusals";
import { refuseWithoutStandInRoom } from "./standInRoom";
import { standInName } from "../serviceMove/planMoves";
import { isKubernetesService, serviceRefKey } from "../serviceMove/serviceRef";
import { canMoveInPlace } from "../serviceMove/inPlace";
import { planPhases } from "./phases";
import { calicoPoolPlan } from "./calicoPools";
import { largeServiceMoveWarning } from "./largeServiceMove";

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
  const ranged = rangeConfig(config);
  const plan = planCluster(ranged, inventory);
  const problems = planRefusals(ranged, inventory, plan);
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
  const plan = planCluster(rangeConfig(config), inventory);
  assertPlanConsistent(plan);
  return plan;
}

/** The CIDR plan is a range move's: a run that changes node addresses only has the node address plan alone. */
function rangeConfig(config: MigrationConfig): RangeMigrationConfig {
  if (!movesRanges(config)) throw new UserError("this run changes node addresses only (nodeAddresses without serviceCidr and podCidr): it has no Service or Pod range plan; its plan is the node address plan (lib/plan/nodeAddressPlan)");
  return config;
}

function planCluster(config: RangeMigrationConfig, inventory: Inventory): Plan {
  const warnings: PlanWarning[] = [];
  // OpenShift's network operator owns its ranges: validateConfig lets platform openshift reach only the runbook
  if (config.platform === "openshift" || config.cni === "ovn-kubernetes") throw new UserError(`platform "openshift" (cni "ovn-kubernetes") has no CIDR plan: \`cidr-migration plan\` prints its node address runbook only`);
  const cni = config.cni === "auto" ? inventory.cni.detected : config.cni;
  const newKubernetesIP = kubernetesServiceIP(config.serviceCidr.to);
  const services = planServices(config, inventory.services, newKubernetesIP, warnings);
  if (config.services.moveInPlace) refuseWithoutStandInRoom(services, [config.serviceCidr.to, ...(config.secondFamily ? [config.secondFamily.serviceCidr.to] : [])]);
  warnings.push(...largeServiceMoveWarning(config, services));
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
  const phases = planPhases(config, cni, calicoPools, services, nodes, dnsKey, kubernetesService.oldClusterIP !== kubernetesService.newClusterIP, { namespace: inventory.cni.flannelNamespace, daemonSet: inventory.cni.flannelDaemonSet });
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
    ...(config.secondFamily ? { secondFamily: structuredClone(config.secondFamily) } : {}),
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

/** Where a ClusterIP lies against its family's ranges, decided once per address. */
type Placement = "new-range" | "old-range" | "outside";

/** One address family's Service range in a run; `from` equals `to` for a family the run keeps or adds. */
interface FamilyRange {
  from: string;
  to: string;
  mapper: AddressMapper;
}

/** One ClusterIP of a Service, with its family's range (undefined: a family the run does not know) and where it ends. */
interface PlannedAddress {
  ip: string;
  range?: FamilyRange;
  placement: Placement;
  newIp?: string;
}

function placementIn(range: FamilyRange | undefined, ip: string): Placement {
  if (!range) return "outside";
  if (cidrContains(range.to, ip)) return "new-range";
  return cidrContains(range.from, ip) ? "old-range" : "outside";
}

/** The Service ranges of the run, primary family first; an address picks its own family's (issue 17). */
function familyRanges(config: RangeMigrationConfig, kubernetesNewIP: string): { primary: FamilyRange; rangeOf: (ip: string) => FamilyRange | undefined } {
  const { from, to } = config.serviceCidr;
  const primary = { from, to, mapper: new AddressMapper(from, to, [kubernetesNewIP]) };
  const second = config.secondFamily;
  if (!second) return { primary, rangeOf: () => primary };
  const secondFrom = second.serviceCidr.from ?? second.serviceCidr.to;
  const secondRange = { from: secondFrom, to: second.serviceCidr.to, mapper: new AddressMapper(secondFrom, second.serviceCidr.to) };
  const primaryFamily = familyOf(to);
  return { primary, rangeOf: (ip) => (familyOf(ip) === primaryFamily ? primary : familyOf(ip) === second.family ? secondRange : undefined) };
}

/**
 * A Service as the planner sees it: its first ClusterIP (spec.clusterIP) inline, as a PlannedAddress (no `ip`: it
 * holds none), and a dual-stack Service's second apart. One object per Service: at 500,000 Services an array of
 * addresses each cost the planner a third more time, in the garbage collector.
 */
interface Entry extends Partial<PlannedAddress> {
  s: ServiceInfo;
  key: string;
  second?: PlannedAddress;
}

const firstOf = (e: Entry): PlannedAddress | undefined => (e.ip === undefined ? undefined : (e as PlannedAddress));
/** Every ClusterIP of the Service, in its own order; for the rarer paths (warnings, dual-stack rows). */
const addressesOf = (e: Entry): PlannedAddress[] => (e.ip === undefined ? [] : e.second ? [e as PlannedAddress, e.second] : [e as PlannedAddress]);

function planServices(config: RangeMigrationConfig, live: ServiceInfo[], kubernetesNewIP: string, warnings: PlanWarning[]): ServiceMove[] {
  const { primary, rangeOf } = familyRanges(config, kubernetesNewIP);
  const dualStack = config.secondFamily !== undefined;
  const dnsKey = serviceRefKey(config.dns);
  // Between dns/temporary-service and dns/final-swap the DNS stand-in holds the DNS Service's final IP: a re-run
  // plans the DNS Service onto that IP again rather than around it.
  const standInKey = serviceRefKey({ namespace: config.dns.namespace, name: standInName(config.dns.name) });
  // A single-stack run plans spec.clusterIP; a dual-stack one every address in spec.clusterIPs, each in its family.
  const entryOf = (s: ServiceInfo): Entry => {
    const key = serviceRefKey(s);
    if (s.type === "ExternalName" || !s.clusterIP || !isIpAddress(s.clusterIP)) return { s, key };
    if (!dualStack) return { s, key, ip: s.clusterIP, range: primary, placement: placementIn(primary, s.clusterIP) };
    const [first, second] = (s.clusterIPs?.length ? s.clusterIPs : [s.clusterIP]).filter(isIpAddress);
    const range = rangeOf(first);
    const entry: Entry = { s, key, ip: first, range, placement: placementIn(range, first) };
    if (second !== undefined) {
      const secondRange = rangeOf(second);
      entry.second = { ip: second, range: secondRange, placement: placementIn(secondRange, second) };
    }
    return entry;
  };
  // Sorted in place by a key computed once per Service: at 500,000 Services wrapper arrays cost more than the sort.
  const entries = live.map(entryOf);
  // The apiserver lists in etcd key order, which is namespace/name order: then the sort is one linear check.
  if (!entries.every((e, i) => i === 0 || compare(entries[i - 1].key, e.key) <= 0)) entries.sort((a, b) => compare(a.key, b.key));
  refuseDuplicateClusterIPs(entries);

  const inNewRange = (e: Entry) => e.ip !== undefined && e.placement === "new-range" && (e.second === undefined || e.second.placement === "new-range");
  const moves = (e: Entry) => !isKubernetesService(e.s) && (e.placement === "old-range" || e.second?.placement === "old-range");
  const mapIfOld = (a: PlannedAddress | undefined) => {
    if (a?.placement === "old-range") a.newIp = a.range!.mapper.map(a.ip);
  };
  const reserveIfNew = (a: PlannedAddress | undefined) => {
    if (a?.placement === "new-range") a.range!.mapper.reserve(a.ip);
  };
  const mapOld = (e: Entry) => {
    mapIfOld(firstOf(e));
    mapIfOld(e.second);
  };
  const reserve = (e: Entry) => {
    reserveIfNew(firstOf(e));
    reserveIfNew(e.second);
  };
  const dns = entries.find((e) => e.key === dnsKey);
  const standIn = dns && moves(dns) ? entries.find((e) => e.key === standInKey && inNewRange(e)) : undefined;
  // Addresses already in the new range stay where they are: nothing may be mapped onto them.
  for (const e of entries) if (!isKubernetesService(e.s) && e !== standIn) reserve(e);
  // The DNS Service is mapped first so that it keeps its offset (10.96.0.10 → <new>.10) whatever else moves.
  if (dns && moves(dns)) mapOld(dns);
  if (standIn) reserve(standIn);
  for (const e of entries) if (moves(e) && e !== dns) mapOld(e);

  return entries.map((e): ServiceMove => {
    const { s, key } = e;
    const move = (action: ServiceMove["action"], reason: string, keepsOffset: boolean, newClusterIP?: string): ServiceMove => {
      const row: ServiceMove = { namespace: s.namespace, name: s.name, type: s.type, oldClusterIP: s.clusterIP, newClusterIP, action, reason, keepsOffset };
      if (e.second) {
        row.oldClusterIPs = [e.ip!, e.second.ip];
        row.newClusterIPs = [e.newIp ?? e.ip!, e.second.newIp ?? e.second.ip];
      }
      return row;
    };
    if (isKubernetesService(s)) {
      // An expansion keeps the first IP: nothing to re-create.
      return s.clusterIP === kubernetesNewIP
        ? move("unchanged", "already at the new range's first IP", true, kubernetesNewIP)
        : move("recreate", "re-created by the apiserver at the new range's first IP", true, kubernetesNewIP);
    }
    if (key === standInKey && inNewRange(e)) return move("unchanged", "the DNS stand-in; dns/final-swap removes it", true, s.clusterIP);
    if (s.type === "ExternalName") return move("unchanged", "ExternalName has no ClusterIP", false);
    if (s.clusterIP === "None") return move("unchanged", "headless: no ClusterIP to move", false);
    if (e.ip === undefined) return move("unchanged", "no ClusterIP", false);
    if (e.placement === "outside" || e.second?.placement === "outside") {
      for (const a of addressesOf(e)) {
        if (a.placement !== "outside") continue;
        const where = a.range ? "in neither the old nor the new Service range" : `of a family (${familyOf(a.ip)}) the run does not configure`;
        warnings.push({ code: "SERVICE_OUTSIDE_OLD_RANGE", message: `ClusterIP ${a.ip} lies ${where}; left alone`, object: `Service ${key}` });
      }
    }
    if (!moves(e)) {
      return inNewRange(e) ? move("unchanged", "already in the new range", true, s.clusterIP) : move("unchanged", "ClusterIP outside the old range", false);
    }
    let keepsOffset = true;
    for (const a of e.second ? addressesOf(e) : [e as PlannedAddress]) {
      if (a.newIp === undefined || addressOffset(a.range!.to, a.newIp) === addressOffset(a.range!.from, a.ip)) continue;
      keepsOffset = false;
      warnings.push({ code: "SERVICE_OFFSET_TAKEN", message: `the offset of ${a.ip} is not free in ${a.range!.to}; planned at ${a.newIp} instead`, object: `Service ${key}` });
    }
    if (s.type === "LoadBalancer") {
      warnings.push({
        code: config.services.allowLoadBalancerRecreate ? "LOADBALANCER_RECREATE" : "LOADBALANCER_NEEDS_CONSENT",
        message: config.services.allowLoadBalancerRecreate
          ? "re-creating a LoadBalancer Service can give it a new external address"
          : "a LoadBalancer Service can get a new external address when re-created; the move is refused until cidr-migration:services.allowLoadBalancerRecreate is true",
        object: `Service ${key}`,
      });
    }
    // what the mover does at run time, unless admission refuses the ExternalName (then it re-creates, with a warning)
    if (config.services.moveInPlace && e !== dns) {
      if (canMoveInPlace(s.type, s.hasSelector, e.second ? 2 : 1)) {
        return { ...move("recreate", "ClusterIP in the old range; moved in place, the same object (services.moveInPlace)", keepsOffset, e.newIp ?? e.ip), inPlace: true };
      }
      return move("recreate", "ClusterIP in the old range; re-created: only a single-stack ClusterIP Service with a selector moves in place", keepsOffset, e.newIp ?? e.ip);
    }
    return move("recreate", "ClusterIP in the old range", keepsOffset, e.newIp ?? e.ip);
  });
}

/** The apiserver never hands one ClusterIP to two Services; an inventory that does is corrupt, and planning it would collide. */
function refuseDuplicateClusterIPs(entries: readonly Entry[]): void {
  // One Set insertion per address; the owners are looked up only on the (corrupt, rare) duplicate.
  const seen = new Set<string>();
  const claim = (ip: string | undefined, key: string) => {
    if (ip === undefined) return;
    const before = seen.size;
    if (seen.add(ip).size !== before) return;
    const first = entries.find((e) => e.ip === ip || e.second?.ip === ip)!;
    throw new UserError(`Services ${first.key} and ${key} both claim ClusterIP ${ip}; the inventory is inconsistent — take it again from the live cluster`);
  };
  for (const e of entries) {
    claim(e.ip, e.key);
    claim(e.second?.ip, e.key);
  }
}

function planNodes(config: RangeMigrationConfig, live: NodeInfo[], warnings: PlanWarning[]): NodeMove[] {
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

  // A node keeps a subnet already in its family's new range, at the node mask; it moves when any family does not.
  const fits = (range: string, mask: number, subnet: string | undefined) => subnet !== undefined && cidrContains(range, subnet) && parseCidr(subnet).prefix === mask;
  const keepsPrimary = new Set(sorted.filter((n) => fits(to, nodeMaskSize, n.podCIDRs?.[0] ?? n.podCIDR)));
  const second = config.secondFamily?.podCidr;
  const secondOf = (n: NodeInfo) => n.podCIDRs?.[1];
  const keepsSecond = new Set(second ? sorted.filter((n) => fits(second.to, second.nodeMaskSize, secondOf(n))) : sorted);
  const keeps = (n: NodeInfo) => keepsPrimary.has(n) && keepsSecond.has(n);
  const moving = sorted.filter((n) => !keeps(n));
  const primaryOf = (n: NodeInfo) => n.podCIDRs?.[0] ?? n.podCIDR;
  const subnets = allocateNodeSubnets(to, nodeMaskSize, moving.filter((n) => !keepsPrimary.has(n)).map((n) => n.name), [...keepsPrimary].map((n) => primaryOf(n)!));
  const secondSubnets = second
    ? allocateNodeSubnets(second.to, second.nodeMaskSize, moving.filter((n) => !keepsSecond.has(n)).map((n) => n.name), [...keepsSecond].map((n) => secondOf(n)!))
    : undefined;
  const newPrimary = (n: NodeInfo) => (keepsPrimary.has(n) ? primaryOf(n)! : subnets.get(n.name)!);
  const familyPair = (n: NodeInfo, newPodCIDR: string) =>
    secondSubnets
      ? { oldPodCIDRs: n.podCIDRs ?? (n.podCIDR ? [n.podCIDR] : []), newPodCIDRs: [newPodCIDR, keepsSecond.has(n) ? secondOf(n)! : secondSubnets.get(n.name)!] }
      : {};
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
    newPodCIDR: newPrimary(node),
    action: "move",
    batch: b,
    canary: c,
    ...familyPair(node, newPrimary(node)),
  }));
  for (const n of sorted.filter(keeps)) {
    moves.push({ name: n.name, role: isControlPlane(n) ? "control-plane" : "worker", oldPodCIDR: n.podCIDR, newPodCIDR: n.podCIDR!, action: "unchanged", batch: -1, canary: false, ...familyPair(n, n.podCIDR!) });
  }
  return moves;
}

function checkClusterConfig(config: RangeMigrationConfig, inventory: Inventory, warnings: PlanWarning[]): void {
  // An add-family run's cluster still holds the first family alone.
  const { pod: { from: podFrom, to: podTo }, service: { from: serviceFrom, to: serviceTo } } = rangeLists(config);
  const proxyCidr = inventory.kubeProxy?.clusterCIDR;
  if (proxyCidr && proxyCidr !== podFrom && proxyCidr !== podTo) {
    warnings.push({ code: "KUBE_PROXY_CIDR_MISMATCH", message: `kube-proxy clusterCIDR is ${proxyCidr}, expected podCidr.from ${podFrom}; check the config`, object: "ConfigMap kube-system/kube-proxy" });
  }
  const kubeadm = inventory.kubeadmConfig;
  if (kubeadm?.podSubnet && kubeadm.podSubnet !== podFrom && kubeadm.podSubnet !== podTo) {
    warnings.push({ code: "KUBEADM_POD_SUBNET_MISMATCH", message: `networking.podSubnet is ${kubeadm.podSubnet}, expected podCidr.from ${podFrom}`, object: "ConfigMap kube-system/kubeadm-config" });
  }
  if (kubeadm?.serviceSubnet && kubeadm.serviceSubnet !== serviceFrom && kubeadm.serviceSubnet !== serviceTo) {
    warnings.push({ code: "KUBEADM_SERVICE_SUBNET_MISMATCH", message: `networking.serviceSubnet is ${kubeadm.serviceSubnet}, expected serviceCidr.from ${serviceFrom}`, object: "ConfigMap kube-system/kubeadm-config" });
  }
}
