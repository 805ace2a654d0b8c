import { CidrError, IpFamily, parseCidr } from "../net/cidr";

/**
 * Finds IPv4/IPv6 literals (plain, with a /prefix, inside URLs such as http://10.96.5.5:9090 or [fd00::5]:80, in
 * YAML or JSON text) that fall in a set of ranges. Built for many objects: one regex pass per string, a cheap
 * precheck that skips strings that cannot hold an address, and plain-number comparisons for IPv4.
 */

export interface NamedRange {
  /** What the range is to the reader, e.g. "old Service range". */
  label: string;
  cidr: string;
}

export interface AddressHit {
  /** The literal as written, e.g. "10.96.5.5" or "10.244.0.0/16". */
  literal: string;
  /** The range it falls in (an address) or overlaps (a CIDR). */
  range: NamedRange;
  isCidr: boolean;
  /** 1-based line of the hit in a multi-line string; undefined for single-line text. */
  line?: number;
}

interface CompiledRange {
  range: NamedRange;
  family: IpFamily;
  start: bigint;
  /** Exclusive. */
  end: bigint;
  /** The same bounds as plain numbers, for IPv4. */
  start4: number;
  end4: number;
}

const OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
/**
 * Not inside a longer dotted number (an OID, a version like 1.10.96.0.1): no digit or dot just before, and no digit
 * or ".digit" just after. A colon may follow (host:port), so URLs match.
 */
const IPV4 = new RegExp(`(?<![\\d.])(${OCTET}(?:\\.${OCTET}){3})(?:/(\\d{1,2}))?(?!\\.?\\d)`, "g");
/** A run of hex groups with at least two colons; lib/net/cidr decides whether it really is an address. */
const IPV6 = /(?<![0-9A-Fa-f:.])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?:\/(\d{1,3}))?(?![0-9A-Fa-f:])/g;

function ipv4Value(dotted: string): number {
  let value = 0;
  let octet = 0;
  for (let i = 0; i < dotted.length; i++) {
    const c = dotted.charCodeAt(i);
    if (c === 46) {
      value = value * 256 + octet;
      octet = 0;
    } else {
      octet = octet * 10 + (c - 48);
    }
  }
  return value * 256 + octet;
}

export class RangeMatcher {
  private readonly v4: CompiledRange[];
  private readonly v6: CompiledRange[];

  constructor(ranges: readonly NamedRange[]) {
    const compiled = ranges.map((range): CompiledRange => {
      const parsed = parseCidr(range.cidr);
      const end = parsed.network + parsed.size;
      return {
        range,
        family: parsed.family,
        start: parsed.network,
        end,
        start4: parsed.family === "IPv4" ? Number(parsed.network) : 0,
        end4: parsed.family === "IPv4" ? Number(end) : 0,
      };
    });
    this.v4 = compiled.filter((r) => r.family === "IPv4");
    this.v6 = compiled.filter((r) => r.family === "IPv6");
  }

  /** Every literal in `text` that lies in (or, for a CIDR, overlaps) one of the ranges, in order of appearance. */
  scan(text: string): AddressHit[] {
    const hits: AddressHit[] = [];
    if (text.length < 3) return hits;
    const multiLine = text.includes("\n");
    let lineIndex = 0;
    let line = 1;
    const lineOf = (index: number): number | undefined => {
      if (!multiLine) return undefined;
      // Hits arrive in increasing index order per family; restart when a family pass begins again.
      if (index < lineIndex) {
        lineIndex = 0;
        line = 1;
      }
      for (let i = text.indexOf("\n", lineIndex); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) {
        line++;
        lineIndex = i + 1;
      }
      return line;
    };
    if (this.v4.length > 0 && text.length >= 7 && text.includes(".")) {
      for (const m of text.matchAll(IPV4)) {
        const range = this.matchV4(m[1], m[2]);
        if (range) hits.push({ literal: m[0], range: range.range, isCidr: range.isCidr, line: lineOf(m.index!) });
      }
    }
    if (this.v6.length > 0 && text.includes(":")) {
      for (const m of text.matchAll(IPV6)) {
        const range = this.matchV6(m[1], m[2]);
        if (range) hits.push({ literal: m[0], range: range.range, isCidr: range.isCidr, line: lineOf(m.index!) });
      }
    }
    return hits;
  }

  /** The first range holding `ip`, for a single address already known to be one. */
  rangeOfAddress(ip: string): NamedRange | undefined {
    const hits = this.scan(ip);
    return hits.length === 1 && hits[0].literal === ip && !hits[0].isCidr ? hits[0].range : undefined;
  }

  private matchV4(dotted: string, prefixText: string | undefined): { range: NamedRange; isCidr: boolean } | undefined {
    const value = ipv4Value(dotted);
    const prefix = prefixText === undefined ? 32 : Number(prefixText);
    if (prefix < 32) {
      const size = 2 ** (32 - prefix);
      const network = value - (value % size);
      // A CIDR written in network form is a range; with host bits set (10.244.1.5/24) it names an interface address.
      if (network === value) {
        const r = this.v4.find((x) => network < x.end4 && x.start4 < network + size);
        return r ? { range: r.range, isCidr: true } : undefined;
      }
    }
    const r = this.v4.find((x) => value >= x.start4 && value < x.end4);
    return r ? { range: r.range, isCidr: false } : undefined;
  }

  private matchV6(candidate: string, prefixText: string | undefined): { range: NamedRange; isCidr: boolean } | undefined {
    let network: bigint;
    let size = 1n;
    let isCidr = false;
    try {
      if (prefixText !== undefined) {
        try {
          const parsed = parseCidr(`${candidate}/${prefixText}`);
          network = parsed.network;
          size = parsed.size;
          isCidr = parsed.prefix < 128;
        } catch (err) {
          if (!(err instanceof CidrError) || err.reason !== "host-bits") throw err;
          network = parseCidr(`${candidate}/128`).network;
        }
      } else {
        network = parseCidr(`${candidate}/128`).network;
      }
    } catch {
      return undefined; // hex and colons that are not an address (a MAC, a time, a hash)
    }
    const r = this.v6.find((x) => network < x.end && x.start < network + size);
    return r ? { range: r.range, isCidr } : undefined;
  }
}
