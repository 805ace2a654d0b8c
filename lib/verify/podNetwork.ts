import { Finding } from "../report/findings";
import { familyOf, isCidr } from "../net/cidr";
import { CLOSED_NODE_SELECTOR, INSTALLATION_NAME } from "../podNetwork/calicoInstallation";
import { objectLabel } from "../preflight/checkInput";
import { rangeLists } from "../config/rangeLists";
import { LeftoverTest } from "./leftovers";
import { RangeVerifyInput } from "./verifyInput";

/**
 * The pod network after the move: every Node holds a subnet of the new Pod range, no running Pod keeps an old IP,
 * and Calico holds no pool, IPAM block or block affinity in the old range.
 */
export function verifyPodNetwork(input: RangeVerifyInput): Finding[] {
  const { config, inventory, cluster } = input;
  const findings: Finding[] = [];
  const { from, to } = rangeLists(config).pod;
  const leftover = new LeftoverTest(from, to);
  const rerun = "run `pulumi up` again to finish the node rollout (nodes/<name>)";

  for (const node of inventory.nodes) {
    const object = `Node ${node.name}`;
    const cidrs = node.podCIDRs?.length ? node.podCIDRs : node.podCIDR ? [node.podCIDR] : [];
    if (cidrs.length === 0) {
      findings.push({
        code: "NODE_PODCIDR_MISSING",
        severity: "warning",
        object,
        path: "spec.podCIDR",
        message: `has no podCIDR: kube-controller-manager has not allocated one from ${to}`,
        action: "check that kube-controller-manager runs with --allocate-node-cidrs=true and the new --cluster-cidr (nodes/enable-cidr-allocation)",
      });
    }
    // a dual-stack run ends with a podCIDR of each family on every Node (an add-family run's re-registration gives the second)
    const second = config.secondFamily;
    if (second && cidrs.length > 0 && !cidrs.some((cidr) => isCidr(cidr) && familyOf(cidr) === second.family)) {
      findings.push({ code: "NODE_PODCIDR_FAMILY_MISSING", severity: "blocker", object, path: "spec.podCIDRs", message: `has no ${second.family} podCIDR from ${second.podCidr.to} (it holds ${cidrs.join(", ")})`, action: rerun });
    }
    cidrs.forEach((cidr, i) => {
      const path = node.podCIDRs?.length ? `spec.podCIDRs[${i}]` : "spec.podCIDR";
      if (leftover.cidr(cidr)) {
        findings.push({ code: "NODE_PODCIDR_IN_OLD_RANGE", severity: "blocker", object, path, message: `podCIDR ${cidr} is still in the old Pod range ${from}`, action: rerun });
      } else if (!leftover.inNew(cidr)) {
        findings.push({
          code: "NODE_PODCIDR_OUTSIDE_NEW_RANGE",
          severity: "blocker",
          object,
          path,
          message: `podCIDR ${cidr} is outside the new Pod range ${to}: kube-controller-manager exits at start on such a node`,
          action: `re-register the node so it gets a subnet of ${to}`,
        });
      }
    });
  }

  for (const pod of cluster.pods) {
    const phase = pod.status?.phase;
    if (pod.spec?.hostNetwork || phase === "Succeeded" || phase === "Failed") continue;
    const ips = pod.status?.podIPs?.length ? pod.status.podIPs.map((p) => p.ip) : pod.status?.podIP ? [pod.status.podIP] : [];
    ips.forEach((ip, i) => {
      if (!leftover.address(ip)) return;
      findings.push({
        code: "POD_IP_IN_OLD_RANGE",
        severity: "blocker",
        object: objectLabel("Pod", pod.metadata),
        path: pod.status?.podIPs?.length ? `status.podIPs[${i}].ip` : "status.podIP",
        message: `Pod IP ${ip} is still in the old Pod range ${from}${pod.spec?.nodeName ? ` (node ${pod.spec.nodeName})` : ""}`,
        action: "delete the pod so its controller re-creates it on the new range; if its node still holds an old podCIDR, finish that node first",
      });
    });
  }

  // A pool left in the old range is a blocker even when closed: the operator may re-open it, and it is the run's to remove.
  for (const pool of inventory.cni.calicoPools) {
    if (!leftover.cidr(pool.cidr)) continue;
    findings.push({
      code: "CALICO_POOL_IN_OLD_RANGE",
      severity: "blocker",
      object: `IPPool ${pool.name}`,
      path: "spec.cidr",
      message: `Calico IPPool ${pool.cidr} in the old Pod range is still there${pool.disabled || pool.nodeSelector === CLOSED_NODE_SELECTOR ? " (closed to new blocks)" : " and open: new pods can get old addresses"}`,
      action: "delete it once no IPAM block of it is in use (step cni/calico/remove-old-pool)",
    });
  }
  (inventory.cni.calicoOperator?.ipPools ?? []).forEach((pool, i) => {
    if (!isCidr(pool.cidr) || !leftover.cidr(pool.cidr)) return;
    findings.push({
      code: "CALICO_INSTALLATION_POOL_IN_OLD_RANGE",
      severity: "blocker",
      object: `Installation ${INSTALLATION_NAME}`,
      path: `spec.calicoNetwork.ipPools[${i}]`,
      message: `Installation ${INSTALLATION_NAME} still lists pool ${pool.name ?? "(unnamed)"} ${pool.cidr} in the old Pod range ${from}: the Tigera operator keeps re-creating it`,
      action: "run `pulumi up` again to finish step cni/calico/remove-old-pool, which removes it from the Installation once no IPAM block is left in it",
    });
  });
  const calico = [
    ["CALICO_BLOCK_IN_OLD_RANGE", "IPAMBlock", cluster.calicoIpamBlocks],
    ["CALICO_AFFINITY_IN_OLD_RANGE", "BlockAffinity", cluster.calicoBlockAffinities],
  ] as const;
  for (const [code, kind, objects] of calico) {
    for (const o of objects) {
      const cidr = o.spec?.cidr;
      if (!leftover.cidr(cidr)) continue;
      const owner = o.spec?.node ?? o.spec?.affinity;
      findings.push({
        code,
        severity: "blocker",
        object: objectLabel(kind, o.metadata),
        path: "spec.cidr",
        message: `Calico ${kind} ${cidr}${owner ? ` (${owner})` : ""} is still in the old Pod range ${from}`,
        action: "release it: drain the node that owns it and let calico-node (or calicoctl ipam release) free the block, then delete it",
      });
    }
  }
  return findings;
}
