import { cidrContains, cidrsOverlap, isIpAddress } from "../net/cidr";
import { RangeMatcher } from "../preflight/addressLiterals";

/**
 * What "left in the old range" means: inside the old range and not inside the new one. For a move the two are
 * disjoint; for an expansion (the new range contains the old) nothing old is a leftover.
 */
export class LeftoverTest {
  private readonly oldMatcher: RangeMatcher;
  private readonly newMatcher: RangeMatcher;

  constructor(
    readonly from: string,
    readonly to: string,
  ) {
    this.oldMatcher = new RangeMatcher([{ label: "old", cidr: from }]);
    this.newMatcher = new RangeMatcher([{ label: "new", cidr: to }]);
  }

  /** Fast for the many Pod IPs of a large cluster: a plain-number comparison for IPv4. */
  address(ip: string | undefined): boolean {
    if (!ip || !isIpAddress(ip)) return false;
    return this.oldMatcher.rangeOfAddress(ip) !== undefined && this.newMatcher.rangeOfAddress(ip) === undefined;
  }

  cidr(cidr: string | undefined): boolean {
    if (!cidr) return false;
    try {
      return cidrsOverlap(this.from, cidr) && !cidrContains(this.to, cidr);
    } catch {
      return false;
    }
  }

  inNew(ipOrCidr: string): boolean {
    try {
      return cidrContains(this.to, ipOrCidr);
    } catch {
      return false;
    }
  }
}
