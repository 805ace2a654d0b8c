import { FlagValue } from "./manifestFlags";

/**
 * The range flags kube-apiserver and kube-controller-manager run with after the migration, for one address family
 * or two (issue 17). A dual-stack pair is written comma-separated, primary family first, as the components read it;
 * KCM then takes a node mask per family and refuses `--node-cidr-mask-size` beside them, so that flag is removed
 * (null), which is how a single-stack cluster's manifest becomes a dual-stack one.
 */

/** One family's target ranges. */
export interface FamilyTarget {
  serviceCidr: string;
  podCidr: string;
  nodeMaskSize: number;
}

/** The ranges of every family the cluster ends with, primary first. */
export type RangeTargets = [FamilyTarget] | [FamilyTarget, FamilyTarget];

const joined = (targets: RangeTargets, pick: (t: FamilyTarget) => string) => targets.map(pick).join(",");
const familyKey = (cidr: string) => (cidr.includes(":") ? "ipv6" : "ipv4");

export function apiserverRangeFlags(targets: RangeTargets): Record<string, FlagValue> {
  return { "service-cluster-ip-range": joined(targets, (t) => t.serviceCidr) };
}

export function controllerManagerRangeFlags(targets: RangeTargets, allocateNodeCidrs: boolean): Record<string, FlagValue | null> {
  const masks: Record<string, FlagValue | null> =
    targets.length === 1
      ? { "node-cidr-mask-size": targets[0].nodeMaskSize }
      : Object.fromEntries([["node-cidr-mask-size", null], ...targets.map((t) => [`node-cidr-mask-size-${familyKey(t.podCidr)}`, t.nodeMaskSize])]);
  return {
    "cluster-cidr": joined(targets, (t) => t.podCidr),
    "service-cluster-ip-range": joined(targets, (t) => t.serviceCidr),
    ...masks,
    "allocate-node-cidrs": allocateNodeCidrs,
  };
}
