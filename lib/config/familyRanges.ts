import { familyOf, IpFamily } from "../net/cidr";
import { Reader, setCommand, show } from "./configReader";
import { checkNodeMask } from "./rangeChecks";

/**
 * serviceCidr and podCidr each take one range or a dual-stack pair (issue 17), e.g.
 *   serviceCidr: { from: [10.96.0.0/12, fd00:10:96::/112], to: [10.112.0.0/12, fd00:10:112::/112] }
 *   podCidr:     { from: [...], to: [...], nodeMaskSize: { ipv4: 24, ipv6: 64 } }
 * This reads them into one entry per address family, primary family first (the first range of a pair is the
 * cluster's primary family, as in --service-cluster-ip-range), and refuses pairs that cannot describe a cluster.
 */

/** One address family's ranges. `from` is absent when the run adds this family (single-stack → dual-stack). */
export interface FamilyRanges {
  family: IpFamily;
  /** move: from → to; keep: the primary family of a run that adds the other one, unchanged; add: the added family. */
  role: "move" | "keep" | "add";
  service: { from?: string; to: string };
  pod: { from?: string; to: string; nodeMaskSize: number };
  /** The config keys of this family's values, for errors: `serviceCidr.to[1]` in a pair, `serviceCidr.to` alone. */
  keys: { serviceFrom: string; serviceTo: string; podFrom: string; podTo: string };
}

const MASK_KEYS: Record<IpFamily, string> = { IPv4: "ipv4", IPv6: "ipv6" };
const DEFAULT_MASK: Record<IpFamily, number> = { IPv4: 24, IPv6: 64 };

const maskKey = (raw: unknown, family: IpFamily) => (typeof raw === "object" && raw !== null ? `podCidr.nodeMaskSize.${MASK_KEYS[family]}` : "podCidr.nodeMaskSize");

interface ReadList { ranges: string[]; keys: string[] }

/** One range or a pair, each a CIDR; a pair holds one range of each family. */
function readRangeList(r: Reader, key: string, value: unknown, example: string): ReadList | undefined {
  if (!Array.isArray(value)) {
    const cidr = r.cidr(key, value, example);
    return cidr ? { ranges: [cidr], keys: [key] } : undefined;
  }
  if (value.length === 0 || value.length > 2) {
    r.fail(key, `lists ${value.length} ranges; give one range, or a dual-stack pair of one IPv4 and one IPv6 range`);
    return undefined;
  }
  const keys = value.map((_, i) => `${key}[${i}]`);
  const ranges = value.map((v, i) => r.cidr(keys[i], v, example));
  if (ranges.some((c) => c === undefined)) return undefined;
  const cidrs = ranges as string[];
  if (cidrs.length === 2 && familyOf(cidrs[0]) === familyOf(cidrs[1])) {
    r.fail(key, `lists two ${familyOf(cidrs[0])} ranges (${cidrs.join(", ")}); a dual-stack pair is one IPv4 and one IPv6 range`);
    return undefined;
  }
  return { ranges: cidrs, keys };
}

const familiesOf = (list: ReadList) => list.ranges.map(familyOf);
const describe = (families: IpFamily[]) => (families.length === 1 ? `${families[0]} only` : `dual-stack (${families.join(", ")})`);

/**
 * `from` and `to` of one key must line up: the same families in the same order (the primary family cannot change in
 * place), or `to` adding a second family to a single-stack `from` while keeping the first range. Dual → single is
 * refused: a cluster cannot drop a family in place.
 */
function lineUp(r: Reader, key: string, from: ReadList, to: ReadList): boolean {
  const f = familiesOf(from);
  const t = familiesOf(to);
  if (f.length === 2 && t.length === 1) {
    r.fail(`${key}.to`, `${show(to.ranges[0])} is ${t[0]} only but ${key}.from is ${describe(f)}: dual-stack → single-stack is not supported, because Kubernetes cannot drop a family in place (every RequireDualStack or PreferDualStack Service and every Node's second podCIDR hold it); keep a pair in ${key}.to`);
    return false;
  }
  if (t[0] !== f[0]) {
    r.fail(`${key}.to`, `lists ${t[0]} first but ${key}.from lists ${f[0]} first; the first family is the cluster's primary family and cannot change in place: list ${key}.to in ${key}.from's order`);
    return false;
  }
  if (f.length === 1 && t.length === 2 && from.ranges[0] !== to.ranges[0]) {
    r.fail(to.keys[0], `${show(to.ranges[0])} differs from ${key}.from ${from.ranges[0]}: a run that adds the ${t[1]} family keeps the ${t[0]} range as it is (set ${to.keys[0]} to ${from.ranges[0]}); move the ${t[0]} range in a run of its own`);
    return false;
  }
  return true;
}

