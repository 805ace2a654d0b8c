/**
 * A DNS pod the drain evicted is taken out of its Service while it still answers.
 *
 * kube-proxy stops sending new flows to a terminating endpoint, but keeps the UDP conntrack entries that lead to it
 * while it is still serving and deletes them only once it is not (pkg/proxy/conntrack/cleanup.go). CoreDNS stops
 * answering when its lameduck ends (5 s in kubeadm's Corefile), before its endpoint leaves the slices, so a query
 * that reuses the client port of an earlier one follows that entry to a replica that no longer answers (on the node
 * lab every lost lookup of a drain was such a reuse: 18 of 71,301 queries). Removing the selector's labels from the
 * evicted pod, once kube-proxy has had time to stop choosing it, ends its endpoint, and kube-proxy then deletes
 * those entries while the pod still answers. The pod is being deleted anyway; its ReplicaSet has replaced it.
 */
import { isNotFound } from "../../config/kubeClient";
import { PodLike } from "../drainDecision";
import { sleep } from "../../concurrency/sleep";
import { StepRun, mergePatch } from "./stepRun";

/** After the eviction: kube-proxy's sync that stops new queries to the pod comes first (its minimum period is 1 s). */
export const HANDOFF_DELAY_MS = 2000;
export const HANDED_OFF_LABEL = "cidr-migration.io/dns-handed-off";

export type Selector = Record<string, string>;

export function matchesSelector(pod: PodLike, selector: Selector): boolean {
  const labels = pod.metadata?.labels ?? {};
  return Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** The merge patch that takes a pod out of a Service with `selector`; its uid makes it apply to that pod only. */
export function handoffPatch(pod: PodLike, selector: Selector): { metadata: { uid: string; labels: Record<string, string | null> } } {
  const labels: Record<string, string | null> = { [HANDED_OFF_LABEL]: "true" };
  for (const key of Object.keys(selector)) labels[key] = null;
  return { metadata: { uid: pod.metadata!.uid!, labels } };
}

/** The DNS Service's selector, or undefined when it has none (or is gone): then nothing is handed off. */
export async function dnsSelector(run: StepRun, service: { namespace: string; name: string }): Promise<Selector | undefined> {
  try {
    const live = await run.c.core.readNamespacedService(service);
    const selector = live.spec?.selector;
    return selector && Object.keys(selector).length > 0 ? selector : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Waits out kube-proxy's first sync, then patches; a pod already gone or replaced needs nothing. */
export async function handOff(run: StepRun, pod: PodLike, selector: Selector): Promise<void> {
  await sleep(HANDOFF_DELAY_MS);
  const { name, namespace } = pod.metadata as { name: string; namespace: string };
  try {
    await run.c.core.patchNamespacedPod({ name, namespace, body: handoffPatch(pod, selector) }, mergePatch());
    run.log(`DNS pod ${namespace}/${name} taken out of its Service while it still answers`);
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (isNotFound(err) || code === 409 || code === 422) return;
    run.log(`DNS pod ${namespace}/${name} could not be taken out of its Service (${(err as Error).message.split("\n")[0]}); it leaves when it is deleted`);
  }
}
