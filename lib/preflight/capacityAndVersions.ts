import { cidrContains, cidrSize, familyOf, isIpAddress, normalizeCidr, parseCidr } from "../net/cidr";
import { subnetCount } from "../net/nodeSubnets";
import { Finding } from "../report/findings";
import { PreflightInput, RangePreflightInput, rangeInput } from "./checkInput";
import { ControlPlaneComponent, ControlPlanePod, controlPlanePods } from "./controlPlanePods";

/**
 * Capacity and versions: the new ranges hold what moves into them; kube-controller-manager will not crash on a Node
 * left with a foreign podCIDR; the apiserver version and whether it has the ServiceCIDR API; and every control-plane
 * node runs the same flags, matching the config's old ranges.
 */

/** Flags that hold the ranges: a difference between control-plane nodes is a blocker, not a curiosity. */
const RANGE_FLAGS: Record<ControlPlaneComponent, readonly string[]> = {
  "kube-apiserver": ["service-cluster-ip-range"],
  "kube-controller-manager": ["cluster-cidr", "service-cluster-ip-range", "node-cidr-mask-size", "allocate-node-cidrs"],
};
/** Flags that legitimately differ per node. An array, not a Set: provider code is serialized by value and a Set does not survive it. */
const NODE_SPECIFIC_FLAGS: readonly string[] = ["advertise-address"];

/** A range flag may list one CIDR per family ("10.96.0.0/12,fd00::/108"); compare the one of the config's family. */
function flagRange(value: string | undefined, family: string): string | undefined {
  for (const part of (value ?? "").split(",")) {
    try {
      const cidr = normalizeCidr(part.trim());
      if (familyOf(cidr) === family) return cidr;
    } catch {
      // not a CIDR: compared as text by the caller
    }
  }
  return undefined;
}

export function checkCapacityAndVersions(input: PreflightInput): Finding[] {
  const ranged = rangeInput(input);
  // a run that changes node addresses only: the versions, which every run reports
  if (!ranged) return versions(input);
  return [...capacity(ranged), ...kcmCrashPrediction(ranged), ...versions(input), ...allocatorDualWrite(ranged), ...controlPlaneFlags(ranged)];
}

function usableAddresses(cidr: string): bigint {
  const size = cidrSize(cidr);
  const reserved = familyOf(cidr) === "IPv4" ? 2n : 1n;
  return size > reserved ? size - reserved : 0n;
}

function capacity(input: RangePreflightInput): Finding[] {
  const { config, cluster } = input;
  const findings: Finding[] = [];
  const { from, to } = config.serviceCidr;
  // Every Service with a ClusterIP in either range needs one in the new range (the kubernetes Service included).
  const needed = cluster.services.filter((s) => {
    const ip = s.spec?.clusterIP;
    return ip !== undefined && isIpAddress(ip) && (cidrContains(from, ip) || cidrContains(to, ip));
  }).length;
  const usable = usableAddresses(to);
  if (BigInt(needed) > usable) {
    findings.push({
      code: "SERVICE_RANGE_TOO_SMALL",
      severity: "blocker",
      object: "cluster",
      message: `${needed} Services need a ClusterIP but the new Service range ${to} has ${usable} usable addresses`,
      action: "choose a larger cidr-migration:serviceCidr.to (a shorter prefix, at most /12)",
    });
  } else {
    findings.push({
      code: "SERVICE_RANGE_CAPACITY",
      severity: "info",
      object: "cluster",
      message: `${needed} Services with a ClusterIP; the new Service range ${to} has ${usable} usable addresses`,
      action: "none",
    });
  }

  const { to: podTo, nodeMaskSize } = config.podCidr;
  const subnets = subnetCount(podTo, nodeMaskSize);
  const nodes = cluster.nodes.length;
  if (BigInt(nodes) > subnets) {
    findings.push({
      code: "POD_RANGE_TOO_SMALL",
      severity: "blocker",
      object: "cluster",
      message: `${nodes} Nodes need a /${nodeMaskSize} each but the new Pod range ${podTo} holds ${subnets}`,
      action: "choose a larger cidr-migration:podCidr.to or a longer podCidr.nodeMaskSize",
    });
  } else {
    findings.push({
      code: "POD_RANGE_CAPACITY",
      severity: "info",
      object: "cluster",
      message: `${nodes} Nodes; the new Pod range ${podTo} holds ${subnets} node subnets of /${nodeMaskSize}`,
      action: "none",
    });
  }
  const perNode = usableAddresses(`${parseCidr(podTo).family === "IPv4" ? "0.0.0.0" : "::"}/${nodeMaskSize}`);
  for (const node of cluster.nodes) {
    const maxPods = Number(node.status?.capacity?.pods ?? 0);
    if (maxPods > 0 && BigInt(maxPods) > perNode) {
      findings.push({
        code: "NODE_SUBNET_TOO_SMALL",
        severity: "warning",
        object: `Node ${node.metadata?.name}`,
        message: `runs up to ${maxPods} pods but a /${nodeMaskSize} node subnet has ${perNode} usable addresses`,
        action: "choose a shorter cidr-migration:podCidr.nodeMaskSize, or lower the kubelet's maxPods",
      });
    }
  }
  return findings;
}

