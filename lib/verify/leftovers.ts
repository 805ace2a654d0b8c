import { cidrsOverlap, isIpAddress } from "../net/cidr";
import { inRangeList } from "../net/rangeList";
import { RangeMatcher } from "../preflight/addressLiterals";

/**
 * What "left in the old range" means: inside the old range and not inside the new one. For a move the two are
 * disjoint; for an expansion (the new range contains the old) nothing old is a leftover. `from` and `to` may each
 * be a dual-stack pair, comma-separated (issue 17): an address is held to the ranges of its own family.
 */
export class LeftoverTest {
  private readonly oldMatcher: RangeMatcher;
  private readonly newMatcher: RangeMatcher;
  private readonly oldRanges: string[];

  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    this.oldRanges = from.split(",");
    this.oldMatcher = new RangeMatcher(this.oldRanges.map((cidr) => ({ label: "old", cidr })));
    this.newMatcher = new RangeMatcher(to.split(",").map((cidr) => ({ label: "new", cidr })));
  }

  /** Fast for the many Pod IPs of a large cluster: a plain-number comparison for IPv4. */
  address(ip: string | undefined): boolean {
    if (!ip || !isIpAddress(ip)) return false;
    return this.oldMatcher.rangeOfAddress(ip) !== undefined && this.newMatcher.rangeOfAddress(ip) === undefined;
  }

  /** A range, or a list of them as the flags and kubeadm write a dual-stack pair: any of them left in an old range. */
  cidr(cidr: string | undefined): boolean {
    if (!cidr) return false;
    return cidr.split(",").map((part) => part.trim()).some((part) => this.oldRanges.some((range) => safely(() => cidrsOverlap(range, part))) && !this.inNew(part));
  }

  inNew(ipOrCidr: string): boolean {
    return safely(() => inRangeList(this.to, ipOrCidr));
  }
}

/** A test on text that may not parse (or mixes families) is simply false. */
function safely(test: () => boolean): boolean {
  try {
    return test();
  } catch {
    return false;
  }
}
