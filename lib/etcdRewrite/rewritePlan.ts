import { cidrContains, normalizeIp } from "../net/cidr";
import { AddressChange } from "./addressChange";
import { RewrittenKind, unownedChanges } from "./exactRewrite";
import { ipAddressFrom, parentRefOf } from "./ipAddressRecord";
import { rewriteNode, storedPodCidrs } from "./nodeRecord";
import { rewriteRangeAllocation } from "./rangeAllocationRecord";
import { rewriteServiceCidr, storedServiceCidrRanges } from "./serviceCidrRecord";
import { rewriteService, storedClusterIPs } from "./serviceRecord";
import { readStoredValue, StoredValue } from "./storedValue";

/**
 * From what etcd holds now to the transactions that move it: pure, so a re-run plans only what is left. Each
 * transaction is conditioned on the mod_revision of every key it touches (or on the key being absent), and every
 * rewritten value has passed the exactness proof (exactRewrite.ts) before it is planned.
 */

export interface EtcdEntry {
  key: string;
  value: Buffer;
  modRevision: string;
}

export interface RewriteTargets {
  /** The apiserver's --etcd-prefix (default "/registry"). */
  prefix: string;
  serviceCidr: AddressChange;
  /** Keyed "namespace/name": each Service's ClusterIP moves (the kubernetes and DNS Services included). */
  services: Map<string, AddressChange[]>;
  podCidr?: AddressChange;
  /** Keyed by Node name: each Node's podCIDR moves. */
  nodes: Map<string, AddressChange[]>;
}

/** A revision of "0" means the key must not exist, etcd's own convention for create-only writes. */
export interface EtcdCompare {
  key: string;
  modRevision: string;
}

export interface EtcdTxn {
  /** What the transaction moves, in a user's words. */
  object: string;
  compare: EtcdCompare[];
  put: { key: string; value: Buffer }[];
  delete: string[];
}

export interface RewritePlan {
  txns: EtcdTxn[];
  /** Why the rewrite must not start; each names the etcd key or object. Empty when it may. */
  refusals: string[];
  /** Objects already moved (a re-run after a crash). */
  alreadyMoved: number;
}

export function keysOf(prefix: string) {
  return {
    services: `${prefix}/services/specs/`,
    nodes: `${prefix}/minions/`,
    ipAddresses: `${prefix}/ipaddresses/`,
    serviceCidrs: `${prefix}/servicecidrs/`,
    serviceIpRange: `${prefix}/ranges/serviceips`,
  };
}

interface Decoded extends EtcdEntry {
  stored: StoredValue;
}

const ABSENT = "0";

function describeFormat(entry: Decoded): string | undefined {
  const s = entry.stored;
  if (s.format === "encrypted") return `${entry.key} is encrypted at rest (k8s:enc:${s.provider}); the rewrite cannot read it. Use services.strategy: recreate`;
  if (s.format === "unknown") return `${entry.key} is stored as ${s.reason}; the rewrite refuses what it has not been tested on. Use services.strategy: recreate`;
  return undefined;
}

function proven(kind: RewrittenKind, object: string, before: Buffer, after: Buffer, refusals: string[]): boolean {
  const unowned = unownedChanges(kind, before, after);
  if (unowned.length > 0) refusals.push(`${object}: the rewrite would change fields it does not own (${unowned.join(", ")}); nothing was written`);
  return unowned.length === 0;
}

interface Progress {
  toRewrite: AddressChange[];
  done: boolean;
  stray: string[];
}

/**
 * Which of the planned changes still apply to these stored values, and values in the old range that are neither
 * old nor new (none when no range moves).
 */
function progressOf(stored: string[], changes: AddressChange[], oldRange: string | undefined): Progress {
  const toRewrite = changes.filter((c) => stored.includes(c.from));
  const done = changes.every((c) => stored.includes(c.to));
  const planned = new Set(changes.flatMap((c) => [c.from, c.to]));
  const stray = oldRange === undefined ? [] : stored.filter((v) => !planned.has(v) && cidrContains(oldRange, v));
  return { toRewrite, done, stray };
}

type Keys = ReturnType<typeof keysOf>;
type Identity = { newUid(): string; now: Date };

/** What one kind's planner adds: transactions, refusals, and the objects a crashed run already moved. */
interface KindPlan {
  txns: EtcdTxn[];
  refusals: string[];
  alreadyMoved: number;
}

