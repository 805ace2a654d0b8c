import { addressOffset, familyOf, parseCidr } from "../net/cidr";
import { StoredValue, withJson, withRaw } from "./storedValue";
import { editField, lengthDelimited, readFields, rewriteFields, stringsOf } from "./wireMessage";

/**
 * The legacy ClusterIP allocator's record, /registry/ranges/serviceips: a RangeAllocation {range = 2, data = 3}
 * (k8s.io/api core/v1) whose data is a big-endian bitmap (Go's big.Int.Bytes()) with bit i set when the address
 * network + 1 + i is allocated (pkg/registry/core/service/ipallocator/bitmap.go: the network address is never in
 * the map; IPv6 maps at most 65,536 addresses). Rewritten to the new range with the bits of the moved ClusterIPs,
 * it is what the apiserver's repair loop would rebuild, so the loop finds nothing to repair and nothing leaked.
 */

const RANGE = 2;
const DATA = 3;
const IPV6_MAX_MAPPED = 65_536n;

export function allocationBitmap(cidr: string, clusterIPs: string[]): Buffer {
  const range = parseCidr(cidr);
  let bits = 0n;
  for (const ip of clusterIPs) {
    if (familyOf(ip) !== range.family) continue;
    const offset = addressOffset(cidr, ip) - 1n;
    if (offset < 0n || (range.family === "IPv6" && offset >= IPV6_MAX_MAPPED)) continue;
    bits |= 1n << offset;
  }
  if (bits === 0n) return Buffer.alloc(0);
  const hex = bits.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, "hex");
}

export function rewriteRangeAllocation(value: Buffer, stored: StoredValue, cidr: string, clusterIPs: string[]): Buffer {
  const data = allocationBitmap(cidr, clusterIPs);
  if (stored.format === "protobuf") {
    let raw = editField(stored.raw, RANGE, () => Buffer.from(cidr));
    const hasData = readFields(raw).some((f) => f.number === DATA);
    raw = hasData ? editField(raw, DATA, () => data) : rewriteFields(raw, () => undefined, data.length > 0 ? [lengthDelimited(DATA, data)] : []);
    return withRaw(value, raw);
  }
  if (stored.format === "json") {
    const copy = structuredClone(stored.object) as Record<string, unknown>;
    copy.range = cidr;
    copy.data = data.toString("base64");
    return withJson(copy);
  }
  throw new Error(`a RangeAllocation stored as ${stored.format} cannot be rewritten`);
}

/** The range the record maps, as stored. */
export function storedRange(stored: StoredValue): string | undefined {
  if (stored.format === "protobuf") return stringsOf(stored.raw, RANGE)[0];
  if (stored.format === "json") return (stored.object as { range?: string }).range;
  return undefined;
}
