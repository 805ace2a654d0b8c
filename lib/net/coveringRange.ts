import { CidrError, formatIp, parseCidr } from "./cidr";

/**
 * The smallest range that contains both `a` and `b` (same family): their common prefix. Flannel needs it while
 * nodes move: flanneld refuses to start when its `Network` does not contain its Node's podCIDR, and during the
 * rollout some Nodes hold old podCIDRs and some new ones.
 */
export function coveringRange(a: string, b: string): string {
  const x = parseCidr(a);
  const y = parseCidr(b);
  if (x.family !== y.family) throw new CidrError(`${a} and ${b} are of different address families; no range covers both`, "unparsable");
  let prefix = Math.min(x.prefix, y.prefix);
  const hostBits = (p: number) => BigInt(x.bits - p);
  while (prefix > 0 && x.network >> hostBits(prefix) !== y.network >> hostBits(prefix)) prefix--;
  const network = (x.network >> hostBits(prefix)) << hostBits(prefix);
  return `${formatIp(x.family, network)}/${prefix}`;
}
