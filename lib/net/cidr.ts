/**
 * Pure CIDR math for the migration: parsing and normalizing ranges, containment, the conventional Service IPs,
 * node subnet splitting, and the deterministic old-range -> new-range address mapping.
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

interface ParsedIp {
  family: IpFamily;
  bits: 32 | 128;
  value: bigint;
}

const EXAMPLE_CIDR = "10.96.0.0/12";
// Decimal without leading zeros, so "/012" or "/ 12" are not silently read as something else.
const PREFIX_DIGITS = /^(0|[1-9][0-9]{0,2})$/;

function quote(text: unknown): string {
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

function parseIp(text: string): ParsedIp {
  const ip = tryParseIp(text);
  if (!ip) throw new CidrError(`${quote(text)} is not an IPv4 or IPv6 address (e.g. 10.96.0.10 or fd00:10:96::a)`, "unparsable");
  return ip;
}

/** Formats an integer as an address: IPv4 dotted quad, IPv6 compressed lowercase (RFC 5952, via ip-address). */
function formatIp(family: IpFamily, value: bigint): string {
  return family === "IPv4" ? formatIPv4(Number(value)) : Address6.fromBigInt(value).correctForm();
}

function formatIPv4(value: number): string {
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

function toIndex(n: bigint | number, what: string): bigint {
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

function allocatableCount(range: ParsedCidr): bigint {
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

function hexDigitValue(charCode: number): number {
  if (charCode >= 48 && charCode <= 57) return charCode - 48; // 0-9
  if (charCode >= 97 && charCode <= 102) return charCode - 87; // a-f
  if (charCode >= 65 && charCode <= 70) return charCode - 55; // A-F
  return -1;
}

/**
 * Fast path for plain hex IPv6 text (groups of 1-4 hex digits, at most one "::" standing for at least one group; no
 * dotted tail, no zone) into its eight 16-bit groups. A subset of what ip-address accepts, with the same meaning;
 * anything else goes to ip-address. Only the mapper uses it: Address6's parser costs several µs per call.
 */
function parseIPv6Groups(text: string): number[] | undefined {
  const head: number[] = [];
  const tail: number[] = [];
  let current = head;
  let compressed = false;
  let group = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const digit = hexDigitValue(c);
    if (digit >= 0) {
      if (++digits > 4) return undefined;
      group = group * 16 + digit;
    } else if (c === 58 /* : */ && text.charCodeAt(i + 1) === 58) {
      if (compressed || (digits === 0 && i !== 0)) return undefined;
      if (digits > 0) current.push(group);
      compressed = true;
      current = tail;
      group = 0;
      digits = 0;
      i++;
    } else if (c === 58 && digits > 0) {
      current.push(group);
      group = 0;
      digits = 0;
    } else {
      return undefined;
    }
  }
  if (digits > 0) current.push(group);
  else if (!(compressed && text.endsWith("::"))) return undefined;
  const explicit = head.length + tail.length;
  if (compressed ? explicit > 7 : explicit !== 8) return undefined;
  for (let missing = 8 - explicit; missing > 0; missing--) head.push(0);
  for (const g of tail) head.push(g);
  return head;
}

function groupsOf(value: bigint): number[] {
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((value >> shift) & 0xffffn));
  return groups;
}

/**
 * RFC 5952 text for eight IPv6 groups (lowercase, no leading zeros, the first longest run of two or more zero groups
 * as "::"): the same text as ip-address's correctForm(), which costs several µs per call. Only the mapper uses it.
 */
function formatIPv6Groups(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 1; // a single zero group is never compressed
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += "::";
      i += bestLength - 1;
    } else {
      text += (text === "" || text.endsWith(":") ? "" : ":") + groups[i].toString(16);
    }
  }
  return text;
}

const TWO_TO_32 = 2 ** 32;

/**
 * A range of at most 2^53 addresses with number-only offset arithmetic. Such a range has at most 53 host bits, so
 * for IPv6 the upper 64 bits (groups 0-3) are the same for every address in it and only the lower 64 bits, kept as two
 * 32-bit halves, take part in the arithmetic. This keeps BigInt out of the mapper's hot path.
 */
class NumericRange {
  private readonly size: number;
  private readonly network4: number;
  private readonly networkGroups: number[];
  private readonly networkHigh32: number;
  private readonly networkLow32: number;

  constructor(readonly range: ParsedCidr) {
    this.size = Number(range.size);
    this.network4 = range.family === "IPv4" ? Number(range.network) : 0;
    this.networkGroups = range.family === "IPv6" ? groupsOf(range.network) : [];
    const g = this.networkGroups;
    this.networkHigh32 = g.length ? g[4] * 65536 + g[5] : 0;
    this.networkLow32 = g.length ? g[6] * 65536 + g[7] : 0;
  }

  /** Offset of `ip` in the range, or undefined when it lies outside (or is of the other family). */
  offsetOf(ip: string): number | undefined {
    const offset = this.rawOffsetOf(ip);
    return offset !== undefined && offset >= 0 && offset < this.size ? offset : undefined;
  }

  addressAt(offset: number): string {
    if (this.range.family === "IPv4") return formatIPv4(this.network4 + offset);
    // The network address is aligned to the range size, so adding an in-range offset never carries between halves.
    const low32 = this.networkLow32 + (offset % TWO_TO_32);
    const high32 = this.networkHigh32 + Math.floor(offset / TWO_TO_32);
    const g = this.networkGroups;
    return formatIPv6Groups([g[0], g[1], g[2], g[3], Math.floor(high32 / 65536), high32 % 65536, Math.floor(low32 / 65536), low32 % 65536]);
  }

