/**
 * FlannelConfig: flannel's `Network` is set to `podCidr`, then flanneld restarts to read it.
 *
 * The graph uses it twice: before the node rollout with a range covering the old and the new pod range, and after
 * it with the new range. flanneld (--kube-subnet-mgr) refuses to start when Network does not contain its Node's
 * podCIDR (seen on the real-node lab, test/testbed/nodes), and while nodes move some hold old podCIDRs, some new.
 *
 * - the live kube-flannel-cfg ConfigMap, read while the program runs (components/liveConfigMaps.ts).
 * - `<name>-config`: a ConfigMapPatch of data["net-conf.json"] only: the live JSON with Network changed, every
 *   other byte kept (lib/podNetwork/flannelNetConf); server-side apply, patchForce, retainOnDelete.
 * - `<name>-restart`: a DaemonSetPatch bumping the pod template's restartedAt annotation to the run id, after the
 *   ConfigMap patch (flanneld reads net-conf.json only at start; with --kube-subnet-mgr each node's lease is its
 *   Node.spec.podCIDR, which the node rollout moves).
 * Per-node cleanup (cni0, flannel.1, subnet.env) belongs to the node rollout (lib/remote/scripts/cleanupCni).
 * Namespace: kube-flannel for current manifests (default), kube-system for older installs.
 * The read → patch → restart shape is shared with KubeProxyConfig and CiliumConfig (configMapEditThenRestart.ts).
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { FLANNEL_NET_CONF_KEY, setFlannelNetwork } from "../lib/podNetwork/flannelNetConf";
import { checkRunIdOf, configMapEditThenRestart } from "./configMapEditThenRestart";
import { checkRangeList } from "./controlPlane";
import { LiveKeyEdit } from "./liveConfigMaps";
import { configMapKey } from "./systemObjectPatch";

export interface FlannelConfigArgs {
  /** The range written as Network: old and new covered while nodes move, then the new pod range; a dual-stack pair comma-separated (its IPv6 range is IPv6Network). */
  podCidr: string;
  /** The migration run id (config `snapshot.trigger`); the restart annotation's value. */
  runId: string;
  /** Namespace of flannel (default "kube-flannel"; older installs use "kube-system"). */
  namespace?: string;
  /** The ConfigMap (default "kube-flannel-cfg"). */
  configMapName?: string;
  /** The DaemonSet (default "kube-flannel-ds"). */
  daemonSetName?: string;
  /**
   * Restart every flanneld (default true). After an etcd rewrite every Node already holds its new podCIDR, and a
   * flanneld restarted on a node not yet rolled would hand its new pods addresses its cni0 does not route: there the
   * node rollout replaces each node's flanneld in turn, after its CNI cleanup.
   */
  restart?: boolean;
}

/** The Network edit of flannel's net-conf.json (index.ts runs it once before the graph: liveConfigMaps.checkLiveKeyEdits). */
export function flannelConfigEdit(args: Pick<FlannelConfigArgs, "podCidr" | "namespace" | "configMapName">): LiveKeyEdit {
  const namespace = args.namespace ?? "kube-flannel";
  const configMap = args.configMapName ?? "kube-flannel-cfg";
  const key = FLANNEL_NET_CONF_KEY;
  return { namespace, configMap, key, edit: (t) => setFlannelNetwork(t, args.podCidr, `${namespace}/${configMap} ${key}`).text };
}

export class FlannelConfig extends pulumi.ComponentResource {
  readonly configPatch: k8s.core.v1.ConfigMapPatch;
  readonly restart?: k8s.apps.v1.DaemonSetPatch;
  /** The net-conf.json text the patch writes. */
  readonly netConf: pulumi.Output<string>;

  constructor(name: string, args: FlannelConfigArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:flannelConfig:FlannelConfig", name, {}, opts);
    const podCidr = checkRangeList(args.podCidr, "podCidr", this);
    checkRunIdOf(args.runId, this);
    const edit = flannelConfigEdit({ ...args, podCidr });
    const step = configMapEditThenRestart(this, name, {
      namespace: edit.namespace,
      configMap: edit.configMap,
      edit: (live) => {
        const text = configMapKey(live, edit).apply(edit.edit);
        return { edited: text, data: { [edit.key]: text } };
      },
      restart: args.restart === false ? undefined : { kind: "DaemonSet", name: args.daemonSetName ?? "kube-flannel-ds", suffix: "restart" },
      runId: args.runId,
    }, opts);
    this.netConf = step.edited;
    this.configPatch = step.configPatch;
    this.restart = step.restart as k8s.apps.v1.DaemonSetPatch | undefined;
    this.registerOutputs({ netConf: this.netConf });
  }
}
