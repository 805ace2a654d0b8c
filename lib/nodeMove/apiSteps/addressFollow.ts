/**
 * The API side of a control-plane node's address change (issue 16). The node keeps its Node object (its kubelet
 * restarts with the new --node-ip), so what names the old address in the API is brought along in two steps:
 * - `address-reported`, right after the kubelet restarted: the Node reports the new InternalIP (and no other of its
 *   family). The static pods restart only after it: a host-network pod takes the Node's address when it starts and
 *   keeps it for its life.
 * - `address-follow`, once the static pods restarted: the node's host-network pods still at the old address get a
 *   new one. A DaemonSet's pod (kube-proxy, the CNI agent) is deleted and its controller makes another. A static
 *   pod cannot be moved from here (its mirror keeps its address when deleted): one still there fails the step,
 *   naming it. A pod of any other owner is left and reported: deleting it is the operator's call.
 * A re-run finds the Node at its address and no such pod, and changes nothing.
 */
import { V1Pod } from "@kubernetes/client-node";
import { isMirrorPod } from "../../preflight/controlPlanePods";
import { podKey } from "../drainDecision";
import { DEFAULT_REJOIN_TIMEOUT_SECONDS, waitInternalIP } from "./rejoin";
import { StepRun } from "./stepRun";

const atAddress = (pod: V1Pod, ip: string) => Boolean(pod.spec?.hostNetwork) && (pod.status?.podIPs ?? [{ ip: pod.status?.podIP }]).some((p) => p.ip === ip);
const ownedByDaemonSet = (pod: V1Pod) => pod.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.controller) === true;

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
  const staticPods = stale.filter(isMirrorPod).map(podKey).sort();
  if (staticPods.length > 0) {
    throw new Error(`node ${run.inputs.node}: static pod(s) ${staticPods.join(", ")} still at ${oldInternalIP}: a pod keeps the address it started with; restart each by moving its manifest out of /etc/kubernetes/manifests and back once the Node reports ${internalIP}, then run again`);
  }
  const replaced = stale.filter(ownedByDaemonSet);
  const left = stale.filter((p) => !ownedByDaemonSet(p)).map(podKey).sort();
  for (const pod of replaced) {
    const [namespace, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
    await run.optional(`deleting pod ${namespace}/${name}`, () => run.c.core.deleteNamespacedPod({ namespace, name }));
    run.log(`pod ${namespace}/${name} was at ${oldInternalIP}: deleted, its DaemonSet makes another`);
  }
  const replacedKeys = new Set(replaced.map(podKey));
  let waiting: string[] = [];
  await run.within(timeout, `the host-network pods' move off ${oldInternalIP}`, async () => {
    waiting = (await run.podsOnNode()).filter((p) => atAddress(p, oldInternalIP) && replacedKeys.has(podKey(p))).map(podKey);
    return waiting.length === 0 ? true : undefined;
  }, () => `still at ${oldInternalIP}: ${waiting.join(", ")}; check the kubelet on the node (journalctl -u kubelet)`);
  if (left.length > 0) run.log(`left at ${oldInternalIP} (not a DaemonSet's; restart them when convenient): ${left.join(", ")}`);
  run.log(`verified: InternalIP ${internalIP}, ${replaced.length} DaemonSet pod(s) moved off ${oldInternalIP}, no static pod left there`);
  return { internalIP, replacedPods: [...replacedKeys].sort(), leftAtOldAddress: left, elapsedSeconds: run.elapsedSeconds() };
}
