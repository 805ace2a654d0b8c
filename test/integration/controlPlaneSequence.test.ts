/**
 * The control-plane sequence ControlPlane + node rollout + EnableCidrAllocation use, on the real test bed
 * (etcd + kube-apiserver + kube-controller-manager of the test-bed version, started by the suite):
 * 1. the hazard is real: KCM on the new --cluster-cidr with allocation ON exits while Nodes hold old podCIDRs;
 * 2. the safe sequence: KCM on the new --cluster-cidr (and new Service range) with --allocate-node-cidrs=false is
 *    healthy although every Node still holds an old-range podCIDR; the apiserver moves to the new Service range;
 * 3. each Node re-registers (deleted and created afresh, as a kubelet does) and gets its PLANNED podCIDR from the
 *    tool through a patch (spec.podCIDR can only go from empty to a value: a second patch is refused);
 * 4. with no Node left in the old range, KCM with allocation ON is healthy, and the next new Node gets a subnet
 *    in the new range that collides with none of the planned ones.
 */
import { strict as assert } from "assert";
import { CoreV1Api, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { cidrContains } from "../../lib/net/cidr";
import { nthSubnet } from "../../lib/net/nodeSubnets";
import { useTestCluster } from "../testbed/fixture";
import { registerNode, reregisterNode, waitForPodCIDR } from "../testbed/kubelet";

const OLD_SERVICE = "10.96.0.0/12";
const NEW_SERVICE = "10.112.0.0/12";
const OLD_POD = "10.244.0.0/16";
const NEW_POD = "10.48.0.0/16";
const NODES = [
  { name: "worker-a", ip: "127.0.0.11" },
  { name: "worker-b", ip: "127.0.0.12" },
  { name: "worker-c", ip: "127.0.0.13" },
];
// The plan's node map (lib/plan assigns subnets the same way): worker-b and worker-c swap their order on purpose,
// so KCM's own next pick (the first free subnet) would collide if it ignored what was assigned.
const PLANNED: Record<string, string> = {
  "worker-a": nthSubnet(NEW_POD, 24, 0),
  "worker-b": nthSubnet(NEW_POD, 24, 2),
  "worker-c": nthSubnet(NEW_POD, 24, 1),
};

describe("control-plane sequence on the real test bed: allocation off during the rollout", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE, podCidr: OLD_POD, nodeMaskSize: 24 });
  const core = () => cluster().kubeConfig().makeApiClient(CoreV1Api);

  before(async () => {
    for (const node of NODES) await registerNode(cluster().kubeConfig(), { name: node.name, internalIP: node.ip });
    for (const node of NODES) {
      const podCIDR = await waitForPodCIDR(cluster().kubeConfig(), node.name, 30_000);
      assert.ok(cidrContains(OLD_POD, podCIDR), `${node.name} starts in the old range (${podCIDR})`);
    }
  });

  it("1. KCM on the new --cluster-cidr with allocation on exits while Nodes hold old podCIDRs", async () => {
    await cluster().restartControllerManager({ clusterCidr: NEW_POD, serviceClusterIpRange: NEW_SERVICE, allocateNodeCidrs: true });
    const code = await cluster().waitControllerManagerExit();
    assert.notEqual(code, 0);
    assert.match(cluster().controllerManagerLog(), /is out the range of cluster cidr/);
  });

  it("2. KCM on the new ranges with --allocate-node-cidrs=false is healthy; the apiserver moves to the new Service range", async () => {
    await cluster().restartControllerManager({ clusterCidr: NEW_POD, serviceClusterIpRange: NEW_SERVICE, allocateNodeCidrs: false, nodeCidrMaskSize: 24 });
    await cluster().waitControllerManagerHealthy();
    assert.equal(cluster().controllerManagerExited(), false);
    await cluster().restartApiserver({ serviceClusterIpRange: NEW_SERVICE });
    assert.deepEqual(cluster().currentFlags().controllerManager, { clusterCidr: NEW_POD, serviceClusterIpRange: NEW_SERVICE, allocateNodeCidrs: false, nodeCidrMaskSize: 24 });
    const nodes = await core().listNode();
    assert.ok(nodes.items.every((n) => cidrContains(OLD_POD, n.spec!.podCIDR!)), "no Node moved yet");
  });

  it("3. re-registered Nodes get their planned podCIDR by patch, only from empty to a value", async () => {
    for (const node of NODES) {
      const fresh = await reregisterNode(cluster().kubeConfig(), node.name, node.ip);
      assert.equal(fresh.spec?.podCIDR, undefined, "a re-registered Node has no podCIDR while KCM does not allocate");
      await core().patchNode(
        { name: node.name, body: { spec: { podCIDR: PLANNED[node.name], podCIDRs: [PLANNED[node.name]] } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      const patched = await core().readNode({ name: node.name });
      assert.equal(patched.spec?.podCIDR, PLANNED[node.name]);
    }
    // Immutable once set: the API refuses to move a Node's podCIDR again.
    const refused = await core().patchNode(
      { name: "worker-a", body: { spec: { podCIDR: nthSubnet(NEW_POD, 24, 9), podCIDRs: [nthSubnet(NEW_POD, 24, 9)] } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    ).then(() => undefined, (err: { code?: number; body?: unknown }) => err);
    assert.equal(refused?.code, 422, "changing a set podCIDR must be refused");
    assert.match(String(refused?.body), /podCIDR/);
    assert.equal(cluster().controllerManagerExited(), false, "KCM stayed up through the rollout");
  });

  it("4. then KCM with allocation on is healthy and gives the next Node a free subnet of the new range", async () => {
    await cluster().restartControllerManager({ clusterCidr: NEW_POD, serviceClusterIpRange: NEW_SERVICE, allocateNodeCidrs: true, nodeCidrMaskSize: 24 });
    await cluster().waitControllerManagerHealthy();
    await registerNode(cluster().kubeConfig(), { name: "worker-new", internalIP: "127.0.0.14" });
    const assigned = await waitForPodCIDR(cluster().kubeConfig(), "worker-new", 30_000);
    assert.ok(cidrContains(NEW_POD, assigned), `the new Node's ${assigned} lies in ${NEW_POD}`);
    assert.ok(!Object.values(PLANNED).includes(assigned), `${assigned} must not collide with a planned subnet`);
    const nodes = await core().listNode();
    const cidrs = nodes.items.map((n) => n.spec!.podCIDR!);
    assert.equal(new Set(cidrs).size, cidrs.length, `podCIDRs are unique: ${cidrs.join(", ")}`);
    assert.equal(cluster().controllerManagerExited(), false);
  });
});
