/**
 * The API side of a control-plane node's address change (issue 16). The node keeps its Node object (its kubelet
 * restarts with the new --node-ip), so what names the old address in the API is brought along in two steps:
 * - `address-reported`, right after the kubelet restarted: the Node reports the new InternalIP (and no other of its
 *   family). The static pods restart only after it: a host-network pod takes the Node's address when it starts and
 *   keeps it for its life.
 * - `address-follow`, once the static pods restarted: the node's host-network pods still at the old address get a
 *   new one. A DaemonSet's pod (kube-proxy, the CNI agent) is deleted and its controller makes another. Then the
 *   step waits until every DaemonSet and static pod of the node reports the new address; a static pod cannot be
 *   moved from here (its mirror keeps its address when deleted), so one still at the old address fails the step
 *   with what to do. A pod of any other owner is left and reported: deleting it is the operator's call.
 * - `address-agents`, once the old address is gone from the node (a worker's too): every host-network DaemonSet pod
 *   of the node (the CNI agent, kube-proxy) is restarted, since each detected the node's address when it started and
 *   keeps it: flannel's VXLAN device and the other nodes' forwarding entries still name the old address, and pod
 *   traffic to and from the node stops with it (found on the node lab). Then the step waits until each of those
 *   DaemonSets has a new pod Ready on the node and every CNI address annotation of the Node names the new address.
 * A re-run finds the Node at its address and no such pod, and changes nothing.
 */
import { V1Pod } from "@kubernetes/client-node";
import { familyOf } from "../../net/cidr";
import { isMirrorPod } from "../../preflight/controlPlanePods";
import { cniNodeAddresses } from "../../podNetwork/cniNodeAddress";
import { controllerOf, podKey } from "../drainDecision";
import { isReady } from "../rejoinChecks";
import { DEFAULT_REJOIN_TIMEOUT_SECONDS, waitInternalIP } from "./rejoin";
import { StepRun } from "./stepRun";

/** How long every host-network pod must stay at the new address before the step is done. */
export const STABLE_MS = 10_000;

const atAddress = (pod: V1Pod, ip: string) => Boolean(pod.spec?.hostNetwork) && (pod.status?.podIPs ?? [{ ip: pod.status?.podIP }]).some((p) => p.ip === ip);
const ownedByDaemonSet = (pod: V1Pod) => controllerOf(pod)?.kind === "DaemonSet";

function addresses(run: StepRun): { internalIP: string; oldInternalIP: string; timeout: number } {
  const { internalIP, oldInternalIP } = run.inputs;
  if (!internalIP || !oldInternalIP) throw new Error(`node ${run.inputs.node}: ${run.inputs.step} needs internalIP and oldInternalIP`);
  return { internalIP, oldInternalIP, timeout: run.inputs.rejoinTimeoutSeconds ?? DEFAULT_REJOIN_TIMEOUT_SECONDS };
}

export async function addressReported(run: StepRun): Promise<Record<string, unknown>> {
  const { internalIP, timeout } = addresses(run);
  await waitInternalIP(run, timeout, internalIP);
  return { internalIP, elapsedSeconds: run.elapsedSeconds() };
}

