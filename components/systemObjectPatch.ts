/**
 * Shared pieces for changing cluster objects the migration does not own (kube-proxy's ConfigMap, kubeadm-config,
 * CNI config, system DaemonSets), the way DESIGN.md prescribes: read the live object, patch only the fields we
 * change with server-side apply, force the conflicts with the objects' own managers, and never delete the object
 * when the stack is destroyed.
 *
 * - `PATCH_FORCE_ANNOTATION`: `pulumi.com/patchForce: "true"`, the provider's switch for a forced apply.
 * - `patchMetadata(namespace, name)`: the metadata every *Patch of ours carries.
 * - `liveConfigMapKey({ namespace, configMap, key })`: one data key's text of the live ConfigMap
 *   (components/liveConfigMaps.ts; `configMapKey` for a ConfigMap already read); a missing key fails the run with a
 *   message naming the object (fail closed: we never patch a config we could not read).
 * - `RESTARTED_AT_ANNOTATION`: the pod-template annotation `kubectl rollout restart` bumps; we set it to the run id,
 *   so one migration run restarts a workload once and a re-run with the same id changes nothing.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { LiveConfigMap, liveConfigMap, missingKeyMessage } from "./liveConfigMaps";

export const PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce";
export const RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt";

export function patchMetadata(namespace: string | undefined, name: string): k8s.types.input.meta.v1.ObjectMetaPatch {
  return {
    ...(namespace === undefined ? {} : { namespace }),
    name,
    annotations: { [PATCH_FORCE_ANNOTATION]: "true" },
  };
}

export interface LiveConfigMapKey {
  namespace: string;
  configMap: string;
  key: string;
}

export function liveConfigMapKey(ref: LiveConfigMapKey): pulumi.Output<string> {
  return configMapKey(liveConfigMap(ref.namespace, ref.configMap), ref);
}

/** One data key's text of a ConfigMap already read; a missing key fails naming the object. */
export function configMapKey(live: LiveConfigMap, ref: LiveConfigMapKey): pulumi.Output<string> {
  return live.data.apply((data) => {
    const text = data?.[ref.key];
    if (text === undefined) throw new pulumi.RunError(missingKeyMessage({ ...ref }));
    return text;
  });
}

/** A server-side-apply body that only bumps the restart annotation of a workload's pod template. */
export function restartTemplate(runId: pulumi.Input<string>): { template: { metadata: { annotations: Record<string, pulumi.Input<string>> } } } {
  return { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: runId } } } };
}
