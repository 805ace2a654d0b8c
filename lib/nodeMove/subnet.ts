/**
 * The two address questions the node steps ask (normal form of a CIDR, is an address or block inside a CIDR),
 * answered with ip-address directly.
 *
 * Why not lib/cidr: these helpers run inside the dynamic provider, whose code Pulumi's closure serializer copies
 * into the provider host. lib/cidr keeps a module-level parse cache (a Map), and the serializer cannot carry a Map;
 * this file holds no state, so it serializes.
 */
import { Address4, Address6 } from "ip-address";

type Address = Address4 | Address6;

function parse(text: string, what: string): Address {
  const address = Address4.isValid(text) ? new Address4(text) : Address6.isValid(text) ? new Address6(text) : undefined;
  if (!address) throw new Error(`${what} ${JSON.stringify(text)} is not an IPv4 or IPv6 address or CIDR (e.g. 10.48.3.0/24)`);
  return address;
}

/** "10.48.3.0/24" stays, "fd00:0:0::/64" becomes "fd00::/64"; a CIDR with host bits set is refused. */
export function canonicalCidr(text: string, what = "CIDR"): string {
  if (!text.includes("/")) throw new Error(`${what} ${JSON.stringify(text)} has no /prefix (e.g. 10.48.3.0/24)`);
  const address = parse(text, what);
  const start = address.startAddress();
  if (start.bigInt() !== address.bigInt()) throw new Error(`${what} ${JSON.stringify(text)} has host bits set: did you mean ${start.correctForm()}/${address.subnetMask}?`);
  return `${start.correctForm()}/${address.subnetMask}`;
}

/** Is the address (or the whole block) `inner` inside `outer`? Different families are never inside each other. */
export function insideCidr(outer: string, inner: string): boolean {
  const o = parse(outer, "CIDR");
  const i = parse(inner, "address");
  if (o.v4 !== i.v4) return false;
  return (i as Address4).isInSubnet(o as Address4);
}
