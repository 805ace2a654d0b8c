/**
 * kubeadm's own record of the ranges: `networking.podSubnet` and `networking.serviceSubnet` in the
 * ClusterConfiguration text of the kube-system/kubeadm-config ConfigMap.
 *
 * Why it matters: `kubeadm upgrade` and `kubeadm join --control-plane` regenerate the static-pod manifests and the
 * apiserver certificate from this text. Left on the old ranges, the next upgrade silently moves the control plane
 * back (and the Calico operator derives its default pool from it).
 *
 * API: `setKubeadmNetworking(clusterConfiguration, { podSubnet?, serviceSubnet? }, source?)` →
 * `{ text, changed, before: { podSubnet?, serviceSubnet? } }`. Only the named values change (lib/yaml/yamlMapEdit,
 * lossless; each one range or a dual-stack pair, comma-separated); a missing key is added under `networking` (kubeadm leaves podSubnet out when the cluster was made
 * without --pod-network-cidr). Refused: a text that is not a ClusterConfiguration, or has no `networking` mapping.
 *
 * A range flag an operator set in `apiServer.extraArgs` or `controllerManager.extraArgs` wins over `networking` when
 * kubeadm regenerates a manifest, so one that is there changes too, in the form it is in: the v1beta4 list of
 * `{name, value}` (1.31+) or the v1beta3 mapping. None is added: kubeadm derives the flags from `networking`.
 */
import { isMap, isSeq, parseDocument, YAMLMap, YAMLSeq } from "yaml";
import { isRangeList, normalizeRangeList } from "../net/rangeList";
import { UserError } from "../config/errors";
import { YamlEditError } from "../yaml/yamlCstEdit";
import { MapScalarEdit, editMapScalars, readMapScalar } from "../yaml/yamlMapEdit";

export const KUBEADM_CLUSTER_CONFIGURATION_KEY = "ClusterConfiguration";

export interface KubeadmNetworking {
  podSubnet?: string;
  serviceSubnet?: string;
}

export interface KubeadmNetworkingEdit {
  text: string;
  changed: boolean;
  before: KubeadmNetworking;
}

/** One range, or a dual-stack pair comma-separated (kubeadm's own form for both fields). */
function cidrValue(value: string, field: string, source: string): string {
  let cidr: string;
  try {
    cidr = normalizeRangeList(value);
  } catch (error) {
    throw new UserError(`${source}: ${field} "${value}" is not a CIDR or a dual-stack pair of CIDRs (${(error as Error).message})`);
  }
  if (!isRangeList(cidr)) throw new UserError(`${source}: ${field} "${value}" is not one range or a pair of one IPv4 and one IPv6 range`);
  if (cidr !== value) throw new UserError(`${source}: ${field} "${value}" is not in normal form; pass "${cidr}"`);
  return cidr;
}

export function readKubeadmNetworking(clusterConfiguration: string, source = "kube-system/kubeadm-config ClusterConfiguration"): KubeadmNetworking {
  try {
    return {
      podSubnet: readMapScalar(clusterConfiguration, source, ["networking", "podSubnet"]),
      serviceSubnet: readMapScalar(clusterConfiguration, source, ["networking", "serviceSubnet"]),
    };
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
}

export function setKubeadmNetworking(clusterConfiguration: string, wanted: KubeadmNetworking, source = "kube-system/kubeadm-config ClusterConfiguration"): KubeadmNetworkingEdit {
  const edits: MapScalarEdit[] = [];
  if (wanted.podSubnet !== undefined) edits.push({ path: ["networking", "podSubnet"], value: cidrValue(wanted.podSubnet, "podSubnet", source), createMissing: true });
  if (wanted.serviceSubnet !== undefined) edits.push({ path: ["networking", "serviceSubnet"], value: cidrValue(wanted.serviceSubnet, "serviceSubnet", source), createMissing: true });
  if (edits.length === 0) throw new UserError(`${source}: nothing to set; pass podSubnet and/or serviceSubnet`);
  try {
    const kind = readMapScalar(clusterConfiguration, source, ["kind"]);
    if (kind !== "ClusterConfiguration") {
      throw new UserError(`${source}: kind is ${kind === undefined ? "missing" : `"${kind}"`}, not ClusterConfiguration; pass the ClusterConfiguration key of kubeadm-config`);
    }
    const before = readKubeadmNetworking(clusterConfiguration, source);
    edits.push(...extraArgEdits(clusterConfiguration, wanted));
    const edit = editMapScalars(clusterConfiguration, source, edits);
    return { text: edit.text, changed: edit.text !== clusterConfiguration, before };
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
}

/** The range flags each component's manifest carries, and the networking field each follows. */
const RANGE_FLAGS: Record<"apiServer" | "controllerManager", Record<string, keyof KubeadmNetworking>> = {
  apiServer: { "service-cluster-ip-range": "serviceSubnet" },
  controllerManager: { "cluster-cidr": "podSubnet", "service-cluster-ip-range": "serviceSubnet" },
};

function extraArgEdits(clusterConfiguration: string, wanted: KubeadmNetworking): MapScalarEdit[] {
  const doc = parseDocument(clusterConfiguration);
  const edits: MapScalarEdit[] = [];
  for (const [component, flags] of Object.entries(RANGE_FLAGS)) {
    const extraArgs = doc.getIn([component, "extraArgs"], true);
    for (const [flag, field] of Object.entries(flags)) {
      const value = wanted[field];
      if (value === undefined) continue;
      if (isSeq(extraArgs)) {
        // v1beta4: [{name, value}]; a flag may repeat, and every occurrence follows
        (extraArgs as YAMLSeq).items.forEach((item, index) => {
          if (isMap(item) && (item as YAMLMap).get("name") === flag) edits.push({ path: [component, "extraArgs", index, "value"], value: normalizeRangeList(value) });
        });
      } else if (isMap(extraArgs) && (extraArgs as YAMLMap).has(flag)) {
        edits.push({ path: [component, "extraArgs", flag], value: normalizeRangeList(value) });
      }
    }
  }
  return edits;
}
