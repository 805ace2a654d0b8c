import { closest } from "fastest-levenshtein";
import { cidrContains, familyOf, isIpAddress, normalizeIp } from "../net/cidr";
import { Inventory } from "../plan/inventory";
import { Reader, setCommand, show } from "./configReader";
import { FamilyRanges } from "./familyRanges";
import { NodeAddressChange, NodeTarget } from "./migrationConfig";

/**
 * nodeAddresses (issue 16): nodes whose IP changes, `[{name, from, to}]`. Read and checked here, every problem on
 * its own key; the order and the quorum rules are the planner's (lib/plan/nodeAddressPlan.ts).
 */

const ENTRY_KEYS = ["name", "from", "to", "prefix"];
const EXAMPLE = "'[{\"name\": \"worker-1\", \"from\": \"10.0.0.21\", \"to\": \"10.1.0.21\"}]'";

interface Entry {
  index: number;
  name?: string;
  node?: NodeTarget;
  from?: string;
  to?: string;
  prefix?: number;
}

/** The validated changes, in the order given; empty when the key is absent. */
export function readNodeAddresses(r: Reader, nodes: NodeTarget[], families: FamilyRanges[] | undefined, inventory?: Inventory): NodeAddressChange[] {
  const raw = r.raw("nodeAddresses");
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    r.fail("nodeAddresses", `expected a list of {name, from, to}, got ${show(raw)}; e.g. pulumi config set --path --json nodeAddresses ${EXAMPLE}`);
    return [];
  }
  const entries = raw.map((value, index) => readEntry(r, index, value, nodes));
  checkAgainstNodes(r, entries, inventory);
  checkTargets(r, entries, nodes, families, inventory);
  const valid = entries.filter((e): e is Required<Entry> => e.node !== undefined && e.from !== undefined && e.to !== undefined);
  return valid.map((e) => ({ name: e.name, from: e.from, to: e.to, role: e.node.role, ...(e.prefix !== undefined ? { prefix: e.prefix } : {}) }));
}

function readEntry(r: Reader, index: number, value: unknown, nodes: NodeTarget[]): Entry {
  const key = `nodeAddresses[${index}]`;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    r.fail(key, `expected {name, from, to}, got ${show(value)}`);
    return { index };
  }
  const e = value as Record<string, unknown>;
  r.unknownKeys(key, e, ENTRY_KEYS);
  const name = r.string(`${key}.name`, e.name, { required: true, example: "worker-1" });
  let node: NodeTarget | undefined;
  if (name !== undefined && nodes.length > 0) {
    node = nodes.find((n) => n.name === name);
    if (!node) r.fail(`${key}.name`, `${show(name)} is not in nodes; did you mean "${closest(name, nodes.map((n) => n.name))}"? Each node whose address changes must be listed in nodes`);
  }
  const from = address(r, `${key}.from`, e.from, "10.0.0.21");
  const to = address(r, `${key}.to`, e.to, "10.1.0.21");
  const prefix = e.prefix === undefined ? undefined : r.integer(`${key}.prefix`, e.prefix, { min: 1, max: to !== undefined && familyOf(to) === "IPv4" ? 32 : 128, fallback: 0 }) || undefined;
  if (from !== undefined && to !== undefined) {
    if (familyOf(from) !== familyOf(to)) {
      r.fail(`${key}.to`, `${show(to)} is ${familyOf(to)} but ${key}.from ${from} is ${familyOf(from)}; an address changes within its family: give an ${familyOf(from)} address`);
      return { index, name, node, from };
    }
    if (from === to) {
      r.fail(`${key}.to`, `${show(to)} equals ${key}.from; nothing to change — set the node's new address, or remove the entry`);
      return { index, name, node, from };
    }
  }
  return { index, name, node, from, to, prefix };
}

