import { LabelSelectorLike, selectorMatches } from "./drainDecision";
import { isStatus, KubeObject, KubeRest } from "../serviceMove/kubeRest";

/**
 * The DNS pods' disruption budget for the node rollout. kubeadm's CoreDNS has no PodDisruptionBudget, and its two
 * replicas often run on one node (the first Ready, the control plane): draining that node evicts both at once, and
 * every lookup in the cluster fails until one runs elsewhere (8 s on the node lab). For the length of the rollout a
 * budget of maxUnavailable 1 over the DNS Service's pods makes the drain wait for the first replacement to be Ready
 * before the second replica goes. maxUnavailable, not minAvailable: a single-replica DNS still drains.
 *
 * A budget the user already has over the DNS pods is left alone and none is added: a pod under two budgets cannot
 * be evicted at all. Ours carries the managed-by label, so the close step (and a re-run) finds it, wherever an
 * earlier run's dns settings put it.
 */

export const BUDGET_MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const BUDGET_MANAGER = "cidr-migration.io";
/** How long the open step waits for the disruption controller to compute the new budget. */
export const BUDGET_OBSERVED_TIMEOUT_MS = 30_000;

export interface DnsRef {
  namespace: string;
  name: string;
}

export interface BudgetOutcome {
  /** "namespace/name" of the budget ours created or removed; absent when none was */
  budget?: string;
  /** what the step did, in words, for the preview and the log */
  action: string;
}

export function dnsBudgetName(dnsServiceName: string): string {
  return `${dnsServiceName}-cidr-migration`.slice(0, 253);
}

function isOurs(budget: KubeObject): boolean {
  return budget.metadata?.labels?.[BUDGET_MANAGED_BY_LABEL] === BUDGET_MANAGER;
}

/** The budget for the pods the DNS Service selects. */
export function dnsBudgetBody(dns: DnsRef, selector: Record<string, string>, policyVersion: string): KubeObject {
  return {
    apiVersion: `policy/${policyVersion}`,
    kind: "PodDisruptionBudget",
    metadata: {
      name: dnsBudgetName(dns.name),
      namespace: dns.namespace,
      labels: { [BUDGET_MANAGED_BY_LABEL]: BUDGET_MANAGER },
      annotations: { "cidr-migration.io/purpose": `keeps one ${dns.namespace}/${dns.name} pod answering while nodes drain; removed after the node rollout` },
    },
    spec: { maxUnavailable: 1, selector: { matchLabels: { ...selector } } },
  };
}

/**
 * The user's budgets that already cover a DNS pod. policy/v1beta1 (before 1.21) reads an empty selector as
 * matching nothing; policy/v1 as matching every pod of the namespace.
 */
export function budgetsCoveringPods(budgets: KubeObject[], pods: KubeObject[], policyVersion: string): KubeObject[] {
  return budgets.filter((budget) => {
    if (isOurs(budget)) return false;
    const selector = (budget.spec as { selector?: LabelSelectorLike } | undefined)?.selector;
    const empty = !selector || (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0);
    if (empty && policyVersion !== "v1") return false;
    return pods.some((pod) => selectorMatches(selector ?? {}, pod.metadata?.labels ?? {}));
  });
}

/** The policy group version this cluster serves for PodDisruptionBudgets. */
export async function policyVersionOf(rest: KubeRest): Promise<string> {
  const group = await rest.getOptional("/apis/policy");
  const versions = ((group?.versions as { version?: string }[] | undefined) ?? []).map((v) => v.version);
  return versions.includes("v1") ? "v1" : "v1beta1";
}

function budgetsPath(policyVersion: string, namespace?: string): string {
  return namespace === undefined
    ? `/apis/policy/${policyVersion}/poddisruptionbudgets`
    : `/apis/policy/${policyVersion}/namespaces/${encodeURIComponent(namespace)}/poddisruptionbudgets`;
}

function selectorQuery(selector: Record<string, string>): string {
  return Object.entries(selector).map(([key, value]) => `${key}=${value}`).join(",");
}

/**
 * Puts the budget in place before the rollout and waits until the disruption controller has computed it (until
 * then an eviction is refused for every pod it covers, which would only slow the drains). Idempotent: a budget of
 * ours from an interrupted run is kept as it is.
 */
export async function openDnsBudget(rest: KubeRest, dns: DnsRef, timeoutMs = BUDGET_OBSERVED_TIMEOUT_MS): Promise<BudgetOutcome> {
  const key = `${dns.namespace}/${dns.name}`;
  const service = await rest.getOptional(`/api/v1/namespaces/${encodeURIComponent(dns.namespace)}/services/${encodeURIComponent(dns.name)}`);
  if (!service) return { action: `none added: there is no Service ${key}` };
  const selector = (service.spec as { selector?: Record<string, string> } | undefined)?.selector ?? {};
  if (Object.keys(selector).length === 0) return { action: `none added: Service ${key} has no selector, so its pods cannot be told apart` };
  const version = await policyVersionOf(rest);
  const pods = await rest.list(`/api/v1/namespaces/${encodeURIComponent(dns.namespace)}/pods`, { labelSelector: selectorQuery(selector) });
  const covering = budgetsCoveringPods(await rest.list(budgetsPath(version, dns.namespace)), pods, version);
  if (covering.length > 0) {
    return { action: `none added: PodDisruptionBudget ${dns.namespace}/${covering[0].metadata?.name} already covers the ${key} pods` };
  }
  const body = dnsBudgetBody(dns, selector, version);
  const name = body.metadata!.name!;
  const path = `${budgetsPath(version, dns.namespace)}/${encodeURIComponent(name)}`;
  try {
    await rest.create(budgetsPath(version, dns.namespace), body);
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
    const existing = await rest.get(path);
    if (!isOurs(existing)) {
      throw new Error(`PodDisruptionBudget ${dns.namespace}/${name} exists and is not this tool's (no ${BUDGET_MANAGED_BY_LABEL}=${BUDGET_MANAGER}); rename it, or give it the ${key} pods' selector, and run again`);
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const budget = await rest.get(path);
    const observed = (budget.status as { observedGeneration?: number } | undefined)?.observedGeneration ?? 0;
    if (observed >= Number(budget.metadata?.generation ?? 1)) break;
    if (Date.now() > deadline) {
      return { budget: `${dns.namespace}/${name}`, action: `added PodDisruptionBudget ${dns.namespace}/${name} (maxUnavailable 1); the disruption controller had not computed it after ${Math.round(timeoutMs / 1000)} s, so drains wait for it` };
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { budget: `${dns.namespace}/${name}`, action: `added PodDisruptionBudget ${dns.namespace}/${name} (maxUnavailable 1 over the ${key} pods)` };
}

/** Removes every budget of ours, in any namespace, after the rollout. */
export async function closeDnsBudgets(rest: KubeRest): Promise<BudgetOutcome[]> {
  const version = await policyVersionOf(rest);
  const ours = await rest.list(budgetsPath(version), { labelSelector: `${BUDGET_MANAGED_BY_LABEL}=${BUDGET_MANAGER}` });
  const outcomes: BudgetOutcome[] = [];
  for (const budget of ours) {
    const { namespace = "", name = "", uid } = budget.metadata ?? {};
    try {
      await rest.delete(`${budgetsPath(version, namespace)}/${encodeURIComponent(name)}`, { preconditions: { uid } });
    } catch (err) {
      if (!isStatus(err, 404)) throw err;
    }
    outcomes.push({ budget: `${namespace}/${name}`, action: `removed PodDisruptionBudget ${namespace}/${name}` });
  }
  return outcomes;
}
