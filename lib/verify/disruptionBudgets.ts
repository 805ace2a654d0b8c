import { Finding } from "../report/findings";
import { BUDGET_MANAGED_BY_LABEL, BUDGET_MANAGER } from "../nodeMove/dnsDisruptionBudget";
import { VerifyInput } from "./verifyInput";

/**
 * The DNS pods' budget (nodeRollout.dnsDisruptionBudget) is the run's own and lasts only for the node rollout. One
 * left behind does no harm to DNS, but it is not the user's, so it is reported until a re-run's close step ends it.
 */
export function verifyDisruptionBudgets(input: VerifyInput): Finding[] {
  return input.cluster.podDisruptionBudgets
    .filter((budget) => budget.metadata.labels?.[BUDGET_MANAGED_BY_LABEL] === BUDGET_MANAGER)
    .map((budget) => ({
      code: "DNS_DISRUPTION_BUDGET_LEFT",
      severity: "warning" as const,
      object: `PodDisruptionBudget ${budget.metadata.namespace}/${budget.metadata.name}`,
      message: "the node rollout's temporary budget over the DNS pods is still there (removed after the last node)",
      action: "run `pulumi up` again: its dns-budget-close step removes it; or delete it, it is this tool's alone",
    }));
}
