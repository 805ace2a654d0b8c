import { isIpAddress, normalizeIp } from "../net/cidr";

/**
 * Node annotations where a CNI agent records the node address it tunnels or peers from: flannel's VXLAN endpoint,
 * Calico's BGP and IP-in-IP address. Each agent detects the address when it starts and writes its own; the other
 * nodes' agents read it to reach this one.
 */
export const CNI_NODE_ADDRESS_ANNOTATIONS: readonly string[] = [
  "projectcalico.org/IPv4Address",
  "projectcalico.org/IPv6Address",
  "flannel.alpha.coreos.com/public-ip",
  "flannel.alpha.coreos.com/public-ipv6",
];

/** The address each such annotation of a Node names (Calico's carries a prefix length, "10.0.0.21/24"). */
export function cniNodeAddresses(annotations: Record<string, string> | undefined): Array<{ annotation: string; address: string }> {
  return CNI_NODE_ADDRESS_ANNOTATIONS.flatMap((annotation) => {
    const address = annotations?.[annotation]?.split("/")[0]?.trim();
    return address && isIpAddress(address) ? [{ annotation, address: normalizeIp(address) }] : [];
  });
}
