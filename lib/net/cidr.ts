/**
 * Pure CIDR math for the migration: parsing and normalizing ranges and addresses, containment, offsets and the
 * conventional Service IPs. Node subnets (nodeSubnets.ts) and the old-range -> new-range address mapping
 * (addressMapper.ts) build on it.
 *
 * Parsing is done by `ip-address`; all arithmetic is on BigInt so IPv6 needs no special cases. Error messages are
 * one line and name the bad value; callers prefix the config key or object they came from.
 */
import { Address4, Address6 } from "ip-address";

export type IpFamily = "IPv4" | "IPv6";
export type CidrErrorReason = "unparsable" | "host-bits" | "out-of-range";

export class CidrError extends Error {
  constructor(
    message: string,
    readonly reason: CidrErrorReason,
  ) {
    super(message);
    this.message = message; // see UserError
    this.name = "CidrError";
  }
}

export interface ParsedCidr {
  /** Normalized text: network address (IPv6 compressed, lowercase) + "/" + prefix. */
  cidr: string;
  family: IpFamily;
  prefix: number;
  bits: 32 | 128;
  /** The network address as an integer. */
  network: bigint;
  /** Number of addresses in the range. */
  size: bigint;
}

export interface ParsedIp {
  family: IpFamily;
  bits: 32 | 128;
  value: bigint;
}

const EXAMPLE_CIDR = "10.96.0.0/12";
// Decimal without leading zeros, so "/012" or "/ 12" are not silently read as something else.
const PREFIX_DIGITS = /^(0|[1-9][0-9]{0,2})$/;

export function quote(text: unknown): string {
  return JSON.stringify(typeof text === "string" ? text : String(text));
}

/**
 * Fast path for the canonical dotted quad (four decimal octets 0-255, no leading zeros), a subset of what ip-address
 * accepts with the same meaning. The mapper parses hundreds of thousands of addresses and Address4's general parser
 * costs about 1 µs each; anything unusual still goes to ip-address.
 */
export function parseCanonicalDottedQuad(text: string): number | undefined {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || ++dots > 3) return undefined;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 1 && octet === 0) return undefined; // leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return undefined;
    } else {
      return undefined;
    }
  }
  if (dots !== 3 || digits === 0) return undefined;
  return value * 256 + octet;
}

/** Parses a plain address (no /prefix); undefined when it is not one. */
function tryParseIp(text: unknown): ParsedIp | undefined {
  if (typeof text !== "string" || text.includes("/")) return undefined;
  if (text.includes(":")) {
    // A zone (%eth0) names a host interface; it has no meaning for a cluster-wide address.
    if (text.includes("%")) return undefined;
    try {
      return { family: "IPv6", bits: 128, value: new Address6(text).bigInt() };
    } catch {
      return undefined;
    }
  }
  const quad = parseCanonicalDottedQuad(text);
  if (quad !== undefined) return { family: "IPv4", bits: 32, value: BigInt(quad) };
  // Only digits and dots can be an IPv4 address; skipping ip-address for "None" avoids a thrown error per headless Service.
  if (!/^[\d.]+$/.test(text)) return undefined;
  try {
    return { family: "IPv4", bits: 32, value: new Address4(text).bigInt() };
  } catch {
    return undefined;
  }
}

export function parseIp(text: string): ParsedIp {
  const ip = tryParseIp(text);
  if (!ip) throw new CidrError(`${quote(text)} is not an IPv4 or IPv6 address (e.g. 10.96.0.10 or fd00:10:96::a)`, "unparsable");
  return ip;
}

/** Formats an integer as an address: IPv4 dotted quad, IPv6 compressed lowercase (RFC 5952, via ip-address). */
export function formatIp(family: IpFamily, value: bigint): string {
  return family === "IPv4" ? formatIPv4(Number(value)) : Address6.fromBigInt(value).correctForm();
}

