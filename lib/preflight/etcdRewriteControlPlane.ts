import { V1Pod } from "@kubernetes/client-node";
import { isIpAddress, normalizeIp } from "../net/cidr";
import { Finding } from "../report/findings";
import { objectLabel, PreflightInput } from "./checkInput";
import { ClusterObjects, keyOf } from "./clusterObjects";
import { componentOf, controlPlanePods, isMirrorPod } from "./controlPlanePods";

/**
 * services.strategy etcd-rewrite stops every kube-apiserver and kube-controller-manager by moving its static-pod
 * manifest out of /etc/kubernetes/manifests over SSH on the configured control-plane nodes, then writes etcd behind
 * their back. One it cannot stop that way keeps serving, caching and writing the objects being rewritten, so any
 * sign of one refuses the strategy before anything changes.
 *
 * Already blockers for every strategy (clusterKind.ts), not repeated here: no kube-apiserver mirror pod at all
 * (CONTROL_PLANE_PODS_MISSING), and a node with one that cidr-migration:nodes does not list as control-plane
 * (CONTROL_PLANE_NODE_NOT_CONFIGURED).
 */

const RECREATE = "use services.strategy: recreate (it moves each Service through the running apiservers)";

export function checkEtcdRewriteControlPlane(input: PreflightInput): Finding[] {
  if (input.config.services.strategy !== "etcd-rewrite") return [];
  return [...notStaticPods(input.cluster.pods), ...unconfiguredControllerManagers(input), ...unaccountedApiservers(input.cluster)];
}

/** A kube-system apiserver or controller-manager pod that is not a mirror pod has no manifest the run could move away. */
function notStaticPods(pods: readonly V1Pod[]): Finding[] {
  const findings: Finding[] = [];
  for (const pod of pods) {
    if (pod.metadata?.namespace !== "kube-system" || isMirrorPod(pod)) continue;
    const component = componentOf(pod);
    if (!component) continue;
    const owner = pod.metadata.ownerReferences?.[0];
    const runBy = owner ? `run by ${owner.kind} ${owner.name}` : "created through the API";
    findings.push({
      code: "ETCD_REWRITE_POD_NOT_STATIC",
      severity: "blocker",
      object: objectLabel("Pod", pod.metadata),
      message: `a ${component} on node ${pod.spec?.nodeName ?? "?"} that is not a static pod (no kubernetes.io/config.mirror annotation; ${runBy}): services.strategy etcd-rewrite stops ${component} by moving its manifest out of /etc/kubernetes/manifests, so this one would keep running while etcd is rewritten`,
      action: RECREATE,
    });
  }
  return findings;
}

/**
 * A controller-manager static pod on a node not listed as control-plane: nobody stops it, and it writes Node
 * podCIDRs. Nodes that also run an apiserver static pod are CONTROL_PLANE_NODE_NOT_CONFIGURED already.
 */
function unconfiguredControllerManagers(input: PreflightInput): Finding[] {
  const pods = controlPlanePods(input.cluster.pods);
  const configured = new Set(input.config.nodes.filter((n) => n.role === "control-plane").map((n) => n.name));
  const apiserverNodes = new Set(pods.filter((p) => p.component === "kube-apiserver").map((p) => p.node));
  const nodes = new Set(pods.filter((p) => p.component === "kube-controller-manager" && !configured.has(p.node) && !apiserverNodes.has(p.node)).map((p) => p.node));
  return [...nodes].map((node) => ({
    code: "ETCD_REWRITE_NODE_NOT_CONFIGURED",
    severity: "blocker" as const,
    object: `Node ${node || "?"}`,
    message: "runs a kube-controller-manager static pod but cidr-migration:nodes does not list it with role control-plane: services.strategy etcd-rewrite would not stop it, and it would write Node podCIDRs while etcd is rewritten",
    action: `add { name: ${node || "<node>"}, host: <address>, role: control-plane } to cidr-migration:nodes, or ${RECREATE}`,
  }));
}