export async function addressFollow(run: StepRun): Promise<Record<string, unknown>> {
  const { internalIP, oldInternalIP, timeout } = addresses(run);
  await waitInternalIP(run, timeout, internalIP);
  const stale = (await run.podsOnNode()).filter((p) => atAddress(p, oldInternalIP));
  const replaced = stale.filter(ownedByDaemonSet);
  const left = stale.filter((p) => !ownedByDaemonSet(p) && !isMirrorPod(p)).map(podKey).sort();
  for (const pod of replaced) {
    const [namespace, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
    await run.optional(`deleting pod ${namespace}/${name}`, () => run.c.core.deleteNamespacedPod({ namespace, name }));
    run.log(`pod ${namespace}/${name} was at ${oldInternalIP}: deleted, its DaemonSet makes another`);
  }
  // every DaemonSet and static pod of the node reports the new address, and goes on doing so for STABLE_MS: a
  // restarted static pod's mirror can be deleted and made again by its kubelet after it first reported (found on the
  // node lab), so every static pod seen once must be there again, at the new address
  const leftKeys = new Set(left);
  const staticPods = new Set<string>();
  let waiting: V1Pod[] = [];
  let missing: string[] = [];
  let steadySince: number | undefined;
  await run.within(timeout, `the host-network pods at ${internalIP}`, async () => {
    const pods = (await run.podsOnNode()).filter((p) => p.spec?.hostNetwork && !leftKeys.has(podKey(p)));
    for (const p of pods) if (isMirrorPod(p)) staticPods.add(podKey(p));
    waiting = pods.filter((p) => !atAddress(p, internalIP));
    missing = [...staticPods].filter((key) => !pods.some((p) => podKey(p) === key));
    if (waiting.length > 0 || missing.length > 0) steadySince = undefined;
    else steadySince ??= Date.now();
    return steadySince !== undefined && Date.now() - steadySince >= STABLE_MS ? true : undefined;
  }, () => {
    const statics = waiting.filter((p) => isMirrorPod(p) && atAddress(p, oldInternalIP)).map(podKey);
    return `not at ${internalIP}: ${[...waiting.map((p) => `${podKey(p)} (${p.status?.podIP ?? "no address yet"})`), ...missing.map((key) => `${key} (its mirror pod is gone)`)].join(", ")}${statics.length > 0 ? `; a static pod keeps the address it started with: restart ${statics.join(", ")} as a new pod by changing its manifest in /etc/kubernetes/manifests (an annotation such as cidr-migration.io/node-address: ${internalIP}, as the components step marks the controller-manager's and the scheduler's; moving the same manifest out and back brings the pod back under its old UID, and its mirror pod may not return), then run again` : "; check the kubelet on the node (journalctl -u kubelet)"}`;
  });
  if (left.length > 0) run.log(`left at ${oldInternalIP} (neither a DaemonSet's nor a static pod; restart them when convenient): ${left.join(", ")}`);
  run.log(`verified: InternalIP ${internalIP}; every DaemonSet and static pod of the node at ${internalIP} (${replaced.length} DaemonSet pod(s) replaced)`);
  return { internalIP, replacedPods: replaced.map(podKey).sort(), leftAtOldAddress: left, elapsedSeconds: run.elapsedSeconds() };
}

const daemonSetOf = (pod: V1Pod) => `${pod.metadata?.namespace}/${controllerOf(pod)?.name}`;
const podReady = (pod: V1Pod) => (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");

export async function addressAgents(run: StepRun): Promise<Record<string, unknown>> {
  const { internalIP, oldInternalIP, timeout } = addresses(run);
  await waitInternalIP(run, timeout, internalIP);
  const agents = (await run.podsOnNode()).filter((p) => p.spec?.hostNetwork && ownedByDaemonSet(p) && !p.metadata?.deletionTimestamp);
  const restarted = new Set(agents.map((p) => p.metadata!.uid!));
  const daemonSets = [...new Set(agents.map(daemonSetOf))].sort();
  for (const pod of agents) {
    const [namespace, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
    await run.optional(`deleting pod ${namespace}/${name}`, () => run.c.core.deleteNamespacedPod({ namespace, name }));
  }
  run.log(`${agents.length} host-network DaemonSet pod(s) restarted to detect ${internalIP}: ${agents.map(podKey).sort().join(", ") || "none"}`);
  let waiting: string[] = [];
  let annotations: Array<{ annotation: string; address: string }> = [];
  await run.within(timeout, `the node's agents on ${internalIP}`, async () => {
    const fresh = (await run.podsOnNode()).filter((p) => !restarted.has(p.metadata?.uid ?? "") && !p.metadata?.deletionTimestamp && ownedByDaemonSet(p));
    waiting = daemonSets.filter((ds) => !fresh.some((p) => daemonSetOf(p) === ds && podReady(p)));
    const node = await run.readNode();
    annotations = cniNodeAddresses(node?.metadata?.annotations).filter((a) => familyOf(a.address) === familyOf(internalIP));
    return node && isReady(node) && waiting.length === 0 && annotations.every((a) => a.address === internalIP) ? true : undefined;
  }, () => [
    waiting.length > 0 ? `no new Ready pod of DaemonSet ${waiting.join(", ")} on the node` : "",
    ...annotations.filter((a) => a.address !== internalIP).map((a) => `the Node's ${a.annotation} names ${a.address}${a.address === oldInternalIP ? " (the old address)" : ""}: the CNI agent does not detect ${internalIP}; check its interface settings (flannel --iface or --iface-can-reach, Calico IP_AUTODETECTION_METHOD)`),
  ].filter(Boolean).join("; "));
  run.log(`verified: ${daemonSets.length} DaemonSet(s) Ready again; ${annotations.map((a) => `${a.annotation} ${a.address}`).join(", ") || "no CNI address annotation"}`);
  return { internalIP, replacedPods: agents.map(podKey).sort(), cniAnnotations: annotations.map((a) => a.annotation), elapsedSeconds: run.elapsedSeconds() };
}
