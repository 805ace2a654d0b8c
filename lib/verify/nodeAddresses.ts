import { V1Pod } from "@kubernetes/client-node";
import { NodeAddressChange } from "../config/migrationConfig";
import { endpointHost, familyOf } from "../net/cidr";
import { cniNodeAddresses } from "../podNetwork/cniNodeAddress";
import { Finding } from "../report/findings";
import { controlPlanePods, isMirrorPod, parseFlags } from "../preflight/controlPlanePods";
import { VerifyInput } from "./verifyInput";

/**
 * Node address changes (nodeAddresses, issue 16), after the run: each node reports its new InternalIP and not the
 * old one, its CNI agent tunnels from the new one (the address annotations it writes on the Node, which the other
 * nodes' agents read), and what the run itself moves on a control-plane node (the apiserver's --advertise-address, etcd's
 * advertised and listening URLs) names the new address. Other objects holding an old address are preflight's
 * OLD_NODE_IP findings: the operator's, not the run's.
 */

/** etcd's flags that carry the member's own address. */
const ETCD_ADDRESS_FLAGS = ["advertise-client-urls", "initial-advertise-peer-urls", "listen-client-urls", "listen-peer-urls"];

function etcdPodOf(pods: readonly V1Pod[], node: string): V1Pod | undefined {
  return pods.find((p) => p.metadata?.namespace === "kube-system" && isMirrorPod(p) && p.metadata?.labels?.component === "etcd" && p.spec?.nodeName === node);
}

/** The CNI's address annotations of the node name the new address: the other nodes' agents tunnel to what they name. */
function cniAddressFindings({ cluster }: VerifyInput, change: NodeAddressChange): Finding[] {
  const node = cluster.nodes.find((n) => n.metadata?.name === change.name);
  return cniNodeAddresses(node?.metadata?.annotations)
    .filter((a) => familyOf(a.address) === familyOf(change.to) && a.address !== change.to)
    .map((a) => ({
      code: "NODE_ADDRESS_CNI_OLD",
      severity: "blocker" as const,
      object: `Node ${change.name}`,
      path: `metadata.annotations["${a.annotation}"]`,
      message: `names ${a.address}${a.address === change.from ? " (the old address)" : ""}, not ${change.to}: the node's CNI agent still tunnels from it, and pod traffic between this node and the others fails once ${change.from} is gone`,
      action: `run \`pulumi up\` again (step address-agents restarts the agent); by hand, delete the node's CNI agent pod so that its DaemonSet starts one that detects ${change.to}`,
    }));
}

export function verifyNodeAddresses(input: VerifyInput): Finding[] {
  const { config, inventory, cluster } = input;
  const findings: Finding[] = [];
  const rerun = (node: string) => `run \`pulumi up\` again to finish the address change of node ${node}`;
  for (const change of config.nodeAddresses) {
    const object = `Node ${change.name}`;
    const node = inventory.nodes.find((n) => n.name === change.name);
    if (!node) {
      findings.push({ code: "NODE_ADDRESS_NODE_MISSING", severity: "blocker", object, path: "", message: `is not registered: its address change to ${change.to} has not finished`, action: rerun(change.name) });
      continue;
    }
    if (node.internalIPs.includes(change.from)) {
      findings.push({ code: "NODE_ADDRESS_OLD", severity: "blocker", object, path: "status.addresses", message: `still reports InternalIP ${change.from}`, action: rerun(change.name) });
    } else if (!node.internalIPs.includes(change.to)) {
      findings.push({ code: "NODE_ADDRESS_NEW_MISSING", severity: "blocker", object, path: "status.addresses", message: `reports InternalIP ${node.internalIPs.join(", ") || "none"}, not ${change.to}: its kubelet runs without --node-ip=${change.to}`, action: rerun(change.name) });
    }
    findings.push(...cniAddressFindings(input, change));
    if (change.role !== "control-plane") continue;
    for (const pod of controlPlanePods(cluster.pods).filter((p) => p.component === "kube-apiserver" && p.node === change.name)) {
      const advertised = pod.flags.get("advertise-address");
      if (advertised === change.from) {
        findings.push({ code: "NODE_ADDRESS_APISERVER_OLD", severity: "blocker", object: `Pod kube-system/${pod.podName}`, path: "--advertise-address", message: `kube-apiserver on ${change.name} still advertises ${change.from}`, action: rerun(change.name) });
      }
    }
    const etcd = etcdPodOf(cluster.pods, change.name);
    const container = etcd?.spec?.containers?.find((c) => c.name === "etcd") ?? etcd?.spec?.containers?.[0];
    const flags = parseFlags([...(container?.command ?? []), ...(container?.args ?? [])]);
    for (const flag of ETCD_ADDRESS_FLAGS) {
      if (!(flags.get(flag) ?? "").split(",").some((url) => endpointHost(url.trim()) === change.from)) continue;
      findings.push({ code: "NODE_ADDRESS_ETCD_OLD", severity: "blocker", object: `Pod kube-system/${etcd!.metadata?.name}`, path: `--${flag}`, message: `etcd on ${change.name} still has ${change.from} in --${flag}=${flags.get(flag)}`, action: rerun(change.name) });
    }
  }
  return findings;
}
