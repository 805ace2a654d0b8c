/**
 * ClusterConfig: the cluster's own records of the ranges, so a later `kubeadm upgrade` or `kubeadm join` keeps
 * the new ones:
 * - kube-system/kubeadm-config, ClusterConfiguration: networking.podSubnet and networking.serviceSubnet
 *   (lib/controlPlane/kubeadmConfigEdit);
 * - kube-system/kubelet-config (kubeadm < 1.23: kubelet-config-1.NN), key kubelet: clusterDNS
 *   (lib/remote/scripts/setKubeletClusterDns's editKubeletClusterDns; joins and `kubeadm upgrade node` write it to each
 *   node's /var/lib/kubelet/config.yaml).
 * Each is read live (components/liveConfigMaps.ts), edited losslessly (only those values change), and written back with a
 * ConfigMapPatch holding just that one key (server-side apply, patchForce, retainOnDelete).
 * `liveClusterConfiguration` is the ClusterConfiguration text as read (ApiserverCerts reads its own copy: this
 * component waits for the Services phase, which waits for ApiserverCerts).
 * Wire it after the Services phase (DESIGN.md: config before nodes), with `opts.provider` = the cluster provider.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { isIpAddress } from "../lib/net/cidr";
import { KUBEADM_CLUSTER_CONFIGURATION_KEY, setKubeadmNetworking } from "../lib/controlPlane/kubeadmConfigEdit";
import { editKubeletClusterDns } from "../lib/remote/scripts/setKubeletClusterDns";
import { checkRangeList } from "./controlPlane";
import { LiveKeyEdit } from "./liveConfigMaps";
import { liveConfigMapKey, patchMetadata } from "./systemObjectPatch";
import { withParentDependsOn } from "./parentDependsOn";

export const KUBELET_CONFIG_KEY = "kubelet";

export interface ClusterConfigArgs {
  /** The new pod range (networking.podSubnet): one range, or a dual-stack pair comma-separated. */
  podCidr: string;
  /** The new Service range (networking.serviceSubnet), the same way. */
  serviceCidr: string;
  /** The new cluster DNS Service IP(s) (kubelet clusterDNS), e.g. [plan.dns.newClusterIP]. */
  clusterDns: string[];
  /** kubelet-config ConfigMap name (default "kubelet-config"; use kubeletConfigMapName() for older clusters). */
  kubeletConfigMapName?: string;
  /** kubeadm-config ConfigMap name (default "kubeadm-config"). */
  kubeadmConfigMapName?: string;
  /** Set false to leave kubelet-config alone (e.g. a cluster without one). Default true. */
  patchKubeletConfig?: boolean;
}

/** kubeadm ≥ 1.23 names it kubelet-config; older ones kubelet-config-<major>.<minor> (from inventory.serverVersion). */
export function kubeletConfigMapName(serverVersion: { major: string; minor: string }): string {
  const major = Number(serverVersion.major);
  const minor = Number(serverVersion.minor.replace(/\D+$/, ""));
  return major > 1 || minor >= 23 ? "kubelet-config" : `kubelet-config-${major}.${minor}`;
}

/**
 * kubeadm-config's networking edit, and kubelet-config's clusterDNS edit unless patchKubeletConfig is false (index.ts
 * runs them once before the graph: liveConfigMaps.checkLiveKeyEdits).
 */
export function clusterConfigEdits(args: ClusterConfigArgs): LiveKeyEdit[] {
  const namespace = "kube-system";
  const kubeadmConfig = args.kubeadmConfigMapName ?? "kubeadm-config";
  const kubeletConfig = args.kubeletConfigMapName ?? "kubelet-config";
  const networking = { podSubnet: args.podCidr, serviceSubnet: args.serviceCidr };
  const kubeadm: LiveKeyEdit = {
    namespace, configMap: kubeadmConfig, key: KUBEADM_CLUSTER_CONFIGURATION_KEY,
    edit: (text) => setKubeadmNetworking(text, networking, `${namespace}/${kubeadmConfig} ${KUBEADM_CLUSTER_CONFIGURATION_KEY}`).text,
  };
  const kubelet: LiveKeyEdit = {
    namespace, configMap: kubeletConfig, key: KUBELET_CONFIG_KEY,
    edit: (text) => editKubeletClusterDns(text, args.clusterDns, `${namespace}/${kubeletConfig} ${KUBELET_CONFIG_KEY}`).text,
  };
  return args.patchKubeletConfig ?? true ? [kubeadm, kubelet] : [kubeadm];
}

export class ClusterConfig extends pulumi.ComponentResource {
  readonly kubeadmConfigPatch: k8s.core.v1.ConfigMapPatch;
  readonly kubeletConfigPatch?: k8s.core.v1.ConfigMapPatch;
  /** The ClusterConfiguration text as read before the patch. */
  readonly liveClusterConfiguration: pulumi.Output<string>;
  /** The ClusterConfiguration text the patch writes. */
  readonly clusterConfiguration: pulumi.Output<string>;

  constructor(name: string, args: ClusterConfigArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:clusterConfig:ClusterConfig", name, {}, opts);
    const podSubnet = checkRangeList(args.podCidr, "podCidr", this);
    const serviceSubnet = checkRangeList(args.serviceCidr, "serviceCidr", this);
    if ((args.patchKubeletConfig ?? true) && (!Array.isArray(args.clusterDns) || args.clusterDns.length === 0 || !args.clusterDns.every(isIpAddress))) {
      throw new pulumi.ResourceError(`clusterDns ${JSON.stringify(args.clusterDns)} must be a non-empty list of IPs; pass [plan.dns.newClusterIP]`, this);
    }
    const [kubeadm, kubelet] = clusterConfigEdits({ ...args, podCidr: podSubnet, serviceCidr: serviceSubnet });
    this.liveClusterConfiguration = liveConfigMapKey(kubeadm);
    this.clusterConfiguration = this.liveClusterConfiguration.apply(kubeadm.edit);
    this.kubeadmConfigPatch = new k8s.core.v1.ConfigMapPatch(`${name}-kubeadm`, {
      metadata: patchMetadata(kubeadm.namespace, kubeadm.configMap),
      data: { [kubeadm.key]: this.clusterConfiguration },
    }, { parent: this, retainOnDelete: true, dependsOn: withParentDependsOn(opts) });

    if (kubelet) {
      this.kubeletConfigPatch = new k8s.core.v1.ConfigMapPatch(`${name}-kubelet`, {
        metadata: patchMetadata(kubelet.namespace, kubelet.configMap),
        data: { [kubelet.key]: liveConfigMapKey(kubelet).apply(kubelet.edit) },
      }, { parent: this, retainOnDelete: true, dependsOn: withParentDependsOn(opts) });
    }
    this.registerOutputs({ clusterConfiguration: this.clusterConfiguration });
  }
}
