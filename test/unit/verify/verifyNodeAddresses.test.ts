import * as assert from "assert";
import { validateConfig } from "../../../lib/config/config";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { Inventory } from "../../../lib/plan/inventory";
import { verifyNodeAddresses } from "../../../lib/verify/nodeAddresses";
import { VerifyInput, verifyFindings, verifyTargets } from "../../../lib/verify";
import { mirrorPod } from "../../support/mirrorPods";
import { rangeConfig } from "../../support/rangeConfig";

// verify after node address changes (issue 16), over a hand-made cluster
const config = rangeConfig(validateConfig({
  values: {
    serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
    podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
    etcd: { endpoints: ["http://127.0.0.1:2379"] },
    nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }, { name: "worker-1", host: "192.168.50.11", role: "worker" }],
    nodeAddresses: [{ name: "cp-1", from: "192.168.50.10", to: "192.168.60.10" }, { name: "worker-1", from: "192.168.50.11", to: "192.168.60.11" }],
  },
}, { planOnly: true }));

const mirror = mirrorPod;

function moved(): VerifyInput {
  const inventory: Inventory = {
    serverVersion: { major: "1", minor: "37", gitVersion: "v1.37.2" },
    services: [],
    nodes: [
      { name: "cp-1", podCIDR: "10.48.0.0/24", internalIPs: ["192.168.60.10"], controlPlane: true, labels: {}, unschedulable: false },
      { name: "worker-1", podCIDR: "10.48.1.0/24", internalIPs: ["192.168.60.11"], controlPlane: false, labels: {}, unschedulable: false },
    ],
    cni: { detected: "none", calicoPools: [] },
  };
  const cluster = {
    ...emptyClusterObjects(),
    pods: [
      mirror("kube-apiserver", ["--advertise-address=192.168.60.10"]),
      mirror("etcd", ["--advertise-client-urls=https://192.168.60.10:2379", "--initial-advertise-peer-urls=https://192.168.60.10:2380", "--listen-client-urls=https://127.0.0.1:2379,https://192.168.60.10:2379", "--listen-peer-urls=https://192.168.60.10:2380"]),
    ],
  };
  return { config, inventory, cluster, targets: verifyTargets(config, inventory) };
}

const brief = (input: VerifyInput) => verifyNodeAddresses(input).map((f) => [f.code, f.object, f.path]);

describe("verify: node address changes (issue 16)", () => {
  it("nodes on their new addresses, the apiserver and etcd advertising them: nothing to report", () => {
    assert.deepStrictEqual(brief(moved()), []);
  });

  it("a node still on its old address, one without the new, the apiserver and etcd on the old: each a blocker", () => {
    const input = moved();
    input.inventory.nodes[1].internalIPs = ["192.168.50.11"];
    input.inventory.nodes[0].internalIPs = ["192.168.70.10"];
    input.cluster.pods = [
      mirror("kube-apiserver", ["--advertise-address=192.168.50.10"]),
      mirror("etcd", ["--advertise-client-urls=https://192.168.50.10:2379", "--listen-peer-urls=https://192.168.60.10:2380"]),
    ];
    assert.deepStrictEqual(brief(input), [
      ["NODE_ADDRESS_NEW_MISSING", "Node cp-1", "status.addresses"],
      ["NODE_ADDRESS_APISERVER_OLD", "Pod kube-system/kube-apiserver-cp-1", "--advertise-address"],
      ["NODE_ADDRESS_ETCD_OLD", "Pod kube-system/etcd-cp-1", "--advertise-client-urls"],
      ["NODE_ADDRESS_OLD", "Node worker-1", "status.addresses"],
    ]);
    input.inventory.nodes.pop();
    assert.deepStrictEqual(brief(input).at(-1), ["NODE_ADDRESS_NODE_MISSING", "Node worker-1", ""]);
  });

  it("addresses alone (no serviceCidr or podCidr): verify holds the cluster to the addresses only, and fails the same way", () => {
    const { serviceCidr: _s, podCidr: _p, ...alone } = config;
    const input: VerifyInput = { ...moved(), config: alone, targets: undefined };
    // pods and Nodes in the old pod range, and a Service in the old Service range, are no finding of this run
    input.inventory.nodes[1].podCIDR = "10.244.1.0/24";
    input.inventory.services = [{ namespace: "web", name: "api", type: "ClusterIP", clusterIP: "10.96.4.4", hasSelector: true }];
    assert.deepStrictEqual(verifyFindings(input), []);
    input.inventory.nodes[1].internalIPs = ["192.168.50.11"];
    assert.deepStrictEqual(verifyFindings(input).map((f) => [f.code, f.object]), [["NODE_ADDRESS_OLD", "Node worker-1"]]);
  });

  it("a moved node whose CNI agent still tunnels from the old address (its annotation on the Node) is a blocker; on the new one, nothing", () => {
    const input = moved();
    const node = (name: string, annotations: Record<string, string>) => ({ metadata: { name, annotations } });
    input.cluster.nodes = [node("worker-1", { "flannel.alpha.coreos.com/public-ip": "192.168.50.11" }), node("cp-1", { "projectcalico.org/IPv4Address": "192.168.60.10/24" })];
    const found = verifyNodeAddresses(input);
    assert.deepStrictEqual(found.map((f) => [f.code, f.object, f.path]), [["NODE_ADDRESS_CNI_OLD", "Node worker-1", 'metadata.annotations["flannel.alpha.coreos.com/public-ip"]']]);
    assert.match(found[0].message, /names 192\.168\.50\.11 \(the old address\), not 192\.168\.60\.11: the node's CNI agent still tunnels from it/);
    assert.match(found[0].action, /step address-agents restarts the agent/);
    input.cluster.nodes = [node("worker-1", { "flannel.alpha.coreos.com/public-ip": "192.168.60.11" })];
    assert.deepStrictEqual(brief(input), []);
  });
});
