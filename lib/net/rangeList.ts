import { cidrContains, familyOf, isCidr, normalizeCidr } from "./cidr";

/**
 * A range list as --service-cluster-ip-range takes it: one CIDR, or a dual-stack pair comma-separated (one IPv4 and
 * one IPv6 range, either first).
 */

export function isRangeList(text: unknown): text is string {
  if (typeof text !== "string") return false;
  const ranges = text.split(",");
  if (!ranges.every(isCidr)) return false;
  return ranges.length === 1 || (ranges.length === 2 && familyOf(ranges[0]) !== familyOf(ranges[1]));
}

/** The range of the list holding `ip`'s family, if any. */
export function rangeForFamilyOf(list: string, ip: string): string | undefined {
  return list.split(",").find((range) => familyOf(range) === familyOf(ip));
}

/** Whether a range of the list contains `ip`. */
export function inRangeList(list: string, ip: string): boolean {
  const range = rangeForFamilyOf(list, ip);
  return range !== undefined && cidrContains(range, ip);
}

/** Each range of the list in normal form, in its order; throws on a range that is not a CIDR. */
export function normalizeRangeList(list: string): string {
  return list.split(",").map((range) => normalizeCidr(range.trim())).join(",");
}
