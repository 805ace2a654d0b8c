import { Address4, Address6 } from "ip-address";
import { isIP } from "net";

/**
 * The two address questions the Service mover asks: is this an IP, and does it lie in this range.
 *
 * Not lib/cidr.ts: the mover runs inside the dynamic provider, whose code the SDK serializes by value, and
 * lib/cidr.ts keeps a module-level Map cache, which cannot be serialized. ip-address is a package, so the
 * serialized code loads it with require() instead.
 */

export function isIpAddress(text: unknown): text is string {
  return typeof text === "string" && isIP(text) !== 0;
}

/** True when `cidr` is a CIDR range (address/prefix) of either family. */
export function isCidr(text: unknown): text is string {
  if (typeof text !== "string" || !text.includes("/")) return false;
  return Address4.isValid(text) || Address6.isValid(text);
}

/** False for a malformed range or address, or a family mismatch. */
export function rangeContains(cidr: string, ip: string): boolean {
  try {
    if (isIP(ip) === 4 && Address4.isValid(cidr)) return new Address4(ip).isInSubnet(new Address4(cidr));
    if (isIP(ip) === 6 && Address6.isValid(cidr)) return new Address6(ip).isInSubnet(new Address6(cidr));
  } catch {
    return false;
  }
  return false;
}