const emptyKindPlan = (): KindPlan => ({ txns: [], refusals: [], alreadyMoved: 0 });

/** A transaction that rewrites one key, conditioned on its mod_revision. */
function oneKeyTxn(object: string, entry: Decoded, value: Buffer): EtcdTxn {
  return { object, compare: [{ key: entry.key, modRevision: entry.modRevision }], put: [{ key: entry.key, value }], delete: [] };
}

export function planRewrite(entries: EtcdEntry[], targets: RewriteTargets, identity: Identity): RewritePlan {
  const keys = keysOf(targets.prefix);
  const decoded: Decoded[] = entries.map((e) => ({ ...e, stored: readStoredValue(e.value) }));
  const formatRefusals = decoded.map(describeFormat).filter((r): r is string => r !== undefined);
  if (formatRefusals.length > 0) return { txns: [], refusals: formatRefusals, alreadyMoved: 0 };

  const under = (prefix: string) => decoded.filter((e) => e.key.startsWith(prefix));
  const services = planServices(under(keys.services), under(keys.ipAddresses), keys, targets, identity);
  const parts = [
    services,
    planNodes(under(keys.nodes), keys, targets),
    planDefaultServiceCidr(under(keys.serviceCidrs), keys, targets.serviceCidr),
    planRangeAllocation(decoded.find((e) => e.key === keys.serviceIpRange), targets.serviceCidr, services.finalClusterIPs),
  ];
  const refusals = parts.flatMap((p) => p.refusals);
  const alreadyMoved = parts.reduce((n, p) => n + p.alreadyMoved, 0);
  return refusals.length > 0 ? { txns: [], refusals, alreadyMoved } : { txns: parts.flatMap((p) => p.txns), refusals, alreadyMoved };
}

/** Each Service's ClusterIPs, and on 1.33+ its IPAddress objects in the same transaction. */
function planServices(entries: Decoded[], ipEntries: Decoded[], keys: Keys, targets: RewriteTargets, identity: Identity): KindPlan & { finalClusterIPs: string[] } {
  const plan = { ...emptyKindPlan(), finalClusterIPs: [] as string[] };
  const ipAddresses = new Map(ipEntries.map((e) => [e.key.slice(keys.ipAddresses.length), e]));
  for (const entry of entries) {
    const ref = entry.key.slice(keys.services.length);
    const object = `Service ${ref}`;
    const ips = storedClusterIPs(entry.stored);
    const changes = targets.services.get(ref) ?? [];
    const { toRewrite, done, stray } = progressOf(ips, changes, targets.serviceCidr.from);
    if (stray.length > 0) {
      plan.refusals.push(`${object} (${entry.key}) has ClusterIP ${stray.join(", ")} in the old range, which the plan does not move; run the plan again`);
      continue;
    }
    plan.finalClusterIPs.push(...ips.map((ip) => changes.find((c) => c.from === ip)?.to ?? ip));
    if (toRewrite.length === 0) {
      if (changes.length > 0 && done) plan.alreadyMoved++;
      else if (changes.length > 0) plan.refusals.push(`${object} has ClusterIP ${ips.join(", ") || "none"}, neither the planned old nor new one; run the plan again`);
      continue;
    }
    const after = rewriteService(entry.value, entry.stored, toRewrite);
    if (!proven("Service", object, entry.value, after, plan.refusals)) continue;
    const txn = oneKeyTxn(`${object} ${toRewrite.map((c) => `${c.from} → ${c.to}`).join(", ")}`, entry, after);
    if (ipAddresses.size > 0) for (const change of toRewrite) moveIpAddress(txn, ref, change, ipAddresses, keys, identity, plan.refusals);
    plan.txns.push(txn);
  }
  return plan;
}

/**
 * Adds to a Service's transaction the move of its IPAddress: the apiserver's own object for the old IP deleted, one
 * made from it for the new IP created (or, after a crash between the two, the new one already there kept).
 */
