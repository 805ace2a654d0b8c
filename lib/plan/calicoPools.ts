/**
 * Which way the Calico pools move, decided from discovery: through the Tigera operator's Installation when it
 * lists the pool that holds the old pod range (the operator would undo direct edits), else as IPPool objects.
 */
import { cidrsOverlap, isCidr, normalizeCidr } from "../net/cidr";
import { defaultNewPoolName } from "../podNetwork/calicoPool";
import { INSTALLATION_NAME, installationRefusals, listedOldPool, newPoolNameIn, PoolRangeMove } from "../podNetwork/calicoInstallation";
import { SecondFamily } from "../config/migrationConfig";
import { CniInfo } from "./inventory";
import { CalicoPoolPlan, Plan } from "./planModel";

export function calicoPoolPlan(cni: CniInfo, podCidr: { from: string; to: string }): CalicoPoolPlan {
  const oldPool = cni.calicoPools.find((p) => cidrsOverlap(p.cidr, podCidr.from));
  const operator = cni.calicoOperator;
  const validEntries = operator?.ipPools?.filter((p) => isCidr(p.cidr));
  const listed = listedOldPool(validEntries, podCidr.from, podCidr.to);
  // Part-way through the operator path the old pool may be unlisted already, the new one listed.
  const listedNew = validEntries?.find((p) => normalizeCidr(p.cidr) === normalizeCidr(podCidr.to));
  if (operator && (listed || listedNew)) {
    const which = listed ? `pool ${listed.name ?? listed.cidr} (${listed.cidr})` : `the new pool ${listedNew!.name ?? listedNew!.cidr} (${listedNew!.cidr})`;
    return {
      management: "operator",
      installation: INSTALLATION_NAME,
      oldPool: listed?.name ?? oldPool?.name,
      newPool: newPoolNameIn(operator, podCidr.to),
      reason: `Installation ${INSTALLATION_NAME} lists ${which}: the Tigera operator owns the pools, so they move through the Installation`,
    };
  }
  const why = !operator
    ? "no Tigera operator Installation"
    : operator.ipPools === undefined
      ? `Installation ${INSTALLATION_NAME} has no ipPools yet (the operator has not defaulted it)`
      : operator.ipPools.length === 0
        ? `Installation ${INSTALLATION_NAME} manages no pools (ipPools: [])`
        : `Installation ${INSTALLATION_NAME} lists no pool in ${podCidr.from}`;
  return { management: "manifest", oldPool: oldPool?.name, newPool: defaultNewPoolName(podCidr.to), reason: `${why}: the IPPool objects are edited directly` };
}

/** The pool moves of a run: the first family's, and a dual-stack run's second one when it moves (not when it is added). */
export function calicoPoolRangeMoves(podCidr: PoolRangeMove, second?: Pick<SecondFamily, "role" | "podCidr">): PoolRangeMove[] {
  const other = second?.role === "move" && second.podCidr.from ? [{ from: second.podCidr.from, to: second.podCidr.to }] : [];
  return [{ from: podCidr.from, to: podCidr.to }, ...other];
}

/** Why the operator path cannot run on this cluster (empty on the manifest path, or when it can). */
export function calicoPoolRefusals(cni: CniInfo, podCidr: PoolRangeMove, second?: Pick<SecondFamily, "family" | "role" | "podCidr">): string[] {
  const operator = cni.calicoOperator;
  if (!operator?.ipPools) return [];
  const invalid = operator.ipPools.filter((p) => !isCidr(p.cidr));
  if (invalid.length > 0) {
    return invalid.map((p) => `Installation ${INSTALLATION_NAME} lists pool ${p.name ?? "(unnamed)"} with cidr "${String(p.cidr)}", which is not a CIDR; fix the Installation first`);
  }
  if (calicoPoolPlan(cni, podCidr).management !== "operator") return [];
  return installationRefusals(operator, cni.calicoPools, calicoPoolRangeMoves(podCidr, second), second?.role === "add" ? second.family : undefined);
}

/** The CNI as plan, report and preview name it, with the Calico pools' path. */
export function cniSummary(plan: Pick<Plan, "cni" | "calicoPools">): string {
  const pools = plan.calicoPools;
  if (!pools) return plan.cni;
  return `${plan.cni} (pools: ${pools.management === "operator" ? `through Installation ${pools.installation}` : "IPPool objects"})`;
}
