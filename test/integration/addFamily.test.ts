// Single-stack → dual-stack (issue 17: an "add family" run) on a real control plane of the test-bed version: the
// plan moves no Service and gives each node a subnet of the added family beside its own; the control-plane phase
// puts the apiserver and KCM on the pairs and (1.33+) opens a ServiceCIDR holding both; each node is moved by the
// rollout's own API steps (drain, delete, the kubelet's re-registration, rejoin) and comes back holding both
// subnets. Every Service keeps its object and address; a Service asking for both families gets them afterwards.
import * as assert from "node:assert/strict";
import { CoreV1Api, KubeConfig, V1Service } from "@kubernetes/client-node";
import { nodeApiStepsProvider } from "../../dynamic-providers/nodeApiSteps";
import { validateConfig } from "../../lib/config/config";
import { cidrContains, familyOf } from "../../lib/net/cidr";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";
import { Plan } from "../../lib/plan/planModel";
import { kubeRest } from "../../lib/serviceMove/kubeRest";
import { listServiceCidrs } from "../../lib/serviceMove/serviceCidrs";
import { ClusterObjects } from "../../lib/preflight/clusterObjects";
import { verifyPodNetwork } from "../../lib/verify/podNetwork";
import { enterNewServiceRange, leaveOldServiceRange, servesServiceCidrs } from "../support/serviceRangePhase";
import { baseValues } from "../support/stackValues";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";
import { waitUntil } from "../testbed/processes";
import { rangeConfig } from "../support/rangeConfig";

const V4 = { service: "10.96.0.0/16", pod: "10.244.0.0/16" };
const V6 = { service: "fd00:10:96::/112", pod: "fd00:10:244::/56" };
const PAIR = { service: `${V4.service},${V6.service}`, pod: `${V4.pod},${V6.pod}` };
const NODES = [{ name: "add-cp-1", ip: "192.168.60.11", cp: true }, { name: "add-worker-1", ip: "192.168.60.21", cp: false }];
const RUN_ID = "add-ipv6";

function addFamilyValues(kubeconfig: string): Record<string, unknown> {
  return {
    ...baseValues(),
    kubeconfig,
    cni: "none",
    serviceCidr: { from: V4.service, to: [V4.service, V6.service] },
    podCidr: { from: V4.pod, to: [V4.pod, V6.pod], nodeMaskSize: { ipv4: 24, ipv6: 64 } },
    nodes: NODES.map((n) => ({ name: n.name, host: n.ip, role: n.cp ? "control-plane" : "worker" })),
  };
}