export function formatIPv4(value: number): string {
  return `${(value >>> 24) & 255}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

/**
 * Parsed ranges by their text. A plan checks hundreds of thousands of addresses against the same four ranges;
 * re-parsing the range each time through ip-address dominated planning. Bounded so odd callers cannot grow it.
 */
const PARSED_CIDR_CACHE_LIMIT = 10_000;
/**
 * The cache hangs off globalThis, not a module variable: dynamic providers are serialized by Pulumi's closure
 * serializer, which captures module variables by value and cannot capture a Map.
 */
const PARSED_CIDR_CACHE_KEY = "__cidrMigrationParsedCidrs";

function parsedCidrCache(): Map<string, Readonly<ParsedCidr>> {
  const holder = globalThis as unknown as Record<string, Map<string, Readonly<ParsedCidr>> | undefined>;
  return (holder[PARSED_CIDR_CACHE_KEY] ??= new Map());
}

export function parseCidr(text: string): ParsedCidr {
  return { ...parsedCidr(text) };
}

/** The shared, frozen parse of a range, for this module's hot paths. */
function parsedCidr(text: string): Readonly<ParsedCidr> {
  const parsedCidrs = parsedCidrCache();
  let parsed = parsedCidrs.get(text);
  if (!parsed) {
    parsed = Object.freeze(parseCidrUncached(text));
    if (parsedCidrs.size >= PARSED_CIDR_CACHE_LIMIT) parsedCidrs.clear();
    parsedCidrs.set(text, parsed);
  }
  return parsed;
}

function parseCidrUncached(text: string): ParsedCidr {
  if (typeof text !== "string" || text === "") {
    throw new CidrError(`${quote(text)} is not a CIDR: expected address/prefix such as ${EXAMPLE_CIDR}`, "unparsable");
  }
  const slash = text.indexOf("/");
  if (slash < 0) {
    throw new CidrError(`${quote(text)} is not a CIDR: the /prefix length is missing (e.g. ${EXAMPLE_CIDR})`, "unparsable");
  }
  const addressText = text.slice(0, slash);
  const prefixText = text.slice(slash + 1);
  const ip = tryParseIp(addressText);
  if (!ip) {
    throw new CidrError(`${quote(text)} is not a CIDR: ${quote(addressText)} is not an IPv4 or IPv6 address`, "unparsable");
  }
  if (!PREFIX_DIGITS.test(prefixText) || Number(prefixText) > ip.bits) {
    throw new CidrError(
      `${quote(text)} is not a CIDR: prefix ${quote(prefixText)} must be a number from 0 to ${ip.bits} for ${ip.family}`,
      "unparsable",
    );
  }
  const prefix = Number(prefixText);
  const address = ip.family === "IPv4" ? new Address4(text) : new Address6(text);
  const network = address.startAddress().bigInt();
  const cidr = `${formatIp(ip.family, network)}/${prefix}`;
  if (network !== ip.value) {
    // Kubernetes rejects these too; naming the intended network turns a confusing failure into a one-word fix.
    throw new CidrError(`${quote(text)} has host bits set: did you mean ${cidr}?`, "host-bits");
  }
  return { cidr, family: ip.family, prefix, bits: ip.bits, network, size: 1n << BigInt(ip.bits - prefix) };
}

/** A CIDR, or a plain address read as a single-address range (/32, /128). */
function parseCidrOrIp(text: string): ParsedCidr {
  if (typeof text === "string" && text.includes("/")) return parseCidr(text);
  const ip = parseIp(text);
  return {
    cidr: `${formatIp(ip.family, ip.value)}/${ip.bits}`,
    family: ip.family,
    prefix: ip.bits,
    bits: ip.bits,
    network: ip.value,
    size: 1n,
  };
}

export function normalizeCidr(text: string): string {
  return parseCidr(text).cidr;
}

export function isIpAddress(text: unknown): text is string {
  return tryParseIp(text) !== undefined;
}

/** True for a CIDR in normal form or not (host bits set is not a CIDR); never throws. */
export function isCidr(text: unknown): text is string {
  if (typeof text !== "string") return false;
  try {
    parsedCidr(text);
    return true;
  } catch {
    return false;
  }
}

export function normalizeIp(text: string): string {
  const ip = parseIp(text);
  return formatIp(ip.family, ip.value);
}

export function familyOf(ipOrCidr: string): IpFamily {
  return parseCidrOrIp(ipOrCidr).family;
}

/** An address as the host part of a URL: IPv6 in brackets. */
export function urlHost(ip: string): string {
  return familyOf(ip) === "IPv6" ? `[${ip}]` : ip;
}

/** The address an endpoint names, normalized: `host:port`, `[v6]:port` or a URL; undefined when it names no IP address. */
export function endpointHost(endpoint: string): string | undefined {
  const url = /^[a-z]+:\/\//i.test(endpoint) ? endpoint : `https://${endpoint}`;
  try {
    return normalizeIp(new URL(url).hostname.replace(/^\[|\]$/g, ""));
  } catch {
    return undefined;
  }
}

