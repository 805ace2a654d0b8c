import { nthAddress } from "../lib/net/cidr";
import { nthSubnet } from "../lib/net/nodeSubnets";
import { Inventory } from "../lib/plan/inventory";

/** A synthetic cluster for benchmarks: `nodes` nodes (3 control-plane) and `services` Services in the old ranges. */

export const SYNTHETIC_RANGES = {
  serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
  podCidr: { from: "10.128.0.0/10", to: "100.64.0.0/10", nodeMaskSize: 26 },
};

export function syntheticInventory(nodes: number, services: number): Inventory {
  const inventory: Inventory = {
    serverVersion: { major: "1", minor: "28", gitVersion: "v1.28.2" },
    services: [
      { namespace: "default", name: "kubernetes", type: "ClusterIP", clusterIP: "10.96.0.1", hasSelector: false },
      { namespace: "kube-system", name: "kube-dns", type: "ClusterIP", clusterIP: "10.96.0.10", hasSelector: true },
    ],
    nodes: [],
    cni: { detected: "calico", calicoPools: [{ name: "default-ipv4-ippool", cidr: SYNTHETIC_RANGES.podCidr.from, blockSize: 26 }] },
  };
  for (let i = 0; i < services; i++) {
    const kind = i % 20;
    inventory.services.push({
      namespace: `team-${i % 97}`,
      name: `svc-${i}`,
      type: kind === 0 ? "NodePort" : "ClusterIP",
      clusterIP: kind === 1 ? "None" : nthAddress(SYNTHETIC_RANGES.serviceCidr.from, 100 + i),
      hasSelector: true,
    });
  }
  for (let i = 0; i < nodes; i++) {
    inventory.nodes.push({
      name: i < 3 ? `cp-${i + 1}` : `worker-${String(i).padStart(6, "0")}`,
      podCIDR: nthSubnet(SYNTHETIC_RANGES.podCidr.from, SYNTHETIC_RANGES.podCidr.nodeMaskSize, i),
      internalIPs: [nthAddress("172.16.0.0/12", i + 1)],
      controlPlane: i < 3,
      labels: {},
      unschedulable: false,
    });
  }
  return inventory;
}

/** The raw stack config for a synthetic cluster, as the CLI reads it from a stack file. */
export function syntheticConfigValues(inventory: Inventory): Record<string, unknown> {
  return {
    ...SYNTHETIC_RANGES,
    cni: "auto",
    etcd: { endpoints: ["http://127.0.0.1:2379"] },
    nodes: inventory.nodes.map((n) => ({ name: n.name, host: n.internalIPs[0], role: n.controlPlane ? "control-plane" : "worker" })),
    nodeRollout: { maxUnavailable: 10 },
  };
}
