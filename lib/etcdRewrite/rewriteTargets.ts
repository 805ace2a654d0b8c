import { Plan } from "../plan/planModel";
import { serviceRefKey } from "../serviceMove/serviceRef";
import { AddressChange } from "./addressChange";
import { RewriteTargets } from "./rewritePlan";

export const DEFAULT_ETCD_PREFIX = "/registry";

/**
 * What the rewrite moves, from the plan: every Service the plan re-creates (the kubernetes and DNS Services too:
 * with the apiservers down they move with the rest), and every Node whose podCIDR moves.
 */
export function rewriteTargetsFromPlan(plan: Plan, prefix = DEFAULT_ETCD_PREFIX): RewriteTargets {
  const services = new Map<string, AddressChange[]>();
  for (const s of plan.services) {
    if (s.action === "recreate" && s.oldClusterIP && s.newClusterIP && s.oldClusterIP !== s.newClusterIP) {
      services.set(serviceRefKey(s), [{ from: s.oldClusterIP, to: s.newClusterIP }]);
    }
  }
  const k = plan.kubernetesService;
  if (k.oldClusterIP && k.oldClusterIP !== k.newClusterIP) services.set("default/kubernetes", [{ from: k.oldClusterIP, to: k.newClusterIP }]);
  const nodes = new Map<string, AddressChange[]>();
  for (const n of plan.nodes) {
    if (n.action === "move" && n.oldPodCIDR && n.oldPodCIDR !== n.newPodCIDR) nodes.set(n.name, [{ from: n.oldPodCIDR, to: n.newPodCIDR }]);
  }
  return {
    prefix,
    serviceCidr: { from: plan.serviceCidr.from, to: plan.serviceCidr.to },
    services,
    podCidr: plan.podCidr.from !== plan.podCidr.to ? { from: plan.podCidr.from, to: plan.podCidr.to } : undefined,
    nodes,
  };
}

/**
 * The old-IP bridges a rewrite opens (dynamic-providers/oldIpBridgeOpen): "namespace/name" → the ClusterIP it keeps
 * answering at, for every moving Service, or only for those in `only` (services.bridgeOldIps false: the DNS and
 * kubernetes Services, which every pod reaches through its old address until it restarts).
 */
export function bridgeTargets(targets: RewriteTargets, only?: readonly string[]): Record<string, string> {
  const bridged: Record<string, string> = {};
  for (const [key, [change]] of targets.services) {
    if (!only || only.includes(key)) bridged[key] = change.from;
  }
  return bridged;
}
