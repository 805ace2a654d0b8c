/**
 * Which pods a node drain evicts, which it leaves, and which stop it: `kubectl drain`'s rules, minus `--force`.
 *
 * - DaemonSet pods are left (`--ignore-daemonsets`): their controller would put them straight back, and they go
 *   with the Node object anyway (the pod garbage collector removes pods of a deleted Node).
 * - Mirror pods (static pods: the control plane on a control-plane node) are left: the API cannot evict them.
 * - Pods with emptyDir volumes are evicted (`--delete-emptydir-data`); the scratch data is lost, as in a drain.
 * - Pods already being deleted are waited for, not evicted again.
 * - Finished pods (Succeeded/Failed) are evicted: they hold no capacity and the Eviction API allows them.
 * - Pods with no controller ("bare" pods) would not come back anywhere: refused unless the caller opted in
 *   with `unmanagedPods: "evict"`. Nothing is ever deleted past a PodDisruptionBudget.
 *
 * `pdbsBlocking(pod, pdbs)` names the budgets that select a pod, for the error when a drain times out.
 */

export interface PodLike {
  metadata?: {
    namespace?: string;
    name?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind: string; name: string; controller?: boolean }>;
    deletionTimestamp?: Date | string;
  };
  spec?: { volumes?: Array<{ emptyDir?: unknown }>; hostNetwork?: boolean };
  status?: { phase?: string; podIP?: string };
}

export type UnmanagedPodPolicy = "refuse" | "evict";

export type DrainDecision =
  | { action: "evict"; reason: string }
  | { action: "wait"; reason: string }
  | { action: "skip"; reason: string; daemonSet?: string }
  | { action: "refuse"; reason: string };

export const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

export function podKey(pod: PodLike): string {
  return `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
}

export function controllerOf(pod: PodLike): { kind: string; name: string } | undefined {
  return pod.metadata?.ownerReferences?.find((o) => o.controller === true);
}

export function decideDrain(pod: PodLike, unmanagedPods: UnmanagedPodPolicy = "refuse"): DrainDecision {
  if (pod.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return { action: "skip", reason: "mirror pod of a static pod" };
  const controller = controllerOf(pod);
  if (controller?.kind === "DaemonSet") {
    return { action: "skip", reason: `DaemonSet ${controller.name}`, daemonSet: `${pod.metadata?.namespace}/${controller.name}` };
  }
  if (pod.metadata?.deletionTimestamp) return { action: "wait", reason: "already terminating" };
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed") return { action: "evict", reason: `finished (${phase})` };
  if (!controller) {
    if (unmanagedPods === "evict") return { action: "evict", reason: "no controller; evicted by request (unmanagedPods: evict), it will not come back" };
    return { action: "refuse", reason: "no controller would re-create it" };
  }
  const emptyDir = (pod.spec?.volumes ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null);
  return { action: "evict", reason: `${controller.kind} ${controller.name}${emptyDir ? " (emptyDir data is lost)" : ""}` };
}

export interface DrainPlan {
  evict: PodLike[];
  wait: PodLike[];
  skipped: Array<{ pod: string; reason: string }>;
  refused: Array<{ pod: string; reason: string }>;
  /** "namespace/name" of the DaemonSets with a pod on the node. */
  daemonSets: string[];
  /** uids of those DaemonSet pods: after the move they belong to the old Node and are replaced. */
  daemonSetPodUids: string[];
}

export function planDrain(pods: readonly PodLike[], unmanagedPods: UnmanagedPodPolicy = "refuse"): DrainPlan {
  const plan: DrainPlan = { evict: [], wait: [], skipped: [], refused: [], daemonSets: [], daemonSetPodUids: [] };
  for (const pod of pods) {
    const decision = decideDrain(pod, unmanagedPods);
    if (decision.action === "evict") plan.evict.push(pod);
    else if (decision.action === "wait") plan.wait.push(pod);
    else if (decision.action === "refuse") plan.refused.push({ pod: podKey(pod), reason: decision.reason });
    else {
      plan.skipped.push({ pod: podKey(pod), reason: decision.reason });
      if (decision.daemonSet && !plan.daemonSets.includes(decision.daemonSet)) plan.daemonSets.push(decision.daemonSet);
      if (decision.daemonSet && pod.metadata?.uid) plan.daemonSetPodUids.push(pod.metadata.uid);
    }
  }
  plan.daemonSets.sort();
  plan.daemonSetPodUids.sort();
  return plan;
}

export interface LabelSelectorLike {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** Kubernetes label-selector semantics (an empty selector matches everything, as for a PDB in policy/v1). */
export function selectorMatches(selector: LabelSelectorLike | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const values = e.values ?? [];
    if (e.operator === "In" && !(has && values.includes(labels[e.key]))) return false;
    if (e.operator === "NotIn" && has && values.includes(labels[e.key])) return false;
    if (e.operator === "Exists" && !has) return false;
    if (e.operator === "DoesNotExist" && has) return false;
  }
  return true;
}

export interface PdbLike {
  metadata?: { namespace?: string; name?: string };
  spec?: { selector?: LabelSelectorLike };
  status?: { disruptionsAllowed?: number };
}

/** The budgets selecting this pod, as "namespace/name (N disruptions allowed)". */
export function pdbsBlocking(pod: PodLike, pdbs: readonly PdbLike[]): string[] {
  const labels = pod.metadata?.labels ?? {};
  return pdbs
    .filter((p) => p.metadata?.namespace === pod.metadata?.namespace && selectorMatches(p.spec?.selector, labels))
    .map((p) => `PodDisruptionBudget ${p.metadata?.namespace}/${p.metadata?.name} (${p.status?.disruptionsAllowed ?? 0} disruptions allowed)`);
}