/**
 * kube-controller-manager exits at start ("failed to mark cidr ... as occupied") while any Node holds a podCIDR outside
 * its --cluster-cidr. The plan runs it with allocation off until the node rollout is done and then turns allocation on
 * (nodes/enable-cidr-allocation/<cp>): by then every Node must hold a subnet of the new range, so a Node the rollout
 * does not move (one missing from cidr-migration:nodes) crashes KCM at that step.
 */
function kcmCrashPrediction(input: RangePreflightInput): Finding[] {
  const { config, cluster } = input;
  const findings: Finding[] = [];
  const rolled = new Set(config.nodes.map((n) => n.name));
  const newRange = config.podCidr.to;
  for (const node of cluster.nodes) {
    const name = node.metadata?.name ?? "";
    if (rolled.has(name)) continue;
    const cidrs = node.spec?.podCIDRs?.length ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
    cidrs.forEach((cidr, i) => {
      const sameFamily = familyOf(cidr) === familyOf(newRange);
      if (!sameFamily || cidrContains(newRange, cidr)) return;
      findings.push({
        code: "KCM_CRASH_PREDICTED",
        severity: "blocker",
        object: `Node ${name}`,
        path: node.spec?.podCIDRs?.length ? `spec.podCIDRs[${i}]` : "spec.podCIDR",
        message: `podCIDR ${cidr} lies outside the new --cluster-cidr ${newRange} and the node is not in cidr-migration:nodes, so it keeps it: kube-controller-manager exits at start once it runs with allocation on (step nodes/enable-cidr-allocation)`,
        action: `add ${name} to cidr-migration:nodes so the rollout moves it, or drain and delete the Node before migrating`,
      });
    });
  }
  return findings;
}

function versions(input: PreflightInput): Finding[] {
  const { cluster } = input;
  const served = cluster.serviceCidrApiVersions;
  const findings: Finding[] = [
    {
      code: "APISERVER_VERSION",
      severity: "info",
      object: "cluster",
      message: `kube-apiserver ${cluster.serverVersion.gitVersion}; ServiceCIDR API ${served.length > 0 ? `served (networking.k8s.io/${served.join(", ")})` : "not served"}`,
      action: "none",
    },
  ];
  const newServiceRange = input.config.serviceCidr?.to;
  if (served.includes("v1")) {
    // a run that moves no range leaves the ServiceCIDRs alone
    if (newServiceRange) findings.push({
      code: "SERVICECIDR_API_PRESENT",
      severity: "info",
      object: "cluster",
      message: `the apiserver keeps Service ranges in ServiceCIDR objects (networking.k8s.io/v1): the default ServiceCIDR "kubernetes" keeps the old range after the flag change, so the graph opens a ServiceCIDR for ${newServiceRange} before the Service moves (step service-cidr-open) and lets the apiserver replace the default once nothing is left in the old range (step service-cidr-close)`,
      action: "none",
    });
  } else if (served.length > 0) {
    findings.push({
      code: "SERVICECIDR_BETA_API",
      severity: "blocker",
      object: "cluster",
      message: `the apiserver serves ServiceCIDR only as networking.k8s.io/${served.join(", ")} (the MultiCIDRServiceAllocator feature gate turned on before it went GA in 1.33); this tool moves the default ServiceCIDR only through networking.k8s.io/v1`,
      action: "upgrade the control plane to 1.33 or later, or turn the MultiCIDRServiceAllocator feature gate off on every kube-apiserver and kube-controller-manager, then run preflight again",
    });
  }
  return findings;
}

/**
 * 1.33 still dual-writes the legacy bitmap allocator, which keeps the old range: once kube-apiserver runs on the new
 * --service-cluster-ip-range, every create at a chosen ClusterIP in the new range fails ("the provided range does
 * not match the current range"; kubernetes/website#51807), and so would putting a moved Service back. Seen on the
 * 1.33.13 test bed; with the DisableAllocatorDualWrite gate (beta in 1.33, GA in 1.34) the moves work. So a 1.33
 * cluster must run every apiserver with the gate before anything changes.
 */
export const DUAL_WRITE_GATE = "DisableAllocatorDualWrite";

