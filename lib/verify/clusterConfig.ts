import { V1ConfigMap } from "@kubernetes/client-node";
import { parseKubeadmConfig, parseKubeletConfig, parseKubeProxy } from "../plan/discovery";
import { Finding } from "../report/findings";
import { keyOf } from "../preflight/clusterObjects";
import { controlPlanePods } from "../preflight/controlPlanePods";
import { rangeLists } from "../config/rangeLists";
import { LeftoverTest } from "./leftovers";
import { RangeVerifyInput } from "./verifyInput";

/**
 * The cluster's own records of its ranges after the move: kube-proxy clusterCIDR, kubeadm-config networking,
 * kubelet-config clusterDNS, and the flags of the control-plane static pods (read from their mirror pods).
 */
export function verifyClusterConfig(input: RangeVerifyInput): Finding[] {
  const { config, cluster, targets } = input;
  const findings: Finding[] = [];
  const ranges = rangeLists(config);
  const services = new LeftoverTest(ranges.service.from, ranges.service.to);
  const pods = new LeftoverTest(ranges.pod.from, ranges.pod.to);
  const configMap = (name: string) => cluster.configMaps.find((cm) => keyOf(cm.metadata) === `kube-system/${name}`);
  const rerun = "run `pulumi up` again to finish the cluster-config and kube-proxy phases";

  const proxy = configMap("kube-proxy");
  const clusterCIDR = proxy ? parseKubeProxy(proxy)?.clusterCIDR : undefined;
  if (clusterCIDR && pods.cidr(clusterCIDR)) {
    findings.push({
      code: "KUBE_PROXY_CLUSTER_CIDR_OLD",
      severity: "blocker",
      object: "ConfigMap kube-system/kube-proxy",
      path: 'data["config.conf"] clusterCIDR',
      message: `clusterCIDR is ${clusterCIDR}, in the old Pod range; kube-proxy treats new pod traffic as external`,
      action: `${rerun} (kube-proxy/config sets ${ranges.pod.to} and restarts kube-proxy)`,
    });
  }

  const kubeadm = configMap("kubeadm-config");
  const networking = kubeadm ? parseKubeadmConfig(kubeadm) : undefined;
  if (networking?.podSubnet && pods.cidr(networking.podSubnet)) {
    findings.push({
      code: "KUBEADM_POD_SUBNET_OLD",
      severity: "blocker",
      object: "ConfigMap kube-system/kubeadm-config",
      path: 'data["ClusterConfiguration"] networking.podSubnet',
      message: `podSubnet is ${networking.podSubnet}, in the old Pod range; the next kubeadm upgrade or join would bring it back`,
      action: `${rerun} (cluster-config/kubeadm-config sets ${ranges.pod.to})`,
    });
  }
  if (networking?.serviceSubnet && services.cidr(networking.serviceSubnet)) {
    findings.push({
      code: "KUBEADM_SERVICE_SUBNET_OLD",
      severity: "blocker",
      object: "ConfigMap kube-system/kubeadm-config",
      path: 'data["ClusterConfiguration"] networking.serviceSubnet',
      message: `serviceSubnet is ${networking.serviceSubnet}, in the old Service range; the next kubeadm upgrade would write it into the manifests again`,
      action: `${rerun} (cluster-config/kubeadm-config sets ${ranges.service.to})`,
    });
  }

  const kubelet = kubeletConfigMap(cluster.configMaps, cluster.serverVersion);
  if (kubelet) {
    const object = `ConfigMap kube-system/${kubelet.metadata?.name}`;
    const clusterDNS = parseKubeletConfig(kubelet)?.clusterDNS ?? [];
    clusterDNS.forEach((ip, i) => {
      if (!services.address(ip)) return;
      findings.push({
        code: "KUBELET_CLUSTER_DNS_OLD",
        severity: "blocker",
        object,
        path: `data["kubelet"] clusterDNS[${i}]`,
        message: `clusterDNS ${ip} is in the old Service range; kubelets joining from this config hand pods a dead resolver`,
        action: `${rerun} (cluster-config/kubelet-config sets ${targets.dnsServiceIP})`,
      });
    });
    if (clusterDNS.length > 0 && !clusterDNS.includes(targets.dnsServiceIP) && !clusterDNS.some((ip) => services.address(ip))) {
      findings.push({
        code: "KUBELET_CLUSTER_DNS_MISMATCH",
        severity: "blocker",
        object,
        path: 'data["kubelet"] clusterDNS',
        message: `clusterDNS is ${clusterDNS.join(", ")}, not the DNS Service's planned address ${targets.dnsServiceIP}`,
        action: `set clusterDNS to ${targets.dnsServiceIP} (cluster-config/kubelet-config) and in /var/lib/kubelet/config.yaml on every node`,
      });
    }
  }

  const expected: Record<string, { test: LeftoverTest; target: string }> = {
    "kube-apiserver service-cluster-ip-range": { test: services, target: ranges.service.to },
    "kube-controller-manager service-cluster-ip-range": { test: services, target: ranges.service.to },
    "kube-controller-manager cluster-cidr": { test: pods, target: ranges.pod.to },
  };
  for (const pod of controlPlanePods(cluster.pods)) {
    for (const [flag, value] of pod.flags) {
      const rule = expected[`${pod.component} ${flag}`];
      if (!rule || !value.split(",").some((part) => rule.test.cidr(part.trim()))) continue;
      findings.push({
        code: "CONTROL_PLANE_FLAG_OLD",
        severity: "blocker",
        object: `Pod kube-system/${pod.podName}`,
        path: `--${flag}`,
        message: `${pod.component} on ${pod.node} still runs with --${flag}=${value}`,
        action: `run \`pulumi up\` again to finish control-plane/${pod.node}/${pod.component} (sets ${rule.target})`,
      });
    }
  }
  return findings;
}

/** kubeadm names it kubelet-config from v1.24 and kubelet-config-<major>.<minor> before; discovery reads the same. */
function kubeletConfigMap(configMaps: V1ConfigMap[], version: { major: string; minor: string }): V1ConfigMap | undefined {
  const versioned = `kubelet-config-${version.major}.${version.minor.replace(/\D+$/, "")}`;
  const find = (name: string) => configMaps.find((cm) => keyOf(cm.metadata) === `kube-system/${name}`);
  return find("kubelet-config") ?? find(versioned);
}
