import { cidrContains, cidrSize, cidrsOverlap, familyOf, isIpAddress, parseCidr } from "../net/cidr";
import { subnetCount } from "../net/nodeSubnets";
import { Inventory } from "../plan/inventory";
import { Reader, show } from "./configReader";
import { FamilyRanges } from "./familyRanges";
import { NodeTarget } from "./migrationConfig";

/** Kubernetes refuses Service ranges with more than 20 host bits (/12 for IPv4, /108 for IPv6). */
const MAX_SERVICE_HOST_BITS = 20;
/** kube-controller-manager refuses a node mask more than 16 bits longer than the cluster CIDR. */
const MAX_NODE_MASK_DELTA = 16;

/**
 * The checks on one address family's ranges, each problem on that family's key; in a dual-stack config every
 * message also names the family (`named`). The node mask is checked as it is read (familyRanges.ts).
 */
export function checkFamilyRanges(r: Reader, ranges: FamilyRanges, named: boolean, nodes: NodeTarget[], inventory?: Inventory): void {
  const fail = (key: string, message: string) => r.fail(key, named ? `(${ranges.family}) ${message}` : message);
  checkRanges(fail, ranges);
  checkNodeAddresses(fail, ranges, nodes, inventory);
  checkCapacity(fail, ranges, nodes, inventory);
}

type Fail = (key: string, message: string) => void;

/** This family's ranges with their keys; an added family has no `from`. */
function labelled(x: FamilyRanges): Array<{ key: string; cidr: string; kind: "service" | "pod" }> {
  const all = [
    { key: x.keys.serviceFrom, cidr: x.service.from, kind: "service" as const },
    { key: x.keys.serviceTo, cidr: x.service.to, kind: "service" as const },
    { key: x.keys.podFrom, cidr: x.pod.from, kind: "pod" as const },
    { key: x.keys.podTo, cidr: x.pod.to, kind: "pod" as const },
  ];
  return all.filter((e): e is { key: string; cidr: string; kind: "service" | "pod" } => e.cidr !== undefined);
}

function checkRanges(fail: Fail, x: FamilyRanges): void {
  for (const [name, from, to, key] of [["serviceCidr", x.service.from, x.service.to, x.keys.serviceTo], ["podCidr", x.pod.from, x.pod.to, x.keys.podTo]] as const) {
    if (from === undefined || x.role === "keep") continue; // an add-family run keeps its primary family as it is
    if (from === to) {
      fail(key, `${show(to)} equals ${name}.from; nothing to migrate — set the new range`);
    } else if (cidrsOverlap(from, to) && !cidrContains(to, from)) {
      fail(key, `${show(to)} partly overlaps ${name}.from ${from}; the new range must be disjoint from the old one (a move) or contain it (an expansion)`);
    }
  }
  const all = labelled(x);
  for (const service of all.filter((e) => e.kind === "service")) {
    for (const pod of all.filter((e) => e.kind === "pod")) {
      if (cidrsOverlap(service.cidr, pod.cidr)) fail(service.key, `${show(service.cidr)} overlaps ${pod.key} ${pod.cidr}; Service and Pod ranges must not overlap`);
    }
  }
  const { bits, prefix } = parseCidr(x.service.to);
  if (bits - prefix > MAX_SERVICE_HOST_BITS) {
    fail(x.keys.serviceTo, `${show(x.service.to)} is larger than Kubernetes accepts for a Service range (at most /${bits - MAX_SERVICE_HOST_BITS}); choose a longer prefix`);
  }
}

/** The node mask of one family's new pod range; a message names the family when `family` is given. */
export function checkNodeMask(r: Reader, key: string, podTo: string, mask: number, family?: string): void {
  const fail = (message: string) => r.fail(key, family ? `(${family}) ${message}` : message);
  const { prefix, bits } = parseCidr(podTo);
  if (mask === 0) return;
  if (mask <= prefix) {
    fail(`${mask} must be longer than the pod prefix /${prefix} of ${podTo}`);
  } else if (mask - prefix > MAX_NODE_MASK_DELTA) {
    fail(`${mask} is more than ${MAX_NODE_MASK_DELTA} bits longer than /${prefix} (${podTo}); kube-controller-manager refuses it — use at most /${prefix + MAX_NODE_MASK_DELTA}`);
  } else if (mask > bits) {
    fail(`${mask} is longer than a ${bits}-bit address`);
  }
}

function checkNodeAddresses(fail: Fail, x: FamilyRanges, nodes: NodeTarget[], inventory?: Inventory): void {
  const addresses: Array<{ ip: string; what: string }> = [];
  nodes.forEach((n, i) => {
    if (isIpAddress(n.host)) addresses.push({ ip: n.host, what: `nodes[${i}].host (${n.name})` });
  });
  for (const node of inventory?.nodes ?? []) {
    for (const ip of node.internalIPs) addresses.push({ ip, what: `Node ${node.name} InternalIP` });
  }
  for (const { key, cidr } of labelled(x)) {
    const inside = addresses.filter(({ ip }) => familyOf(ip) === familyOf(cidr) && cidrContains(cidr, ip));
    if (inside.length === 0) continue;
    const listed = inside.slice(0, 3).map(({ ip, what }) => `${what} ${ip}`).join(", ");
    const more = inside.length > 3 ? ` and ${inside.length - 3} more` : "";
    fail(key, `${show(cidr)} contains ${listed}${more}; Service and Pod ranges must not overlap node addresses`);
  }
}

function checkCapacity(fail: Fail, x: FamilyRanges, nodes: NodeTarget[], inventory?: Inventory): void {
  const { prefix: podPrefix, bits: podBits } = parseCidr(x.pod.to);
  if (x.pod.nodeMaskSize > podPrefix && x.pod.nodeMaskSize <= podBits) {
    const nodeCount = Math.max(nodes.length, inventory?.nodes.length ?? 0);
    const capacity = subnetCount(x.pod.to, x.pod.nodeMaskSize);
    if (BigInt(nodeCount) > capacity) {
      fail(x.keys.podTo, `${show(x.pod.to)} holds ${capacity} node subnets of /${x.pod.nodeMaskSize} but the cluster has ${nodeCount} nodes; choose a larger range or a longer nodeMaskSize`);
    }
  }
  // The network address, the kubernetes Service's first IP and (IPv4) the broadcast address are never handed out.
  const serviceTo = x.service.to;
  const reserved = familyOf(serviceTo) === "IPv4" ? 3n : 2n;
  const size = cidrSize(serviceTo);
  const usable = size > reserved ? size - reserved : 0n;
  if (usable === 0n) {
    const { prefix, bits } = parseCidr(serviceTo);
    fail(x.keys.serviceTo, `${show(serviceTo)} leaves no address for a Service: a /${prefix} holds ${size}, and the network address, the kubernetes Service's first IP${reserved === 3n ? " and the broadcast address" : ""} are reserved; choose a shorter prefix, e.g. /${Math.min(prefix, bits - 12)}`);
  } else if (inventory && x.service.from !== undefined && x.role === "move") {
    const from = x.service.from;
    const moving = inventory.services.filter(
      (s) => s.clusterIP && s.clusterIP !== "None" && isIpAddress(s.clusterIP) && familyOf(s.clusterIP) === familyOf(from) && cidrContains(from, s.clusterIP) && !cidrContains(serviceTo, s.clusterIP),
    ).length;
    if (BigInt(moving) > usable) {
      fail(x.keys.serviceTo, `${show(serviceTo)} has room for ${usable} Services but ${moving} must move into it; choose a larger range`);
    }
  }
}