function allocatorDualWrite(input: RangePreflightInput): Finding[] {
  const { cluster } = input;
  if (!cluster.serviceCidrApiVersions.includes("v1") || cluster.serverVersion.minor.replace(/\D+$/, "") !== "33") return [];
  const apiservers = controlPlanePods(cluster.pods).filter((p) => p.component === "kube-apiserver");
  const gated = (gates: string | undefined) => (gates ?? "").split(",").some((g) => g.trim() === `${DUAL_WRITE_GATE}=true`);
  const without = apiservers.filter((p) => !gated(p.flags.get("feature-gates")));
  if (apiservers.length > 0 && without.length === 0) return [];
  return [{
    code: "SERVICE_ALLOCATOR_DUAL_WRITE",
    severity: "blocker",
    object: without.length > 0 ? without.map((p) => `Pod kube-system/${p.podName}`).join(", ") : "kube-apiserver",
    path: "--feature-gates",
    message: `kube-apiserver ${cluster.serverVersion.gitVersion} dual-writes the legacy Service IP allocator, which keeps the old range: after the flag change every Service move into ${input.config.serviceCidr.to} would be refused ("the provided range does not match the current range")${apiservers.length === 0 ? "; no kube-apiserver mirror pod was found to check for the gate" : ""}`,
    action: `add ${DUAL_WRITE_GATE}=true to --feature-gates of every kube-apiserver (beta in 1.33, on by default from 1.34; also under apiServer.extraArgs in kubeadm-config), let them restart, then run preflight again; or upgrade the control plane to 1.34 first`,
  }];
}

function controlPlaneFlags(input: RangePreflightInput): Finding[] {
  const { config, cluster } = input;
  const findings: Finding[] = [];
  const pods = controlPlanePods(cluster.pods);
  const family = familyOf(config.serviceCidr.from);
  const expected: Record<string, { allowed: string[]; key: string }> = {
    "kube-apiserver service-cluster-ip-range": { allowed: [config.serviceCidr.from, config.serviceCidr.to], key: "serviceCidr.from" },
    "kube-controller-manager service-cluster-ip-range": { allowed: [config.serviceCidr.from, config.serviceCidr.to], key: "serviceCidr.from" },
    "kube-controller-manager cluster-cidr": { allowed: [config.podCidr.from, config.podCidr.to], key: "podCidr.from" },
  };

  for (const pod of pods) {
    for (const [flag, value] of pod.flags) {
      const rule = expected[`${pod.component} ${flag}`];
      if (!rule) continue;
      const range = flagRange(value, family);
      if (range && rule.allowed.includes(range)) continue;
      findings.push({
        code: "RANGE_FLAG_MISMATCH",
        severity: "blocker",
        object: `Pod kube-system/${pod.podName}`,
        path: `--${flag}`,
        message: `${pod.component} on ${pod.node} runs with --${flag}=${value}, but cidr-migration:${rule.key} is ${rule.allowed[0]}`,
        action: `set cidr-migration:${rule.key} to the range the cluster really uses, or fix the manifest on ${pod.node}`,
      });
    }
  }

  for (const component of ["kube-apiserver", "kube-controller-manager"] as const) {
    const ofComponent = pods.filter((p) => p.component === component);
    if (ofComponent.length < 2) continue;
    const names = new Set<string>();
    for (const p of ofComponent) for (const name of p.flags.keys()) names.add(name);
    for (const flag of [...names].sort()) {
      if (NODE_SPECIFIC_FLAGS.includes(flag)) continue;
      const values = ofComponent.map((p: ControlPlanePod) => `${p.node}=${p.flags.get(flag) ?? "(unset)"}`);
      const distinct = new Set(ofComponent.map((p) => p.flags.get(flag) ?? "\u0000unset"));
      if (distinct.size < 2) continue;
      const isRange = RANGE_FLAGS[component].includes(flag);
      findings.push({
        code: isRange ? "CONTROL_PLANE_RANGE_FLAGS_DIFFER" : "CONTROL_PLANE_FLAGS_DIFFER",
        severity: isRange ? "blocker" : "warning",
        object: `${component} static pods`,
        path: `--${flag}`,
        message: `control-plane nodes disagree on --${flag}: ${values.join(", ")}`,
        action: isRange
          ? "make the manifests on every control-plane node agree (the old range) before migrating"
          : "check whether the difference is intended; the migration edits each manifest in place and keeps it",
      });
    }
  }

  const withPods = new Set(pods.map((p) => `${p.component} ${p.node}`));
  for (const node of config.nodes.filter((n) => n.role === "control-plane")) {
    const missing = (["kube-apiserver", "kube-controller-manager"] as const).filter((c) => !withPods.has(`${c} ${node.name}`));
    if (missing.length === 0 || pods.length === 0) continue;
    findings.push({
      code: "CONTROL_PLANE_POD_MISSING",
      severity: "warning",
      object: `Node ${node.name}`,
      message: `listed as control-plane in cidr-migration:nodes, but no ${missing.join(" or ")} mirror pod runs there, so its flags cannot be compared`,
      action: "check the node's kubelet and /etc/kubernetes/manifests, or fix its role in cidr-migration:nodes",
    });
  }
  return findings;
}