/** podCidr.nodeMaskSize: a number for a single-stack cluster, or one per family ({ipv4, ipv6}) for dual-stack. */
function readNodeMasks(r: Reader, raw: unknown, families: IpFamily[]): Record<IpFamily, number> | undefined {
  const key = "podCidr.nodeMaskSize";
  const example = families.length === 1 ? "24" : "'{\"ipv4\": 24, \"ipv6\": 64}'";
  if (raw === undefined) {
    r.fail(key, `is required; set it with: ${setCommand(key, example)}`);
    return undefined;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    if (families.length === 2) {
      r.fail(key, `${show(raw)} is one mask for two families; give one per family, e.g. { ipv4: 24, ipv6: 64 }`);
      return undefined;
    }
    return { [families[0]]: r.integer(key, raw, { min: 1, max: 128, fallback: 0 }) } as Record<IpFamily, number>;
  }
  const given = raw as Record<string, unknown>;
  r.unknownKeys(key, given, families.map((f) => MASK_KEYS[f]));
  const masks = {} as Record<IpFamily, number>;
  for (const family of families) {
    const familyKey = `${key}.${MASK_KEYS[family]}`;
    if (given[MASK_KEYS[family]] === undefined) {
      r.fail(familyKey, `is required for the ${family} pod range; set it with: ${setCommand(familyKey, String(DEFAULT_MASK[family]))}`);
    }
    masks[family] = r.integer(familyKey, given[MASK_KEYS[family]], { min: 1, max: 128, fallback: 0 });
  }
  return masks;
}

/**
 * The families of serviceCidr and podCidr, primary first, or undefined after recording why not. The two keys must
 * hold the same families: a cluster's Service and Pod ranges are both single-stack or both dual-stack.
 */
export function readFamilyRanges(r: Reader, svc: Record<string, unknown>, pod: Record<string, unknown>): FamilyRanges[] | undefined {
  const serviceFrom = readRangeList(r, "serviceCidr.from", svc.from, "10.96.0.0/12");
  const serviceTo = readRangeList(r, "serviceCidr.to", svc.to, "10.112.0.0/12");
  const podFrom = readRangeList(r, "podCidr.from", pod.from, "10.244.0.0/16");
  const podTo = readRangeList(r, "podCidr.to", pod.to, "10.48.0.0/16");
  // the node mask is checked whatever else failed, so that every problem is reported at once
  const masks = readNodeMasks(r, pod.nodeMaskSize, podTo ? familiesOf(podTo) : ["IPv4"]);
  if (podTo && masks) {
    podTo.ranges.forEach((range, i) => checkNodeMask(r, maskKey(pod.nodeMaskSize, familyOf(range)), range, masks[familyOf(range)], podTo.ranges.length > 1 ? familyOf(range) : undefined));
  }
  if (!serviceFrom || !serviceTo || !podFrom || !podTo) return undefined;
  const servicesLineUp = lineUp(r, "serviceCidr", serviceFrom, serviceTo);
  const podsLineUp = lineUp(r, "podCidr", podFrom, podTo);
  const families = familiesOf(serviceTo);
  if (!servicesLineUp || !podsLineUp || !masks) return undefined;
  if (familiesOf(podTo).join() !== families.join()) {
    r.fail("podCidr.to", `is ${describe(familiesOf(podTo))} but serviceCidr.to is ${describe(families)}; a cluster's Pod and Service ranges hold the same families, in the same order`);
    return undefined;
  }
  const adds = serviceFrom.ranges.length < families.length;
  return families.map((family, i) => ({
    family,
    role: !adds ? "move" : i === 0 ? "keep" : "add",
    service: { from: serviceFrom.ranges[i], to: serviceTo.ranges[i] },
    pod: { from: podFrom.ranges[i], to: podTo.ranges[i], nodeMaskSize: masks[family] },
    keys: {
      serviceFrom: serviceFrom.keys[i] ?? "serviceCidr.from",
      serviceTo: serviceTo.keys[i],
      podFrom: podFrom.keys[i] ?? "podCidr.from",
      podTo: podTo.keys[i],
    },
  }));
}
