/**
 * FlannelConfig: flannel's `Network` moves to the new pod range, then flanneld restarts to read it.
 *
 * - `<name>-live`: a read of the kube-flannel-cfg ConfigMap (ConfigMap.get).
 * - `<name>-config`: a ConfigMapPatch of data["net-conf.json"] only: the live JSON with Network changed, every
 *   other byte kept (lib/podNetwork/flannelNetConf); server-side apply, patchForce, retainOnDelete.
 * - `<name>-restart`: a DaemonSetPatch bumping the pod template's restartedAt annotation to the run id, after the
 *   ConfigMap patch (flanneld reads net-conf.json only at start; with --kube-subnet-mgr each node's lease is its
 *   Node.spec.podCIDR, which the node rollout moves).
 * Per-node cleanup (cni0, flannel.1, subnet.env) belongs to the node rollout (lib/remote/scripts/cleanupCni).
 * Namespace: kube-flannel for current manifests (default), kube-system for older installs.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { FLANNEL_NET_CONF_KEY, setFlannelNetwork } from "../lib/podNetwork/flannelNetConf";
import { checkRunId } from "../lib/controlPlane/nodeBackupDir";
import { checkCidr } from "./controlPlane";
import { liveConfigMapKey, patchMetadata, restartTemplate } from "./systemObjectPatch";
import { withParentDependsOn } from "./parentDependsOn";

export interface FlannelConfigArgs {
  /** The new pod range, written as Network. */
  podCidr: string;
  /** The migration run id (config `snapshot.trigger`); the restart annotation's value. */
  runId: string;
  /** Namespace of flannel (default "kube-flannel"; older installs use "kube-system"). */
  namespace?: string;
  /** The ConfigMap (default "kube-flannel-cfg"). */
  configMapName?: string;
  /** The DaemonSet (default "kube-flannel-ds"). */
  daemonSetName?: string;
}

export class FlannelConfig extends pulumi.ComponentResource {
  readonly configPatch: k8s.core.v1.ConfigMapPatch;
  readonly restart: k8s.apps.v1.DaemonSetPatch;
  /** The net-conf.json text the patch writes. */
  readonly netConf: pulumi.Output<string>;

  constructor(name: string, args: FlannelConfigArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:flannelConfig:FlannelConfig", name, {}, opts);
    const podCidr = checkCidr(args.podCidr, "podCidr", this);
    try {
      checkRunId(args.runId);
    } catch (error) {
      throw new pulumi.ResourceError((error as Error).message, this);
    }
    const namespace = args.namespace ?? "kube-flannel";
    const configMap = args.configMapName ?? "kube-flannel-cfg";
    const live = liveConfigMapKey(`${name}-live`, { namespace, configMap, key: FLANNEL_NET_CONF_KEY }, { parent: this });
    this.netConf = live.apply((text) => setFlannelNetwork(text, podCidr, `${namespace}/${configMap} ${FLANNEL_NET_CONF_KEY}`).text);
    this.configPatch = new k8s.core.v1.ConfigMapPatch(`${name}-config`, {
      metadata: patchMetadata(namespace, configMap),
      data: { [FLANNEL_NET_CONF_KEY]: this.netConf },
    }, { parent: this, retainOnDelete: true, dependsOn: withParentDependsOn(opts) });
    this.restart = new k8s.apps.v1.DaemonSetPatch(`${name}-restart`, {
      metadata: patchMetadata(namespace, args.daemonSetName ?? "kube-flannel-ds"),
      spec: restartTemplate(args.runId),
    }, { parent: this, retainOnDelete: true, dependsOn: [this.configPatch] });
    this.registerOutputs({ netConf: this.netConf });
  }
}
