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

export function planRewrite(entries: EtcdEntry[], targets: RewriteTargets, identity: { newUid(): string; now: Date }): RewritePlan {
  const keys = keysOf(targets.prefix);
  const refusals: string[] = [];
  const txns: EtcdTxn[] = [];
  let alreadyMoved = 0;
  const decoded: Decoded[] = entries.map((e) => ({ ...e, stored: readStoredValue(e.value) }));
  for (const entry of decoded) {
    const problem = describeFormat(entry);
    if (problem) refusals.push(problem);
  }
  if (refusals.length > 0) return { txns: [], refusals, alreadyMoved };

  const under = (prefix: string) => decoded.filter((e) => e.key.startsWith(prefix));
  const ipAddresses = new Map(under(keys.ipAddresses).map((e) => [e.key.slice(keys.ipAddresses.length), e]));
  const usesIpAddresses = ipAddresses.size > 0;
  const finalClusterIPs: string[] = [];

  for (const entry of under(keys.services)) {
    const ref = entry.key.slice(keys.services.length);
    const object = `Service ${ref}`;
    const ips = storedClusterIPs(entry.stored);
    const changes = targets.services.get(ref) ?? [];
    const { toRewrite, done, stray } = progressOf(ips, changes, targets.serviceCidr.from);
    if (stray.length > 0) {
      refusals.push(`${object} (${entry.key}) has ClusterIP ${stray.join(", ")} in the old range, which the plan does not move; run the plan again`);
      continue;
    }
    finalClusterIPs.push(...ips.map((ip) => changes.find((c) => c.from === ip)?.to ?? ip));
    if (toRewrite.length === 0) {
      if (changes.length > 0 && done) alreadyMoved++;
      else if (changes.length > 0) refusals.push(`${object} has ClusterIP ${ips.join(", ") || "none"}, neither the planned old nor new one; run the plan again`);
      continue;
    }
    const after = rewriteService(entry.value, entry.stored, toRewrite);
    if (!proven("Service", object, entry.value, after, refusals)) continue;
    const txn: EtcdTxn = { object: `${object} ${toRewrite.map((c) => `${c.from} → ${c.to}`).join(", ")}`, compare: [{ key: entry.key, modRevision: entry.modRevision }], put: [{ key: entry.key, value: after }], delete: [] };
    if (usesIpAddresses) {
      for (const change of toRewrite) {
        const [namespace, name] = ref.split("/");
        const oldIp = ipAddresses.get(normalizeIp(change.from));
        const newKey = `${keys.ipAddresses}${normalizeIp(change.to)}`;
        const taken = ipAddresses.get(normalizeIp(change.to));
        const owner = (e: Decoded | undefined) => (e ? parentRefOf(e.stored) : undefined);
        const ownsIt = (e: Decoded | undefined) => owner(e)?.resource === "services" && owner(e)?.namespace === namespace && owner(e)?.name === name;
        if (taken && !ownsIt(taken)) {
          const holder = owner(taken);
          refusals.push(`${object}: its new ClusterIP ${change.to} is already held by IPAddress ${change.to} (${holder ? `${holder.resource} ${holder.namespace}/${holder.name}` : "no parent"}); run the plan again`);
          continue;
        }
        if (!oldIp || !ownsIt(oldIp)) {
          refusals.push(`${object}: no IPAddress ${change.from} names it as parent, so the rewrite has no apiserver-written object to move; wait for the apiserver's repair loop (or start it once) and run again`);
          continue;
        }
        txn.compare.push({ key: oldIp.key, modRevision: oldIp.modRevision });
        txn.delete.push(oldIp.key);
        if (taken) {
          txn.compare.push({ key: taken.key, modRevision: taken.modRevision });
        } else {
          const created = ipAddressFrom(oldIp.value, oldIp.stored, { name: normalizeIp(change.to), uid: identity.newUid(), created: identity.now });
          if (!proven("IPAddress", `IPAddress ${change.to}`, oldIp.value, created, refusals)) continue;
          txn.compare.push({ key: newKey, modRevision: ABSENT });
          txn.put.push({ key: newKey, value: created });
        }
      }
    }
    txns.push(txn);
  }

  for (const entry of under(keys.nodes)) {
    const name = entry.key.slice(keys.nodes.length);
    const object = `Node ${name}`;
    const cidrs = storedPodCidrs(entry.stored);
    const changes = targets.nodes.get(name) ?? [];
    const { toRewrite, done, stray } = progressOf(cidrs, changes, targets.podCidr?.from);
    if (stray.length > 0) {
      refusals.push(`${object} (${entry.key}) has podCIDR ${stray.join(", ")} in the old range, which the plan does not move; run the plan again`);
      continue;
    }
    if (toRewrite.length === 0) {
      if (changes.length > 0 && done) alreadyMoved++;
      continue;
    }
    const after = rewriteNode(entry.value, entry.stored, toRewrite);
    if (!proven("Node", object, entry.value, after, refusals)) continue;
    txns.push({ object: `${object} podCIDR ${toRewrite.map((c) => `${c.from} → ${c.to}`).join(", ")}`, compare: [{ key: entry.key, modRevision: entry.modRevision }], put: [{ key: entry.key, value: after }], delete: [] });
  }

  const range = targets.serviceCidr;
  for (const entry of under(keys.serviceCidrs)) {
    const cidrs = storedServiceCidrRanges(entry.stored);
    // only the default ServiceCIDR follows the flag; one a user made for another range is theirs
    if (entry.key !== `${keys.serviceCidrs}kubernetes` || !cidrs.includes(range.from)) continue;
    const after = rewriteServiceCidr(entry.value, entry.stored, [range]);
    const object = "ServiceCIDR kubernetes";
    if (!proven("ServiceCIDR", object, entry.value, after, refusals)) continue;
    txns.push({ object: `${object} ${range.from} → ${range.to}`, compare: [{ key: entry.key, modRevision: entry.modRevision }], put: [{ key: entry.key, value: after }], delete: [] });
  }

  const bitmap = decoded.find((e) => e.key === keys.serviceIpRange);
  if (bitmap) {
    const after = rewriteRangeAllocation(bitmap.value, bitmap.stored, range.to, finalClusterIPs.filter((ip) => cidrContains(range.to, ip)));
    if (!after.equals(bitmap.value) && proven("RangeAllocation", "RangeAllocation serviceips", bitmap.value, after, refusals)) {
      txns.push({ object: `RangeAllocation serviceips → ${range.to}`, compare: [{ key: bitmap.key, modRevision: bitmap.modRevision }], put: [{ key: bitmap.key, value: after }], delete: [] });
    }
  }
  return refusals.length > 0 ? { txns: [], refusals, alreadyMoved } : { txns, refusals, alreadyMoved };
}
