/**
 * Decisions after a node registered again: is this Node the re-registration or still the old object, what to do
 * about its podCIDR, is it Ready, and are its pods back in the new subnet.
 *
 * podCIDR: `Node.spec.podCIDR` can only go from empty to a value. During the rollout kube-controller-manager runs
 * with `--allocate-node-cidrs=false` (it would exit on the old nodes' podCIDRs otherwise), so the tool sets the
 * planned one on the fresh Node. A value that is already there must be the planned one: anything else cannot be
 * changed without another delete, and the step fails naming both.
 */
import { normalizeCidr } from "../net/cidr";
import { inRangeList } from "../net/rangeList";
import { PodLike, controllerOf, podKey } from "./drainDecision";

/** A pod with the readiness the kubelet reports. */
export interface ReportedPodLike extends PodLike {
  status?: PodLike["status"] & { conditions?: Array<{ type: string; status: string }> };
}

export interface RegisteredNodeLike {
  metadata?: { uid?: string; creationTimestamp?: Date | string };
  spec?: { podCIDR?: string; podCIDRs?: string[] };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

export type RegistrationState = "absent" | "old-object" | "re-registered";

export function registrationState(node: RegisteredNodeLike | undefined, backedUpUid: string): RegistrationState {
  if (!node) return "absent";
  return node.metadata?.uid === backedUpUid ? "old-object" : "re-registered";
}

/** `podCIDRs`: the node's subnet, or on a dual-stack run one per family, primary first (spec.podCIDR is the first). */
export type PodCidrAction = { action: "assign"; podCIDRs: string[] } | { action: "keep" } | { action: "fail"; message: string };

/** The subnets a Node holds, primary first: spec.podCIDRs, else spec.podCIDR alone (as older apiservers set it). */
export function podCidrsOf(node: RegisteredNodeLike | undefined): string[] {
  return node?.spec?.podCIDRs?.length ? node.spec.podCIDRs : node?.spec?.podCIDR ? [node.spec.podCIDR] : [];
}

/** `planned`: the node's new subnet, or a dual-stack pair comma-separated (plan.nodes[].newPodCIDRs). */
export function podCidrAction(nodeName: string, node: RegisteredNodeLike, planned: string): PodCidrAction {
  const want = planned.split(",").map(normalizeCidr);
  const current = podCidrsOf(node);
  if (current.length === 0) return { action: "assign", podCIDRs: want };
  if (current.map(normalizeCidr).join() === want.join()) return { action: "keep" };
  return {
    action: "fail",
    message: `Node ${nodeName} came back with podCIDR ${current.join(",")}, planned ${want.join(",")}: kube-controller-manager allocated it (run it with --allocate-node-cidrs=false during the node rollout); delete the Node again or re-plan with this subnet`,
  };
}

export function isReady(node: RegisteredNodeLike): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

/**
 * Pods on the node that hold an address outside its new subnet (host-network pods use the node's own IP).
 * `podCIDR` may be a dual-stack pair, comma-separated: each address is held to its own family's subnet.
 */
export function podsOutsideSubnet(pods: readonly PodLike[], podCIDR: string): Array<{ pod: string; podIP: string }> {
  return pods
    .filter((p) => p.spec?.hostNetwork !== true && !p.metadata?.deletionTimestamp && p.status?.podIP)
    .filter((p) => !inRangeList(podCIDR, p.status!.podIP!))
    .map((p) => ({ pod: podKey(p), podIP: p.status!.podIP! }));
}

/**
 * DaemonSet pods left from before the move. Stopping the kubelet does not stop containers, and the pod garbage
 * collector only removes a deleted Node's pods after a 40 s quarantine, when the Node has not come back meanwhile.
 * So the node's CNI agent, kube-proxy and other DaemonSet pods usually survive the re-registration, still on the
 * old network (an old-range address, a CNI agent holding its old subnet lease). They are evicted once the Node is
 * back (the kubelet stops them properly), and their DaemonSets start them again for the new subnet: those whose uid
 * was recorded at drain time, and any DaemonSet pod holding an address outside the new subnet.
 */
export function staleDaemonSetPods<P extends PodLike>(pods: readonly P[], recordedUids: readonly string[], podCIDR: string): P[] {
  const outside = new Set(podsOutsideSubnet(pods, podCIDR).map((o) => o.pod));
  return pods.filter((p) => controllerOf(p)?.kind === "DaemonSet" && !p.metadata?.deletionTimestamp && (recordedUids.includes(p.metadata?.uid ?? "") || outside.has(podKey(p))));
}

export interface PodsBack {
  done: boolean;
  /** DaemonSets (namespace/name) that had a pod on the node and have no Ready one there yet. */
  missingDaemonSets: string[];
  outside: Array<{ pod: string; podIP: string }>;
}

/** The node's pods are back when every DaemonSet it ran has a Ready pod there and no pod holds an old address. */
export function podsBack(pods: readonly ReportedPodLike[], daemonSets: readonly string[], podCIDR: string): PodsBack {
  const ready = new Set<string>();
  for (const pod of pods) {
    const controller = controllerOf(pod);
    const podReady = pod.status?.phase === "Running" && (pod.status.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    if (controller?.kind === "DaemonSet" && podReady && !pod.metadata?.deletionTimestamp) ready.add(`${pod.metadata?.namespace}/${controller.name}`);
  }
  const missingDaemonSets = daemonSets.filter((ds) => !ready.has(ds));
  const outside = podsOutsideSubnet(pods, podCIDR);
  return { done: missingDaemonSets.length === 0 && outside.length === 0, missingDaemonSets, outside };
}
