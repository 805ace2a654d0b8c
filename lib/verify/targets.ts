import { kubernetesServiceIP } from "../net/cidr";
import { Inventory } from "../plan/inventory";
import { RangeMigrationConfig } from "../config/migrationConfig";
import { planAsFound } from "../plan/plan";
import { Plan } from "../plan/planModel";
import { VerifyTargets } from "./verifyInput";

/**
 * The addresses verify holds the cluster to. The DNS Service's comes from the plan: best the one reviewed before the
 * run (`cidr-migration plan --json > plan.json`, or the graph's own plan), else the plan of the live cluster, which
 * still says where a not-yet-moved DNS Service goes but can only confirm that a moved one sits in the new range.
 */
export function verifyTargets(config: RangeMigrationConfig, inventory: Inventory, reviewed?: { plan: Plan; source: string }): VerifyTargets {
  const plan = reviewed?.plan ?? planAsFound(config, inventory);
  return {
    kubernetesServiceIP: kubernetesServiceIP(config.serviceCidr.to),
    dnsServiceIP: plan.dns.newClusterIP,
    dnsSource: reviewed ? reviewed.source : "the plan of the live cluster",
  };
}
