/**
 * KubeProxyConfig: kube-proxy's clusterCIDR moves to the new pod range, then kube-proxy restarts to read it.
 *
 * Children:
 * - the live kube-system/kube-proxy ConfigMap, read while the program runs (components/liveConfigMaps.ts), so
 *   preview shows the exact new text. Decision: read live rather than take the text from discovery, so the patch is
 *   computed from what the cluster holds when `pulumi up` runs, and a re-run computes the same text (idempotent).
 * - `<name>-config`: a ConfigMapPatch (server-side apply, `pulumi.com/patchForce`, retainOnDelete) whose only
 *   field is data["config.conf"]: the live text with clusterCIDR changed and every other byte kept
 *   (lib/podNetwork/kubeProxyConfigEdit). Other keys (kubeconfig.conf) are not part of the patch, so they stay untouched.
 * - `<name>-restart`: a DaemonSetPatch that sets the pod template's `kubectl.kubernetes.io/restartedAt` to the run
 *   id (what `kubectl rollout restart` does), after the ConfigMap patch. The kubernetes provider awaits the
 *   DaemonSet's rollout where it supports DaemonSet readiness (its Deployment patches always await); the
 *   verify phase checks the kube-proxy pods either way.
 * Wire it after the node rollout (DESIGN.md order), with `opts.provider` = the cluster's k8s.Provider.
 * The read → patch → restart shape is shared with FlannelConfig and CiliumConfig (configMapEditThenRestart.ts).
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { KUBE_PROXY_CONFIG_KEY, setKubeProxyClusterCidr } from "../lib/podNetwork/kubeProxyConfigEdit";
import { checkRunIdOf, configMapEditThenRestart } from "./configMapEditThenRestart";
import { checkRangeList } from "./controlPlane";
import { LiveKeyEdit } from "./liveConfigMaps";
import { configMapKey } from "./systemObjectPatch";

export interface KubeProxyConfigArgs {
  /** The new pod range, written as clusterCIDR: one range, or a dual-stack pair comma-separated. */
  podCidr: string;
  /** The migration run id (config `snapshot.trigger`); the restart annotation's value. */
  runId: string;
  /** Namespace of kube-proxy (default "kube-system"). */
  namespace?: string;
  /** The ConfigMap (default "kube-proxy"). */
  configMapName?: string;
  /** The key holding the KubeProxyConfiguration (default "config.conf"). */
  configKey?: string;
  /** The DaemonSet to restart (default "kube-proxy"). */
  daemonSetName?: string;
}

/** The clusterCIDR edit of kube-proxy's config (index.ts runs it once before the graph: liveConfigMaps.checkLiveKeyEdits). */
export function kubeProxyConfigEdit(args: Pick<KubeProxyConfigArgs, "podCidr" | "namespace" | "configMapName" | "configKey">): LiveKeyEdit {
  const namespace = args.namespace ?? "kube-system";
  const configMap = args.configMapName ?? "kube-proxy";
  const key = args.configKey ?? KUBE_PROXY_CONFIG_KEY;
  return { namespace, configMap, key, edit: (t) => setKubeProxyClusterCidr(t, args.podCidr, `${namespace}/${configMap} ${key}`).text };
}

export class KubeProxyConfig extends pulumi.ComponentResource {
  readonly configPatch: k8s.core.v1.ConfigMapPatch;
  readonly restart: k8s.apps.v1.DaemonSetPatch;
  /** The config.conf text the patch writes. */
  readonly config: pulumi.Output<string>;

  constructor(name: string, args: KubeProxyConfigArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:kubeProxyConfig:KubeProxyConfig", name, {}, opts);
    const podCidr = checkRangeList(args.podCidr, "podCidr", this);
    checkRunIdOf(args.runId, this);
    const edit = kubeProxyConfigEdit({ ...args, podCidr });
    const step = configMapEditThenRestart(this, name, {
      namespace: edit.namespace,
      configMap: edit.configMap,
      edit: (live) => {
        const text = configMapKey(live, edit).apply(edit.edit);
        return { edited: text, data: { [edit.key]: text } };
      },
      restart: { kind: "DaemonSet", name: args.daemonSetName ?? "kube-proxy", suffix: "restart" },
      runId: args.runId,
    }, opts);
    this.config = step.edited;
    this.configPatch = step.configPatch;
    this.restart = step.restart as k8s.apps.v1.DaemonSetPatch;
    this.registerOutputs({ config: this.config });
  }
}
