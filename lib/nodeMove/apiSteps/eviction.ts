/** Evicting a pod the way `kubectl drain` does: through the Eviction API of the served policy version, never forced. */
import { ApisApi } from "@kubernetes/client-node";
import { describeKubeError } from "../../config/kubeClient";
import { PodLike } from "../drainDecision";
import { StepRun } from "./stepRun";

export async function policyVersion(run: StepRun): Promise<string> {
  const groups = await run.api("reading the API groups", () => run.c.kc.makeApiClient(ApisApi).getAPIVersions());
  const policy = groups.groups.find((g) => g.name === "policy");
  return policy?.versions.some((v) => v.version === "v1") ? "v1" : "v1beta1";
}

/**
 * One eviction through the Eviction API. "blocked" is a 429: a PodDisruptionBudget allows no disruption right now;
 * the caller retries until its timeout. Nothing is ever deleted directly or forced.
 */
export async function evict(run: StepRun, pod: PodLike, version: string): Promise<"evicted" | "gone" | "blocked"> {
  const name = pod.metadata!.name!;
  const namespace = pod.metadata!.namespace!;
  try {
    await run.c.core.createNamespacedPodEviction({
      name,
      namespace,
      // preconditions: evict this pod, not a namesake (a StatefulSet pod re-created under the same name)
      body: { apiVersion: `policy/${version}`, kind: "Eviction", metadata: { name, namespace }, deleteOptions: { preconditions: { uid: pod.metadata!.uid } } },
    });
    run.log(`evicted ${namespace}/${name}`);
    return "evicted";
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === 404 || code === 409) return "gone";
    if (code === 429) return "blocked";
    throw describeKubeError(err, `evicting pod ${namespace}/${name} from Node ${run.inputs.node}`, run.c.server);
  }
}