describe("single-stack → dual-stack: an add-family run on a real control plane (issue 17)", function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: V4.service, podCidr: V4.pod, nodeMaskSize: 24 });
  let kc: KubeConfig;
  let core: CoreV1Api;
  let plan: Plan;
  const servicesBefore = new Map<string, V1Service>();

  const services = async () => (await core.listServiceForAllNamespaces()).items.filter((s) => s.metadata!.namespace !== "default");
  const podNetworkFindings = async () => {
    const inventory = await discoverInventory(kc);
    const config = rangeConfig(validateConfig({ values: addFamilyValues(cluster().kubeconfigPath) } as never, { inventory }));
    return verifyPodNetwork({ config, inventory, cluster: { pods: [], calicoIpamBlocks: [], calicoBlockAffinities: [] } as unknown as ClusterObjects, targets: {} as never });
  };

  before(async () => {
    kc = cluster().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "apps" } } });
    for (const [name, policy] of [["single", "SingleStack"], ["prefer", "PreferDualStack"]]) {
      await core.createNamespacedService({ namespace: "apps", body: { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80 }], ipFamilyPolicy: policy } } });
    }
    await core.createNamespacedService({
      namespace: "kube-system",
      body: { metadata: { name: "kube-dns" }, spec: { selector: { "k8s-app": "kube-dns" }, ports: [{ port: 53, protocol: "UDP" }], clusterIP: "10.96.0.10" } },
    });
    for (const n of NODES) await registerNode(kc, { name: n.name, internalIP: n.ip, labels: n.cp ? { "node-role.kubernetes.io/control-plane": "" } : {}, waitReady: false });
    await waitUntil(async () => (await core.listNode()).items.every((n) => n.spec?.podCIDR), { timeoutMs: 30_000, what: "a podCIDR on every Node" });
    for (const s of await services()) servicesBefore.set(`${s.metadata!.namespace}/${s.metadata!.name}`, s);
    const inventory = await discoverInventory(kc);
    plan = buildPlan(validateConfig({ values: addFamilyValues(cluster().kubeconfigPath) } as never, { inventory }), inventory);
  });

  it("plans no Service move and, for each node, a subnet of the added family beside the one it keeps", async () => {
    assert.equal(plan.secondFamily?.role, "add");
    assert.deepEqual(plan.services.filter((s) => s.action === "recreate").map((s) => `${s.namespace}/${s.name}`), []);
    const live = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n.spec!.podCIDR!]));
    for (const n of plan.nodes) {
      assert.equal(n.action, "move", n.name);
      assert.equal(n.newPodCIDRs![0], live.get(n.name), `${n.name} keeps its IPv4 subnet`);
      assert.ok(cidrContains(V6.pod, n.newPodCIDRs![1]) && n.newPodCIDRs![1].endsWith("/64"), `${n.name}: ${n.newPodCIDRs}`);
    }
    // before the run verify names each node that lacks the added family
    assert.deepEqual((await podNetworkFindings()).map((f) => `${f.code} ${f.object}`).sort(), NODES.map((n) => `NODE_PODCIDR_FAMILY_MISSING Node ${n.name}`).sort());
  });

  it("converts: apiserver and KCM on the pairs, (1.33+) the ServiceCIDR expanded, each node re-registered with both subnets; every Service kept", async () => {
    // the control-plane phase: KCM's allocation off while the nodes move, the apiserver on the pair
    await cluster().restartControllerManager({ clusterCidr: PAIR.pod, serviceClusterIpRange: PAIR.service, allocateNodeCidrs: false, nodeCidrMaskSize: 24, secondNodeCidrMaskSize: 64 });
    await enterNewServiceRange(cluster(), V4.service, PAIR.service);

    // the node rollout's API steps, one node at a time; the simulated kubelet re-registers between delete and rejoin
    const kubeconfig = kc.exportConfig();
    const step = async (name: string, node: string, extra: Record<string, unknown>) =>
      (await nodeApiStepsProvider.create!({ step: name, kubeconfig, node, runId: RUN_ID, version: "1", ...extra })).outs ?? {};
    for (const n of plan.nodes) {
      const planned = n.newPodCIDRs!.join(",");
      await step("drain", n.name, { plannedPodCIDR: planned, oldPodCIDR: n.oldPodCIDR });
      assert.equal((await step("delete-node", n.name, {})).result, "deleted");
      const ip = NODES.find((x) => x.name === n.name)!.ip;
      await registerNode(kc, { name: n.name, internalIP: ip, waitReady: false });
      const rejoined = await step("rejoin", n.name, { plannedPodCIDR: planned, rejoinTimeoutSeconds: 60 });
      assert.equal(rejoined.podCIDR, planned);
      const after = await core.readNode({ name: n.name });
      assert.deepEqual(after.spec?.podCIDRs, n.newPodCIDRs, `${n.name} holds both subnets, IPv4 first`);
    }
    // allocation back on with the pair: KCM accepts every node's two subnets (it exits on a foreign one)
    await cluster().restartControllerManager({ allocateNodeCidrs: true });
    assert.equal(cluster().controllerManagerExited(), false);
    await leaveOldServiceRange(cluster(), V4.service, PAIR.service);

    const rest = await kubeRest(kc);
    try {
      if (await servesServiceCidrs(kc)) {
        assert.deepEqual((await listServiceCidrs(rest)).map((c) => [c.name, c.cidrs]), [["kubernetes", [V4.service, V6.service]]], "the default ServiceCIDR holds both families");
      }
    } finally {
      rest.close();
    }
    for (const s of await services()) {
      const key = `${s.metadata!.namespace}/${s.metadata!.name}`;
      const was = servicesBefore.get(key)!;
      assert.equal(s.metadata!.uid, was.metadata!.uid, `${key}: the same object`);
      assert.deepEqual(s.spec!.clusterIPs, was.spec!.clusterIPs, `${key}: the same addresses`);
    }
    assert.deepEqual(await podNetworkFindings(), [], "verify finds every node with both families, nothing outside the ranges");

    // afterwards a Service asking for both families gets one address of each
    const fresh = await core.createNamespacedService({ namespace: "apps", body: { metadata: { name: "both" }, spec: { selector: { app: "both" }, ports: [{ port: 80 }], ipFamilyPolicy: "RequireDualStack" } } });
    assert.deepEqual(fresh.spec!.clusterIPs!.map(familyOf), ["IPv4", "IPv6"]);
    assert.ok(cidrContains(V6.service, fresh.spec!.clusterIPs![1]));
  });
});
