import { KubeConfig } from "@kubernetes/client-node";
import { discoverInventory } from "../plan/discovery";
import { buildReport, Finding, FindingReport } from "../report/findings";
import { MigrationConfig, movesRanges } from "../config/migrationConfig";
import { Plan } from "../plan/planModel";
import { collectClusterObjects } from "../preflight/collect";
import { verifyClusterConfig } from "./clusterConfig";
import { verifyDisruptionBudgets } from "./disruptionBudgets";
import { verifyNodeAddresses } from "./nodeAddresses";
import { verifyPodNetwork } from "./podNetwork";
import { verifyServiceAddresses } from "./serviceAddresses";
import { verifyServiceCidrs } from "./serviceCidrs";
import { verifyTargets } from "./targets";
import { VerifyInput, rangeVerifyInput } from "./verifyInput";

/**
 * `cidr-migration verify`, also the graph's last phase: read-only proof that nothing is left in the old ranges.
 * Every finding is a blocker or a warning, so a clean cluster reports none at all.
 */

export { VerifyInput, VerifyTargets } from "./verifyInput";
export { verifyTargets } from "./targets";

export function verifyFindings(input: VerifyInput): Finding[] {
  // the ranges' checks, on every run but one that changes node addresses only
  const ranged = rangeVerifyInput(input);
  const rangeFindings = ranged ? [...verifyServiceAddresses(ranged), ...verifyServiceCidrs(ranged), ...verifyPodNetwork(ranged), ...verifyClusterConfig(ranged)] : [];
  return [...rangeFindings, ...verifyDisruptionBudgets(input), ...verifyNodeAddresses(input)];
}

export interface RunVerifyOptions {
  config: MigrationConfig;
  kubeConfig: KubeConfig;
  /** The plan reviewed before the run, for the DNS Service's planned address (see targets.ts). */
  reviewedPlan?: { plan: Plan; source: string };
}

export async function runVerify(opts: RunVerifyOptions): Promise<FindingReport> {
  const [inventory, cluster] = await Promise.all([
    discoverInventory(opts.kubeConfig),
    collectClusterObjects(opts.kubeConfig, { kinds: ["pods", "configMaps", "calicoIpamBlocks", "calicoBlockAffinities", "ipAddresses", "podDisruptionBudgets", "nodes"] }),
  ]);
  const targets = movesRanges(opts.config) ? verifyTargets(opts.config, inventory, opts.reviewedPlan) : undefined;
  return buildReport("verify", verifyFindings({ config: opts.config, inventory, cluster, targets }));
}