/** True when every address of `innerCidrOrIp` lies in `outer`; false across families. */
export function cidrContains(outer: string, innerCidrOrIp: string): boolean {
  const o = parsedCidr(outer);
  if (typeof innerCidrOrIp === "string" && !innerCidrOrIp.includes("/")) {
    const ip = parseIp(innerCidrOrIp);
    return o.family === ip.family && ip.value >= o.network && ip.value < o.network + o.size;
  }
  const i = parsedCidr(innerCidrOrIp);
  return o.family === i.family && i.network >= o.network && i.network + i.size <= o.network + o.size;
}

/** True when the two ranges (CIDRs or single addresses) share at least one address; false across families. */
export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCidrOrIp(a);
  const y = parseCidrOrIp(b);
  return x.family === y.family && x.network < y.network + y.size && y.network < x.network + x.size;
}

export function cidrSize(cidr: string): bigint {
  return parseCidr(cidr).size;
}

export function toIndex(n: bigint | number, what: string): bigint {
  if (typeof n === "bigint") return n;
  if (!Number.isSafeInteger(n)) throw new CidrError(`${what} ${n} is not a whole number`, "out-of-range");
  return BigInt(n);
}

function describeSize(range: ParsedCidr): string {
  return `${range.cidr}, which holds ${range.size} addresses (offsets 0 to ${range.size - 1n})`;
}

export function nthAddress(cidr: string, n: bigint | number): string {
  const range = parseCidr(cidr);
  const offset = toIndex(n, "address offset");
  if (offset < 0n || offset >= range.size) {
    throw new CidrError(`address offset ${offset} is outside ${describeSize(range)}`, "out-of-range");
  }
  return formatIp(range.family, range.network + offset);
}

/** ip - network; throws "out-of-range" when the address is not in the range (including another family). */
export function addressOffset(cidr: string, ip: string): bigint {
  const range = parsedCidr(cidr);
  const address = parseIp(ip);
  const offset = address.value - range.network;
  if (address.family !== range.family || offset < 0n || offset >= range.size) {
    throw new CidrError(`${normalizeIp(ip)} is outside ${range.cidr}`, "out-of-range");
  }
  return offset;
}

/** Offset 0 is the network address; for IPv4 the last one is the broadcast address. Neither is ever allocated. */
function isAllocatableOffset(range: ParsedCidr, offset: bigint): boolean {
  if (offset <= 0n || offset >= range.size) return false;
  return range.family === "IPv6" || offset !== range.size - 1n;
}

export function allocatableCount(range: ParsedCidr): bigint {
  const excluded = range.family === "IPv4" ? 2n : 1n;
  return range.size > excluded ? range.size - excluded : 0n;
}

function conventionalServiceIP(serviceCidr: string, offset: bigint, purpose: string): string {
  const range = parseCidr(serviceCidr);
  if (!isAllocatableOffset(range, offset)) {
    throw new CidrError(
      `Service range ${range.cidr} is too small for the ${purpose} (offset ${offset}); choose a shorter prefix`,
      "out-of-range",
    );
  }
  return formatIp(range.family, range.network + offset);
}

/** The `kubernetes` Service's ClusterIP, also a SAN of the apiserver serving cert: the first host address. */
export function kubernetesServiceIP(serviceCidr: string): string {
  return conventionalServiceIP(serviceCidr, 1n, "kubernetes Service IP");
}

/** kubeadm's default cluster DNS IP: the tenth address after the network address. */
export function dnsServiceIP(serviceCidr: string): string {
  return conventionalServiceIP(serviceCidr, 10n, "cluster DNS Service IP");
}
