/**
 * NodeAddressFollow's step (issue 16): a control-plane node keeps its Node object while its address moves (its
 * kubelet restarts with the new --node-ip), so what still names the old address in the API is brought along here:
 * 1. wait until the Node reports the new InternalIP (and no other of its family);
 * 2. the node's host-network pods still at the old address get a new one: a DaemonSet's pod (kube-proxy, the CNI
 *    agent) is deleted and its controller makes another; a static pod's mirror is deleted and the kubelet makes
 *    another. A pod of any other owner is left and reported: deleting it is the operator's call;
 * 3. wait until none of those pods is left at the old address.
 * A re-run finds the Node at its address and no such pod, and changes nothing.
 */
import { V1Pod } from "@kubernetes/client-node";
import { isMirrorPod } from "../../preflight/controlPlanePods";
import { podKey } from "../drainDecision";
import { DEFAULT_REJOIN_TIMEOUT_SECONDS, waitInternalIP } from "./rejoin";
import { StepRun } from "./stepRun";

const atAddress = (pod: V1Pod, ip: string) => Boolean(pod.spec?.hostNetwork) && (pod.status?.podIPs ?? [{ ip: pod.status?.podIP }]).some((p) => p.ip === ip);
const replaceable = (pod: V1Pod) => isMirrorPod(pod) || pod.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.controller) === true;

export async function addressFollow(run: StepRun): Promise<Record<string, unknown>> {
  const { internalIP, oldInternalIP } = run.inputs;
  if (!internalIP || !oldInternalIP) throw new Error(`node ${run.inputs.node}: address-follow needs internalIP and oldInternalIP`);
  const timeout = run.inputs.rejoinTimeoutSeconds ?? DEFAULT_REJOIN_TIMEOUT_SECONDS;
  await waitInternalIP(run, timeout, internalIP);

  const stale = (await run.podsOnNode()).filter((p) => atAddress(p, oldInternalIP));
  const replaced = stale.filter(replaceable);
  const left = stale.filter((p) => !replaceable(p)).map(podKey).sort();
  for (const pod of replaced) {
    const [namespace, name] = [pod.metadata!.namespace!, pod.metadata!.name!];
    await run.optional(`deleting pod ${namespace}/${name}`, () => run.c.core.deleteNamespacedPod({ namespace, name }));
    run.log(`pod ${namespace}/${name} was at ${oldInternalIP}: deleted, its ${isMirrorPod(pod) ? "kubelet" : "DaemonSet"} makes another`);
  }
  const replacedKeys = new Set(replaced.map(podKey));
  let waiting: string[] = [];
  await run.within(timeout, `the host-network pods' move off ${oldInternalIP}`, async () => {
    waiting = (await run.podsOnNode()).filter((p) => atAddress(p, oldInternalIP) && replacedKeys.has(podKey(p))).map(podKey);
    return waiting.length === 0 ? true : undefined;
  }, () => `still at ${oldInternalIP}: ${waiting.join(", ")}; check the kubelet on the node (journalctl -u kubelet)`);
  if (left.length > 0) run.log(`left at ${oldInternalIP} (not a DaemonSet's or a static pod; restart them when convenient): ${left.join(", ")}`);
  run.log(`verified: InternalIP ${internalIP}, ${replaced.length} host-network pod(s) moved off ${oldInternalIP}`);
  return { internalIP, replacedPods: [...replacedKeys].sort(), leftAtOldAddress: left, elapsedSeconds: run.elapsedSeconds() };
}
