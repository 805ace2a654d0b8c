import * as pulumi from "@pulumi/pulumi";
import { DnsDisruptionBudget } from "../dynamic-providers/dnsDisruptionBudget";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { Plan } from "../lib/plan/planModel";
import { PlanOrder } from "./planOrder";

export interface DnsBudgetAroundRollout {
  open?: DnsDisruptionBudget;
  /** Declares the close once the rollout's last steps are known; nothing when no budget was opened. */
  close(after: pulumi.Resource[]): DnsDisruptionBudget | undefined;
}

/**
 * nodeRollout.dnsDisruptionBudget: while nodes drain, a PodDisruptionBudget keeps one DNS pod answering; opened
 * before the first drain, closed after the last node. Only when the rollout moves a node.
 */
export function dnsBudgetAroundRollout(order: PlanOrder, args: { config: MigrationConfig; plan: Plan; kubeconfig: pulumi.Output<string>; runId: string }, before: pulumi.Resource[]): DnsBudgetAroundRollout {
  const { config, plan } = args;
  const budget = { kubeconfig: args.kubeconfig, namespace: plan.dns.namespace, name: plan.dns.name, trigger: args.runId };
  const open = config.nodeRollout.dnsDisruptionBudget && plan.nodes.some((n) => n.action === "move")
    ? order.declare("dns-budget-open", [], before, (o) => new DnsDisruptionBudget("dns-budget-open", { ...budget, step: "open" }, o))
    : undefined;
  return {
    open,
    close: (after) => (open ? order.declare("dns-budget-close", [], after, (o) => new DnsDisruptionBudget("dns-budget-close", { ...budget, step: "close" }, o)) : undefined),
  };
}
