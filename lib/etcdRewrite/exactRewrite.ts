import { readStoredValue } from "./storedValue";
import { changedPaths } from "./wireDiff";

/**
 * The proof every rewrite passes before it is written: decode the stored value before and after, diff every field,
 * and allow only the fields this kind's rewrite owns. Protobuf paths are field numbers (k8s.io/api generated.proto),
 * JSON paths are field names; a trailing "*" allows anything below.
 */

export type RewrittenKind = "Service" | "Node" | "ServiceCIDR" | "RangeAllocation" | "IPAddress";

interface Owned {
  nested: string[];
  protobuf: string[];
  json: string[];
}

const OWNED: Record<RewrittenKind, Owned> = {
  // metadata.annotations values; spec.clusterIP, spec.clusterIPs
  Service: { nested: ["1", "1.12", "2"], protobuf: ["1.12.2", "2.3", "2.18"], json: ["metadata.annotations.*", "spec.clusterIP", "spec.clusterIPs*"] },
  // spec.podCIDR, spec.podCIDRs
  Node: { nested: ["2"], protobuf: ["2.1", "2.7"], json: ["spec.podCIDR", "spec.podCIDRs*"] },
  // spec.cidrs
  ServiceCIDR: { nested: ["2"], protobuf: ["2.1"], json: ["spec.cidrs*"] },
  // range, data
  RangeAllocation: { nested: [], protobuf: ["2", "3"], json: ["range", "data"] },
  // metadata.name, metadata.uid, metadata.creationTimestamp (the new object for a moved address)
  IPAddress: { nested: ["1"], protobuf: ["1.1", "1.5", "1.8"], json: ["metadata.name", "metadata.uid", "metadata.creationTimestamp"] },
};

function jsonChangedPaths(a: unknown, b: unknown, at = ""): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const objects = typeof a === "object" && a !== null && typeof b === "object" && b !== null && !Array.isArray(a) && !Array.isArray(b);
  if (!objects) return [at || "(value)"];
  const keysA = Object.keys(a as object);
  const keysB = Object.keys(b as object);
  if (keysA.join("\0") !== keysB.join("\0")) return [`${at || "(object)"}: keys`];
  return keysA.flatMap((k) => jsonChangedPaths((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], at ? `${at}.${k}` : k));
}

function allowed(path: string, owned: string[]): boolean {
  return owned.some((o) => (o.endsWith("*") ? path.startsWith(o.slice(0, -1)) : path === o));
}

/** Paths that changed although `kind`'s rewrite does not own them (empty when the rewrite is exact). */
export function unownedChanges(kind: RewrittenKind, before: Buffer, after: Buffer): string[] {
  const a = readStoredValue(before);
  const b = readStoredValue(after);
  const owned = OWNED[kind];
  if (a.format === "protobuf" && b.format === "protobuf") {
    // the envelope (typeMeta, contentType) must be byte-identical apart from raw
    const envelope = changedPaths(before.subarray(4), after.subarray(4), new Set()).filter((p) => p !== "2");
    const inside = changedPaths(a.raw, b.raw, new Set(owned.nested)).filter((p) => !allowed(p, owned.protobuf));
    return [...envelope.map((p) => `envelope ${p}`), ...inside];
  }
  if (a.format === "json" && b.format === "json") return jsonChangedPaths(a.object, b.object).filter((p) => !allowed(p, owned.json));
  return [`format ${a.format} → ${b.format}`];
}
