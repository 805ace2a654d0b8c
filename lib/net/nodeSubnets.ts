/**
 * Node subnets in a pod range: how many /nodeMaskSize subnets it holds, the n-th one, and the deterministic
 * allocation of one subnet per node that the plan hands out (lowest free first, skipping taken ranges).
 */
import { CidrError, ParsedCidr, formatIp, parseCidr, quote, toIndex } from "./cidr";

interface NodeSplit {
  pod: ParsedCidr;
  mask: number;
  count: bigint;
  subnetSize: bigint;
}

function splitForNodes(podCidr: string, nodeMaskSize: number): NodeSplit {
  const pod = parseCidr(podCidr);
  if (!Number.isInteger(nodeMaskSize) || nodeMaskSize < pod.prefix || nodeMaskSize > pod.bits) {
    throw new CidrError(
      `node mask size ${nodeMaskSize} does not fit pod range ${pod.cidr}: it must be a whole number from ${pod.prefix} to ${pod.bits}`,
      "out-of-range",
    );
  }
  return {
    pod,
    mask: nodeMaskSize,
    count: 1n << BigInt(nodeMaskSize - pod.prefix),
    subnetSize: 1n << BigInt(pod.bits - nodeMaskSize),
  };
}

function subnetText(split: NodeSplit, index: bigint): string {
  return `${formatIp(split.pod.family, split.pod.network + index * split.subnetSize)}/${split.mask}`;
}

/** How many /nodeMaskSize node subnets the pod range holds. */
export function subnetCount(podCidr: string, nodeMaskSize: number): bigint {
  return splitForNodes(podCidr, nodeMaskSize).count;
}

export function nthSubnet(podCidr: string, nodeMaskSize: number, n: bigint | number): string {
  const split = splitForNodes(podCidr, nodeMaskSize);
  const index = toIndex(n, "subnet index");
  if (index < 0n || index >= split.count) {
    throw new CidrError(
      `subnet index ${index} is outside ${split.pod.cidr}, which holds ${split.count} subnets of /${split.mask} (0 to ${split.count - 1n})`,
      "out-of-range",
    );
  }
  return subnetText(split, index);
}

/** Inclusive range of subnet indexes. */
interface IndexSpan {
  first: bigint;
  last: bigint;
}

/** Subnet indexes of the split that overlap any taken CIDR, sorted and merged. */
function blockedSpans(split: NodeSplit, taken: string[]): IndexSpan[] {
  const { pod, subnetSize } = split;
  const podEnd = pod.network + pod.size;
  const spans: IndexSpan[] = [];
  for (const text of taken) {
    const t = parseCidr(text);
    const tEnd = t.network + t.size;
    if (t.family !== pod.family || t.network >= podEnd || tEnd <= pod.network) continue;
    const from = (t.network > pod.network ? t.network : pod.network) - pod.network;
    const to = (tEnd < podEnd ? tEnd : podEnd) - 1n - pod.network;
    spans.push({ first: from / subnetSize, last: to / subnetSize });
  }
  spans.sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
  const merged: IndexSpan[] = [];
  for (const span of spans) {
    const previous = merged[merged.length - 1];
    if (previous && span.first <= previous.last + 1n) {
      if (span.last > previous.last) previous.last = span.last;
    } else {
      merged.push({ ...span });
    }
  }
  return merged;
}

/**
 * Deterministic node subnet allocation in the new pod range: nodes in the given (stable) order each get the lowest
 * free subnet of size /nodeMaskSize, skipping `taken` subnets (any subnet overlapping a taken CIDR is skipped).
 * Returns name -> subnet CIDR in input order. Throws CidrError "out-of-range" when the range is too small.
 */
export function allocateNodeSubnets(
  podCidr: string,
  nodeMaskSize: number,
  nodeNames: string[],
  taken: string[] = [],
): Map<string, string> {
  const split = splitForNodes(podCidr, nodeMaskSize);
  const blocked = blockedSpans(split, taken);
  const blockedCount = blocked.reduce((sum, span) => sum + span.last - span.first + 1n, 0n);
  const needed = BigInt(nodeNames.length);
  if (needed > split.count - blockedCount) {
    throw new CidrError(
      `pod range ${split.pod.cidr} holds ${split.count} subnets of /${split.mask} (${blockedCount} already taken), but ${needed} ${needed === 1n ? "node needs" : "nodes need"} one each; choose a larger pod range or a longer node mask size`,
      "out-of-range",
    );
  }
  const subnets = new Map<string, string>();
  let index = 0n;
  let nextBlocked = 0;
  for (const name of nodeNames) {
    if (subnets.has(name)) {
      // A silent overwrite would hand one node's subnet to nobody; the node list itself is wrong.
      throw new Error(`node name ${quote(name)} appears twice in the node list; node names must be unique`);
    }
    // Spans are sorted and merged, so skipping each one at most once keeps the whole walk linear.
    while (nextBlocked < blocked.length && blocked[nextBlocked].first <= index) {
      if (blocked[nextBlocked].last >= index) index = blocked[nextBlocked].last + 1n;
      nextBlocked++;
    }
    subnets.set(name, subnetText(split, index));
    index++;
  }
  return subnets;
}
