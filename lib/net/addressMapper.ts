/**
 * The deterministic old-range -> new-range address mapping for Service ClusterIPs: the same offset where it fits and
 * is free, else the next free address. Its hot path avoids BigInt and ip-address (a plan maps hundreds of thousands
 * of addresses), so it carries its own IPv6 group parsing and formatting.
 */
import { CidrError, ParsedCidr, allocatableCount, formatIPv4, normalizeIp, parseCanonicalDottedQuad, parseCidr, parseIp } from "./cidr";

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