/** An IPv4 or IPv6 address, normalized (FD00::1 → fd00::1), so that comparisons below are exact. */
function address(r: Reader, key: string, value: unknown, example: string): string | undefined {
  const text = r.string(key, value, { required: true, example });
  if (text === undefined) return undefined;
  if (!isIpAddress(text.trim())) {
    r.fail(key, `${show(text)} is not an IP address; give the node's IPv4 or IPv6 address, e.g. ${setCommand(key, example)}`);
    return undefined;
  }
  return normalizeIp(text.trim());
}

const normalized = (ip: string) => (isIpAddress(ip) ? normalizeIp(ip) : ip);

/**
 * `from` is the address the node has now: one of its InternalIPs, checked once discovery ran. Its SSH host is no
 * witness: a node is often reached at a management address (or a bastion's forward) that the change leaves alone.
 */
function checkAgainstNodes(r: Reader, entries: Entry[], inventory?: Inventory): void {
  const seen = new Map<string, number>();
  for (const e of entries) {
    if (e.name === undefined) continue;
    const key = `nodeAddresses[${e.index}]`;
    const first = seen.get(e.name);
    if (first !== undefined) r.fail(`${key}.name`, `${show(e.name)} is already changed by nodeAddresses[${first}]; give each node one entry`);
    else seen.set(e.name, e.index);
    if (!e.node || e.from === undefined) continue;
    const witnesses: string[] = [];
    const live = inventory?.nodes.find((n) => n.name === e.name);
    // a re-run after the change finds the node at its new address: the entry has nothing left to do
    if (live && live.internalIPs.length > 0 && !live.internalIPs.map(normalized).includes(e.from) && !(e.to !== undefined && live.internalIPs.map(normalized).includes(e.to))) {
      witnesses.push(`Node ${e.name} has InternalIP ${live.internalIPs.join(", ")}`);
    }
    if (witnesses.length > 0) {
      r.fail(`${key}.from`, `${show(e.from)} is not ${e.name}'s current address: ${witnesses.join("; ")}; set ${key}.from to the address the node has now`);
    }
  }
}

/**
 * `to` must be free: outside every Service and Pod range, old and new, and no other node's address, current or
 * planned. A swap between two nodes is refused too: for part of the rollout the address would be held twice.
 */
function checkTargets(r: Reader, entries: Entry[], nodes: NodeTarget[], families: FamilyRanges[] | undefined, inventory?: Inventory): void {
  const ranges: Array<{ key: string; cidr: string }> = [];
  for (const f of families ?? []) {
    if (f.service.from) ranges.push({ key: f.keys.serviceFrom, cidr: f.service.from });
    ranges.push({ key: f.keys.serviceTo, cidr: f.service.to });
    if (f.pod.from) ranges.push({ key: f.keys.podFrom, cidr: f.pod.from });
    ranges.push({ key: f.keys.podTo, cidr: f.pod.to });
  }
  const current: Array<{ node: string; ip: string; what: string }> = [];
  nodes.forEach((n, i) => {
    if (isIpAddress(n.host)) current.push({ node: n.name, ip: normalizeIp(n.host), what: `nodes[${i}].host (${n.name})` });
  });
  for (const n of inventory?.nodes ?? []) {
    for (const ip of n.internalIPs) if (isIpAddress(ip)) current.push({ node: n.name, ip: normalizeIp(ip), what: `Node ${n.name} InternalIP` });
  }
  const planned = new Map<string, number>();
  for (const e of entries) {
    if (e.to === undefined) continue;
    const key = `nodeAddresses[${e.index}].to`;
    const to = e.to;
    const inRange = ranges.find((x) => familyOf(x.cidr) === familyOf(to) && cidrContains(x.cidr, to));
    if (inRange) r.fail(key, `${show(to)} lies in ${inRange.key} ${inRange.cidr}; a node address must be outside every Service and Pod range, old and new — choose one from the nodes' network`);
    const taken = current.find((c) => c.ip === to && c.node !== e.name);
    if (taken) r.fail(key, `${show(to)} is already ${taken.what}'s address; choose an address no other node holds`);
    const other = planned.get(to);
    if (other !== undefined) r.fail(key, `${show(to)} is also nodeAddresses[${other}].to; each node needs its own address`);
    else planned.set(to, e.index);
  }
}
