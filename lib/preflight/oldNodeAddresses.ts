import { V1Pod } from "@kubernetes/client-node";
import { NodeAddressChange } from "../config/migrationConfig";
import { cidrContains, familyOf, isCidr } from "../net/cidr";
import { Finding } from "../report/findings";
import { AddressHit, NamedRange, RangeMatcher } from "./addressLiterals";
import { PreflightInput } from "./checkInput";
import { isMirrorPod } from "./controlPlanePods";
import { isTemplated, literalScanner, ScanScope, visitClusterTexts } from "./hardCodedAddresses";
import { CNI_NODE_ADDRESS_ANNOTATIONS } from "../podNetwork/cniNodeAddress";

/**
 * Node address changes (nodeAddresses, issue 16): every place in the cluster, beyond the ones the node address plan
 * follows itself (lib/plan/nodeAddressPlan.ts), that still holds a node's old address. Each finding names the
 * object, the path and what to do. Same walk as the old-range scan, with each old address as a /32 or /128.
 */

/** Static control-plane pods: their manifests are in the plan's references. */
const STATIC_COMPONENTS: readonly string[] = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

const isStaticControlPlanePod = (pod: V1Pod) =>
  pod.metadata?.namespace === "kube-system" && isMirrorPod(pod) && STATIC_COMPONENTS.includes(pod.metadata?.labels?.component ?? "");

const NODE_SCOPE: ScanScope = {
  // kube-proxy's kubeconfig, kubeadm-config and cluster-info may name a control-plane address: scanned too
  skipConfigMap: () => false,
  skipPod: (pod) => isTemplated(pod) || isStaticControlPlanePod(pod),
  // the apiserver writes default/kubernetes from its --advertise-address
  skipEndpointsOf: (service) => service === "default/kubernetes",
  nodeFields: true,
};

const label = (c: NodeAddressChange) => `old address of node ${c.name}`;
const hostRange = (ip: string) => `${ip}/${familyOf(ip) === "IPv4" ? 32 : 128}`;

export function checkOldNodeAddresses(input: PreflightInput): Finding[] {
  const changes = input.config.nodeAddresses;
  if (changes.length === 0) return [];
  const byLabel = new Map(changes.map((c) => [label(c), c]));
  const matcher = new RangeMatcher(changes.map((c): NamedRange => ({ label: label(c), cidr: hostRange(c.from) })));
  const findings: Finding[] = [];
  const scanner = literalScanner(matcher, (object, where, hit) => {
    const finding = hitFinding(byLabel.get(hit.range.label)!, object, where, hit);
    if (finding) findings.push(finding);
  });
  visitClusterTexts(input.cluster, NODE_SCOPE, scanner, (object, texts) => {
    if (input.allowSecretValues) {
      const visit = scanner(object);
      for (const [path, text] of texts) visit(path, text);
      return;
    }
    const count = texts.reduce((n, [, text]) => n + matcher.scan(text).filter((h) => !h.isCidr).length, 0);
    if (count > 0) {
      findings.push({
        code: "OLD_NODE_IP_IN_SECRET",
        severity: "warning",
        object,
        message: `holds ${count} old node address${count === 1 ? "" : "es"} (values and keys not shown)`,
        action: "review the Secret; run preflight with --allow-secret-values to see the path of each address",
      });
    }
  });
  return findings;
}

/** undefined for a CIDR that also covers the new address: it needs no change. */
function hitFinding(change: NodeAddressChange, object: string, path: string, hit: AddressHit): Finding | undefined {
  const base = { severity: "warning" as const, object, path };
  if (hit.isCidr) {
    if (isCidr(hit.literal) && cidrContains(hit.literal, change.to)) return undefined;
    return {
      ...base,
      code: "OLD_NODE_CIDR",
      message: `${hit.literal} covers node ${change.name}'s old address ${change.from} but not its new one ${change.to}`,
      action: `widen it or add ${hostRange(change.to)}, or the node loses what this range grants once it moves`,
    };
  }
  const annotation = CNI_NODE_ADDRESS_ANNOTATIONS.find((a) => path.includes(JSON.stringify(a)));
  return {
    ...base,
    code: "OLD_NODE_IP",
    message: `${hit.literal} is node ${change.name}'s old address (it moves to ${change.to})`,
    action: annotation
      ? `none by hand: the run restarts the node's CNI agent once ${change.from} is gone (step address-agents), which writes ${annotation} again with ${change.to}, and verify checks it`
      : `replace it with ${change.to}, or refer to the node by name: nothing answers at ${change.from} once the node moves`,
  };
}
