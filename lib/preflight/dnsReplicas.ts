import { cidrContains } from "../net/cidr";
import { Finding } from "../report/findings";
import { objectLabel, PreflightInput } from "./checkInput";

/**
 * DNS through the node rollout: the rollout's disruption budget (nodeRollout.dnsDisruptionBudget) keeps one DNS pod
 * answering while nodes drain, which takes two. With one, every lookup in the cluster fails from the moment its
 * node drains until its replacement is Ready elsewhere.
 */
export function checkDnsReplicas(input: PreflightInput): Finding[] {
  const { config, cluster } = input;
  // the nodes that drain: those outside the new pod range, or (a run that changes node addresses only) the workers moved
  const podTo = config.podCidr?.to;
  const nodesMove = podTo
    ? cluster.nodes.some((n) => n.spec?.podCIDR !== undefined && !cidrContains(podTo, n.spec.podCIDR))
    : config.nodeAddresses.some((c) => c.role === "worker");
  if (!nodesMove) return [];
  const dns = cluster.services.find((s) => s.metadata?.namespace === config.dns.namespace && s.metadata?.name === config.dns.name);
  const selector = dns?.spec?.selector;
  if (!dns || !selector || Object.keys(selector).length === 0) return [];
  const ready = cluster.pods.filter((pod) => pod.metadata?.namespace === config.dns.namespace
    && !pod.metadata?.deletionTimestamp
    && Object.entries(selector).every(([key, value]) => pod.metadata?.labels?.[key] === value)
    && (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True"));
  // none Ready: DNS runs elsewhere (or not at all), which no drain changes
  if (ready.length !== 1) return [];
  return [{
    code: "DNS_SINGLE_REPLICA",
    severity: "warning",
    object: objectLabel("Service", dns.metadata),
    message: `one Ready DNS pod behind it: every DNS lookup in the cluster fails while node ${ready[0].spec?.nodeName ?? "?"} drains, until its replacement is Ready elsewhere`,
    action: "run at least two DNS replicas for the migration (kubectl -n kube-system scale deployment coredns --replicas=2), on different nodes",
  }];
}