function moveIpAddress(txn: EtcdTxn, ref: string, change: AddressChange, ipAddresses: Map<string, Decoded>, keys: Keys, identity: Identity, refusals: string[]): void {
  const object = `Service ${ref}`;
  const [namespace, name] = ref.split("/");
  const oldIp = ipAddresses.get(normalizeIp(change.from));
  const newKey = `${keys.ipAddresses}${normalizeIp(change.to)}`;
  const taken = ipAddresses.get(normalizeIp(change.to));
  const owner = (e: Decoded | undefined) => (e ? parentRefOf(e.stored) : undefined);
  const ownsIt = (e: Decoded | undefined) => owner(e)?.resource === "services" && owner(e)?.namespace === namespace && owner(e)?.name === name;
  if (taken && !ownsIt(taken)) {
    const holder = owner(taken);
    refusals.push(`${object}: its new ClusterIP ${change.to} is already held by IPAddress ${change.to} (${holder ? `${holder.resource} ${holder.namespace}/${holder.name}` : "no parent"}); run the plan again`);
    return;
  }
  if (!oldIp || !ownsIt(oldIp)) {
    refusals.push(`${object}: no IPAddress ${change.from} names it as parent, so the rewrite has no apiserver-written object to move; wait for the apiserver's repair loop (or start it once) and run again`);
    return;
  }
  txn.compare.push({ key: oldIp.key, modRevision: oldIp.modRevision });
  txn.delete.push(oldIp.key);
  if (taken) {
    txn.compare.push({ key: taken.key, modRevision: taken.modRevision });
    return;
  }
  const created = ipAddressFrom(oldIp.value, oldIp.stored, { name: normalizeIp(change.to), uid: identity.newUid(), created: identity.now });
  if (!proven("IPAddress", `IPAddress ${change.to}`, oldIp.value, created, refusals)) return;
  txn.compare.push({ key: newKey, modRevision: ABSENT });
  txn.put.push({ key: newKey, value: created });
}

/** Each Node's podCIDRs. */
function planNodes(entries: Decoded[], keys: Keys, targets: RewriteTargets): KindPlan {
  const plan = emptyKindPlan();
  for (const entry of entries) {
    const name = entry.key.slice(keys.nodes.length);
    const object = `Node ${name}`;
    const cidrs = storedPodCidrs(entry.stored);
    const changes = targets.nodes.get(name) ?? [];
    const { toRewrite, done, stray } = progressOf(cidrs, changes, targets.podCidr?.from);
    if (stray.length > 0) {
      plan.refusals.push(`${object} (${entry.key}) has podCIDR ${stray.join(", ")} in the old range, which the plan does not move; run the plan again`);
      continue;
    }
    if (toRewrite.length === 0) {
      if (changes.length > 0 && done) plan.alreadyMoved++;
      continue;
    }
    const after = rewriteNode(entry.value, entry.stored, toRewrite);
    if (!proven("Node", object, entry.value, after, plan.refusals)) continue;
    plan.txns.push(oneKeyTxn(`${object} podCIDR ${toRewrite.map((c) => `${c.from} → ${c.to}`).join(", ")}`, entry, after));
  }
  return plan;
}

/** The default ServiceCIDR `kubernetes` only: it follows the flag; one a user made for another range is theirs. */
function planDefaultServiceCidr(entries: Decoded[], keys: Keys, range: AddressChange): KindPlan {
  const plan = emptyKindPlan();
  const entry = entries.find((e) => e.key === `${keys.serviceCidrs}kubernetes`);
  if (!entry || !storedServiceCidrRanges(entry.stored).includes(range.from)) return plan;
  const after = rewriteServiceCidr(entry.value, entry.stored, [range]);
  const object = "ServiceCIDR kubernetes";
  if (proven("ServiceCIDR", object, entry.value, after, plan.refusals)) plan.txns.push(oneKeyTxn(`${object} ${range.from} → ${range.to}`, entry, after));
  return plan;
}

/** The legacy allocator's bitmap, where it is kept: the new range, marking the final ClusterIPs. */
function planRangeAllocation(bitmap: Decoded | undefined, range: AddressChange, finalClusterIPs: string[]): KindPlan {
  const plan = emptyKindPlan();
  if (!bitmap) return plan;
  const after = rewriteRangeAllocation(bitmap.value, bitmap.stored, range.to, finalClusterIPs.filter((ip) => cidrContains(range.to, ip)));
  if (!after.equals(bitmap.value) && proven("RangeAllocation", "RangeAllocation serviceips", bitmap.value, after, plan.refusals)) {
    plan.txns.push(oneKeyTxn(`RangeAllocation serviceips → ${range.to}`, bitmap, after));
  }
  return plan;
}
