import { parse } from "yaml";
import { Finding } from "../report/findings";
import { PreflightInput } from "./checkInput";
import { keyOf } from "./clusterObjects";
import { controlPlanePods } from "./controlPlanePods";

/**
 * Cluster kind: the migration edits kubeadm's static-pod manifests over SSH and patches kubeadm's ConfigMaps, so it
 * needs a kubeadm cluster whose control plane it can reach. A managed control plane (EKS, GKE, AKS) or another
 * distribution (k3s, RKE2) keeps its ranges elsewhere: a blocker.
 */

/** Markers the distributions put in the server's gitVersion or on their Nodes. */
const MANAGED_VERSION_MARKERS: Array<[RegExp, string]> = [
  [/-eks-/, "Amazon EKS"],
  [/-gke\./, "Google GKE"],
];
const OTHER_DISTRIBUTION_MARKERS: Array<[RegExp, string]> = [
  [/\+k3s/, "k3s"],
  [/\+rke2/, "RKE2"],
];
const MANAGED_NODE_LABELS: Array<[string, string]> = [
  ["eks.amazonaws.com/nodegroup", "Amazon EKS"],
  ["cloud.google.com/gke-nodepool", "Google GKE"],
  ["kubernetes.azure.com/cluster", "Azure AKS"],
];

function managedDistribution(input: PreflightInput): string | undefined {
  const gitVersion = input.cluster.serverVersion.gitVersion;
  for (const [marker, name] of MANAGED_VERSION_MARKERS) if (marker.test(gitVersion)) return name;
  for (const node of input.cluster.nodes) {
    const labels = node.metadata?.labels ?? {};
    for (const [label, name] of MANAGED_NODE_LABELS) if (label in labels) return name;
  }
  return undefined;
}

export function checkClusterKind(input: PreflightInput): Finding[] {
  const { cluster, config } = input;
  const findings: Finding[] = [];
  const managed = managedDistribution(input);
  if (managed) {
    findings.push({
      code: "MANAGED_CONTROL_PLANE",
      severity: "blocker",
      object: "cluster",
      message: `the control plane is managed by ${managed} (server ${cluster.serverVersion.gitVersion}): its Service and Pod ranges are not in manifests this tool can edit`,
      action: "use the provider's own procedure (usually a new cluster or node pool with the new ranges) and move the apps",
    });
  }
  const gitVersion = cluster.serverVersion.gitVersion;
  for (const [marker, name] of OTHER_DISTRIBUTION_MARKERS) {
    if (marker.test(gitVersion)) {
      findings.push({
        code: "NOT_KUBEADM",
        severity: "blocker",
        object: "cluster",
        message: `the server reports ${gitVersion}: a ${name} cluster, which keeps its ranges in its own config, not in kubeadm manifests`,
        action: `follow ${name}'s documentation for changing cluster-cidr/service-cidr, or rebuild and move the apps`,
      });
    }
  }

  const kubeadm = cluster.configMaps.find((cm) => keyOf(cm.metadata) === "kube-system/kubeadm-config");
  if (!kubeadm) {
    findings.push({
      code: "NOT_KUBEADM",
      severity: "blocker",
      object: "ConfigMap kube-system/kubeadm-config",
      message: "not found: the cluster was not set up by kubeadm (or is a managed control plane)",
      action: "run the migration only against kubeadm clusters; check that the kubeconfig points at the right cluster",
    });
  }

  const pods = controlPlanePods(cluster.pods);
  const apiserverNodes = [...new Set(pods.filter((p) => p.component === "kube-apiserver").map((p) => p.node))];
  if (apiserverNodes.length === 0) {
    findings.push({
      code: "CONTROL_PLANE_PODS_MISSING",
      severity: "blocker",
      object: "Namespace kube-system",
      message: "no kube-apiserver mirror pod (a static pod from /etc/kubernetes/manifests) is visible: this is not a kubeadm control plane, or its kubelets are not registered",
      action: "check that the control-plane nodes' kubelets run and are registered; a managed control plane cannot be migrated with this tool",
    });
  }
  const configured = new Set(config.nodes.filter((n) => n.role === "control-plane").map((n) => n.name));
  for (const node of apiserverNodes) {
    if (configured.has(node)) continue;
    findings.push({
      code: "CONTROL_PLANE_NODE_NOT_CONFIGURED",
      severity: "blocker",
      object: `Node ${node}`,
      message: "runs a kube-apiserver static pod but cidr-migration:nodes does not list it with role control-plane: its manifests would keep the old ranges",
      action: `add { name: ${node}, host: <address>, role: control-plane } to cidr-migration:nodes`,
    });
  }

  if (kubeadm && apiserverNodes.length > 0 && !managed) {
    let version = "";
    try {
      const conf = parse(kubeadm.data?.ClusterConfiguration ?? "") as { kubernetesVersion?: string } | null;
      version = conf?.kubernetesVersion ? `, ClusterConfiguration kubernetesVersion ${conf.kubernetesVersion}` : "";
    } catch {
      // the kind is clear without the version
    }
    findings.push({
      code: "KUBEADM_CLUSTER",
      severity: "info",
      object: "cluster",
      message: `kubeadm cluster${version}; kube-apiserver static pods on ${apiserverNodes.join(", ")}`,
      action: "none",
    });
  }
  return findings;
}