/** The addresses each source of default/kubernetes lists; every apiserver writes its own there (the lease reconciler). */
function kubernetesEndpointSources(cluster: ClusterObjects): Array<{ object: string; addresses: string[] }> {
  const sources: Array<{ object: string; addresses: string[] }> = [];
  for (const ep of cluster.endpoints) {
    if (keyOf(ep.metadata) !== "default/kubernetes") continue;
    const addresses = (ep.subsets ?? []).flatMap((s) => [...(s.addresses ?? []), ...(s.notReadyAddresses ?? [])]).map((a) => a.ip);
    sources.push({ object: objectLabel("Endpoints", ep.metadata), addresses: [...new Set(addresses)] });
  }
  for (const slice of cluster.endpointSlices) {
    const labels = slice.metadata?.labels ?? {};
    if (slice.metadata?.namespace !== "default" || (slice.metadata.name !== "kubernetes" && labels["kubernetes.io/service-name"] !== "kubernetes")) continue;
    const addresses = (slice.endpoints ?? []).flatMap((e) => e.addresses ?? []);
    sources.push({ object: objectLabel("EndpointSlice", slice.metadata), addresses: [...new Set(addresses)] });
  }
  return sources;
}

/** One spelling per address (IPv6 has many); anything that is no IP is kept as written. */
const canonical = (text: string): string => (isIpAddress(text) ? normalizeIp(text) : text);

/**
 * default/kubernetes lists every apiserver that serves this cluster. An address beyond the apiserver static pods, or
 * one no static pod's node, pod IP or --advertise-address accounts for, is an apiserver run some other way (another
 * host, a managed or external control plane) that the run cannot stop.
 */
function unaccountedApiservers(cluster: ClusterObjects): Finding[] {
  const mirrors = cluster.pods.filter((pod) => pod.metadata?.namespace === "kube-system" && isMirrorPod(pod) && componentOf(pod) === "kube-apiserver");
  // none at all is CONTROL_PLANE_PODS_MISSING (clusterKind.ts)
  if (mirrors.length === 0) return [];
  const nodes = new Set(controlPlanePods(mirrors).map((p) => p.node));
  const known = new Set<string>();
  for (const p of controlPlanePods(mirrors)) {
    const advertised = p.flags.get("advertise-address");
    if (advertised) known.add(canonical(advertised));
  }
  for (const pod of mirrors) {
    for (const ip of [pod.status?.podIP, pod.status?.hostIP, ...(pod.status?.podIPs ?? []).map((i) => i.ip)]) if (ip) known.add(canonical(ip));
  }
  for (const node of cluster.nodes) {
    if (nodes.has(node.metadata?.name ?? "")) for (const a of node.status?.addresses ?? []) known.add(canonical(a.address));
  }
  // Endpoints and its EndpointSlice name the same apiservers: one finding, from the source that lists the most
  const [worst] = kubernetesEndpointSources(cluster)
    .map((source) => ({ ...source, unmatched: source.addresses.filter((a) => !known.has(canonical(a))) }))
    .filter((source) => source.addresses.length > nodes.size || source.unmatched.length > 0)
    .sort((a, b) => b.addresses.length - a.addresses.length || b.unmatched.length - a.unmatched.length);
  if (!worst) return [];
  const count = worst.addresses.length === 1 ? "1 apiserver address" : `${worst.addresses.length} apiserver addresses`;
  const pods = nodes.size === 1 ? "the 1 kube-apiserver static pod" : `the ${nodes.size} kube-apiserver static pods`;
  const strays = worst.unmatched.length > 0 ? `; ${worst.unmatched.join(", ")} ${worst.unmatched.length === 1 ? "is" : "are"} the address of none of them` : "";
  return [{
    code: "ETCD_REWRITE_APISERVER_NOT_STATIC",
    severity: "blocker",
    object: worst.object,
    message: `lists ${count} (${worst.addresses.join(", ")}) for ${pods} (on ${[...nodes].join(", ")})${strays}: some apiserver is not a static pod services.strategy etcd-rewrite can stop, and it would keep serving and writing while etcd is rewritten`,
    action: `${RECREATE}; if an apiserver was removed minutes ago, wait until its address leaves default/kubernetes and run preflight again`,
  }];
}