  private rawOffsetOf(ip: string): number | undefined {
    if (this.range.family === "IPv4") {
      const quad = parseCanonicalDottedQuad(ip);
      if (quad !== undefined) return quad - this.network4;
    } else {
      const groups = parseIPv6Groups(ip);
      if (groups !== undefined) {
        const n = this.networkGroups;
        if (groups[0] !== n[0] || groups[1] !== n[1] || groups[2] !== n[2] || groups[3] !== n[3]) return undefined;
        // Exact whenever the true offset is below 2^53; anything larger stays at or above 2^53, so it is rejected.
        return (groups[4] * 65536 + groups[5] - this.networkHigh32) * TWO_TO_32 + (groups[6] * 65536 + groups[7] - this.networkLow32);
      }
    }
    const address = parseIp(ip);
    const offset = address.value - this.range.network;
    return address.family === this.range.family && offset >= 0n && offset < this.range.size ? Number(offset) : undefined;
  }
}

// Kubernetes caps Service ranges far below this (IPv4 /12, IPv6 /108); the cap lets the mapper's hot path use plain
// numbers instead of BigInt, which is what makes 500,000 map() calls cheap.
const MAX_MAPPER_RANGE_SIZE = 2n ** 53n;

function mapperRange(text: string, role: string): NumericRange {
  const range = parseCidr(text);
  if (range.size > MAX_MAPPER_RANGE_SIZE) {
    throw new CidrError(
      `${role} range ${range.cidr} is too large to map addresses in (at most 2^53 addresses, i.e. an IPv6 prefix of /75 or longer)`,
      "out-of-range",
    );
  }
  return new NumericRange(range);
}

/**
 * Maps addresses from an old range into a new one: same offset where it fits and is free, otherwise the next free
 * address (wrapping, skipping network offset 0, the broadcast/last address for IPv4, and `reserved`), never colliding.
 * Deterministic: the result depends only on the order of map()/reserve() calls. Mapping the same old address again
 * returns the same new address. Both ranges may hold at most 2^53 addresses.
 */
export class AddressMapper {
  private readonly oldRange: NumericRange;
  private readonly newRange: NumericRange;
  private readonly newSize: number;
  /** Offsets in the new range that are handed out or reserved. */
  private readonly taken = new Set<number>();
  private readonly newOffsetByOldOffset = new Map<number, number>();
  private readonly allocatable: number;
  private takenAllocatable = 0;
  /**
   * Where the search for a free address resumes. It only moves forward (wrapping), so n calls cost O(n + range size)
   * in total instead of rescanning from offset 0 each time.
   */
  private cursor = 1;

  constructor(oldCidr: string, newCidr: string, reserved: string[] = []) {
    this.oldRange = mapperRange(oldCidr, "old");
    this.newRange = mapperRange(newCidr, "new");
    const [from, to] = [this.oldRange.range, this.newRange.range];
    if (from.family !== to.family) {
      throw new CidrError(
        `cannot map ${from.family} range ${from.cidr} into ${to.family} range ${to.cidr}; use a new range of the same family`,
        "out-of-range",
      );
    }
    this.newSize = Number(to.size);
    this.allocatable = Number(allocatableCount(to));
    for (const ip of reserved) this.reserve(ip);
  }

  /** Marks an address of the new range as taken (e.g. a Service already there). Idempotent. */
  reserve(ip: string): void {
    const offset = this.newRange.offsetOf(ip);
    if (offset === undefined) {
      throw new CidrError(`reserved address ${normalizeIp(ip)} is not in the new range ${this.newRange.range.cidr}`, "out-of-range");
    }
    this.take(offset);
  }

  map(oldIp: string): string {
    const oldOffset = this.oldRange.offsetOf(oldIp);
    if (oldOffset === undefined) {
      throw new CidrError(`${normalizeIp(oldIp)} is not in the old range ${this.oldRange.range.cidr}`, "out-of-range");
    }
    let newOffset = this.newOffsetByOldOffset.get(oldOffset);
    if (newOffset === undefined) {
      newOffset = this.isFree(oldOffset) ? oldOffset : this.nextFree(oldIp);
      this.take(newOffset);
      this.newOffsetByOldOffset.set(oldOffset, newOffset);
    }
    return this.newRange.addressAt(newOffset);
  }

  private isAllocatable(offset: number): boolean {
    if (offset <= 0 || offset >= this.newSize) return false;
    return this.newRange.range.family === "IPv6" || offset !== this.newSize - 1;
  }

  private isFree(offset: number): boolean {
    return this.isAllocatable(offset) && !this.taken.has(offset);
  }

  private take(offset: number): void {
    if (this.taken.has(offset)) return;
    this.taken.add(offset);
    if (this.isAllocatable(offset)) this.takenAllocatable++;
  }

  private nextFree(oldIp: string): number {
    if (this.takenAllocatable >= this.allocatable) {
      throw new CidrError(
        `new range ${this.newRange.range.cidr} is full: all ${this.allocatable} usable addresses are taken, so ${normalizeIp(oldIp)} cannot be mapped; choose a larger new range`,
        "out-of-range",
      );
    }
    // A free allocatable offset exists (counted above), so this loop ends.
    while (!this.isFree(this.cursor)) {
      this.cursor = this.cursor + 1 >= this.newSize ? 1 : this.cursor + 1;
    }
    return this.cursor;
  }
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
