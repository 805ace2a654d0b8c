/**
 * The one shape of "edit a system ConfigMap, then restart what reads it" (kube-proxy, flannel, Cilium):
 * - the live ConfigMap, read while the program runs (components/liveConfigMaps.ts), so a re-run computes the same
 *   edit (idempotent) and the preview shows the exact new data;
 * - `<name>-config`: a ConfigMapPatch of only the keys the edit returns; server-side apply, patchForce,
 *   retainOnDelete; it carries the component's own dependsOn;
 * - `<name>-<restart suffix>`: a DaemonSetPatch or DeploymentPatch bumping the pod template's restartedAt to the
 *   run id (what `kubectl rollout restart` does), after the ConfigMap patch; a re-run with the same id changes nothing.
 * The components stay thin named wrappers (KubeProxyConfig, FlannelConfig, CiliumConfig): their type tokens, and
 * so their children's URNs, are what the state already holds. The children are created here with the wrapper as parent.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { checkRunId } from "../lib/controlPlane/nodeBackupDir";
import { LiveConfigMap, liveConfigMap } from "./liveConfigMaps";
import { withParentDependsOn } from "./parentDependsOn";
import { patchMetadata, restartTemplate } from "./systemObjectPatch";

export type RestartKind = "DaemonSet" | "Deployment";

export interface ConfigMapEdit<T> {
  namespace: string;
  configMap: string;
  /** From the live ConfigMap: what the wrapper exposes (`edited`) and the data keys the patch writes. */
  edit: (live: LiveConfigMap) => { edited: T; data: pulumi.Input<Record<string, pulumi.Input<string>>> };
  /** The workload that reads the ConfigMap at start, in the same namespace; `suffix` names the child. None: the caller restarts it otherwise. */
  restart?: { kind: RestartKind; name: string; suffix: string };
  /** The migration run id (config `snapshot.trigger`); the restart annotation's value. */
  runId: string;
}

export interface ConfigMapEditThenRestart<T> {
  edited: T;
  configPatch: k8s.core.v1.ConfigMapPatch;
  restart?: k8s.apps.v1.DaemonSetPatch | k8s.apps.v1.DeploymentPatch;
}

/** Refuses a run id that cannot name a restart (and a backup directory) with a ResourceError on the component. */
export function checkRunIdOf(runId: string, component: pulumi.Resource): void {
  try {
    checkRunId(runId);
  } catch (error) {
    throw new pulumi.ResourceError((error as Error).message, component);
  }
}

export function configMapEditThenRestart<T>(
  component: pulumi.ComponentResource,
  name: string,
  spec: ConfigMapEdit<T>,
  opts: pulumi.ComponentResourceOptions | undefined,
): ConfigMapEditThenRestart<T> {
  const live = liveConfigMap(spec.namespace, spec.configMap);
  const { edited, data } = spec.edit(live);
  const configPatch = new k8s.core.v1.ConfigMapPatch(`${name}-config`, {
    metadata: patchMetadata(spec.namespace, spec.configMap),
    data,
  }, { parent: component, retainOnDelete: true, dependsOn: withParentDependsOn(opts) });
  if (!spec.restart) return { edited, configPatch };
  const restartArgs = { metadata: patchMetadata(spec.namespace, spec.restart.name), spec: restartTemplate(spec.runId) };
  const restartOpts = { parent: component, retainOnDelete: true, dependsOn: [configPatch] };
  const restartName = `${name}-${spec.restart.suffix}`;
  const restart = spec.restart.kind === "DaemonSet"
    ? new k8s.apps.v1.DaemonSetPatch(restartName, restartArgs, restartOpts)
    : new k8s.apps.v1.DeploymentPatch(restartName, restartArgs, restartOpts);
  return { edited, configPatch, restart };
}
