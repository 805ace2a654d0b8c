/**
 * The kube-API components under the SDK's mock monitor: KubeProxyConfig, ClusterConfig, CalicoIPPool,
 * CalicoOldPoolRemoval, FlannelConfig, CiliumConfig. Checked: every Patch/CustomResource they declare (object,
 * fields, the patchForce annotation, retainOnDelete), the live reads they compute from (ConfigMap.get with the
 * real-world ConfigMaps as state), the order (restart after config), secrets, and argument validation.
 * test/integration/componentsKube.test.ts applies these same declared inputs to the real test bed.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse, parseAllDocuments } from "yaml";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { CalicoIPPool, CalicoOldPoolRemoval } from "../../../components/calicoIPPool";
import { calicoPoolMove } from "../../../components/calicoPoolMove";
import { Plan } from "../../../lib/plan/planModel";
import { CiliumConfig } from "../../../components/ciliumConfig";
import { ClusterConfig, kubeletConfigMapName } from "../../../components/clusterConfig";
import { FlannelConfig } from "../../../components/flannelConfig";
import { KubeProxyConfig } from "../../../components/kubeProxyConfig";
import { validateConfig } from "../../../lib/config/config";
import { readStackFile } from "../../../lib/config/stackFile";
import { Inventory } from "../../../lib/plan/inventory";
import { buildPlan } from "../../../lib/plan/plan";
import { setKubeProxyClusterCidr } from "../../../lib/podNetwork/kubeProxyConfigEdit";
import { MockGraph, captureGraph, outputValue, plaintextOf } from "../../support/pulumiMocks";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures");
const read = (...parts: string[]) => fs.readFileSync(path.join(FIXTURES, ...parts), "utf8");
const KUBE_PROXY_CM = parse(read("testbed", "kube-proxy-cm-trimmed-clustercidr.yaml"));
const KUBEADM_CM = parse(read("testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml"));
const KUBELET_CONF = read("testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml");
const FLANNEL_CM = parseAllDocuments(read("components", "kube-flannel-official-manifest-with-kube-flannel-cfg.yml"))
  .map((d) => d.toJS())
  .find((o) => o?.kind === "ConfigMap" && o.metadata?.name === "kube-flannel-cfg");
const CILIUM_CM = parse(read("components", "cilium-config-v1.11-ipam-kubernetes-rendered.yaml"));
const PATCH_FORCE = { "pulumi.com/patchForce": "true" };
const CONFIG_MAP = "kubernetes:core/v1:ConfigMap";

/** The cluster as the mocks' reads see it: the real-world ConfigMaps by namespace/name. */
function liveObjects(overrides: Record<string, Record<string, unknown>> = {}) {
  const objects: Record<string, Record<string, unknown>> = {
    "kube-system/kube-proxy": { ...KUBE_PROXY_CM, data: { ...KUBE_PROXY_CM.data, "kubeconfig.conf": "apiVersion: v1\nkind: Config\n" } },
    "kube-system/kubeadm-config": KUBEADM_CM,
    "kube-system/kubelet-config": { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "kubelet-config", namespace: "kube-system" }, data: { kubelet: KUBELET_CONF } },
    "kube-flannel/kube-flannel-cfg": FLANNEL_CM,
    "kube-system/cilium-config": CILIUM_CM,
    ...overrides,
  };
  return (type: string, id: string) => (type === CONFIG_MAP ? objects[id] : undefined);
}

function assertSystemPatch(graph: MockGraph, name: string, type: string, namespace: string | undefined, object: string): Record<string, any> {
  const patch = graph.named(name);
  assert.equal(patch.type, type);
  assert.equal(patch.retainOnDelete, true, `${name} must keep the system object when the stack goes`);
  assert.deepEqual(patch.inputs.metadata, { ...(namespace ? { namespace } : {}), name: object, annotations: PATCH_FORCE });
  return patch.inputs;
}

describe("KubeProxyConfig (under mocks)", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await captureGraph(() => new KubeProxyConfig("kube-proxy", { podCidr: "10.48.0.0/16", runId: "2024-05-01" }), { readState: liveObjects() });
  });

  it("reads the live ConfigMap and patches only config.conf, with clusterCIDR changed and every other byte kept", () => {
    assert.deepEqual(graph.configMapReads, ["kube-system/kube-proxy"]);
    assert.deepEqual(graph.resources.filter((r) => r.read), [], "the read is no resource: `pulumi refresh` would always update one");
    const inputs = assertSystemPatch(graph, "kube-proxy-config", "kubernetes:core/v1:ConfigMapPatch", "kube-system", "kube-proxy");
    assert.deepEqual(Object.keys(inputs.data), ["config.conf"], "kubeconfig.conf must not be part of the patch");
    assert.equal(inputs.data["config.conf"], setKubeProxyClusterCidr(KUBE_PROXY_CM.data["config.conf"], "10.48.0.0/16").text);
    assert.equal(parse(inputs.data["config.conf"]).clusterCIDR, "10.48.0.0/16");
  });

  it("then restarts the DaemonSet by setting restartedAt to the run id", () => {
    const restart = assertSystemPatch(graph, "kube-proxy-restart", "kubernetes:apps/v1:DaemonSetPatch", "kube-system", "kube-proxy");
    assert.deepEqual(restart.spec, { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": "2024-05-01" } } } });
    assert.ok(graph.dependsOn(graph.named("kube-proxy-restart"), graph.named("kube-proxy-config")));
  });

  it("passes its own dependsOn to the config patch (and so to the restart)", async () => {
    const g = await captureGraph(() => {
      const nodes = new k8s.core.v1.ConfigMapPatch("node-rollout-done", { metadata: { name: "x", namespace: "y" } });
      new KubeProxyConfig("kp", { podCidr: "10.48.0.0/16", runId: "2024-05-01" }, { dependsOn: [nodes] });
    }, { readState: liveObjects() });
    assert.ok(g.named("kp-config").dependencies.includes(g.named("node-rollout-done").urn));
    assert.ok(g.dependsOn(g.named("kp-restart"), g.named("node-rollout-done")));
  });

  it("validates its arguments", () => {
    assert.throws(() => new KubeProxyConfig("bad", { podCidr: "10.48.0.0/33", runId: "r" }), (e: Error) => e instanceof pulumi.ResourceError && /podCidr "10\.48\.0\.0\/33" is not a CIDR/.test(e.message));
    assert.throws(() => new KubeProxyConfig("bad", { podCidr: "10.48.0.0/16", runId: "" }), /runId "" must be/);
  });
});

describe("ClusterConfig (under mocks)", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await captureGraph(() => new ClusterConfig("cluster-config", { podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", clusterDns: ["10.112.0.10"] }), { readState: liveObjects() });
  });

  it("patches kubeadm-config's ClusterConfiguration: podSubnet and serviceSubnet only", () => {
    const inputs = assertSystemPatch(graph, "cluster-config-kubeadm", "kubernetes:core/v1:ConfigMapPatch", "kube-system", "kubeadm-config");
    assert.deepEqual(Object.keys(inputs.data), ["ClusterConfiguration"]);
    const before = parse(KUBEADM_CM.data.ClusterConfiguration);
    assert.deepEqual(parse(inputs.data.ClusterConfiguration), { ...before, networking: { ...before.networking, podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" } });
  });

  it("patches kubelet-config's clusterDNS only", () => {
    const inputs = assertSystemPatch(graph, "cluster-config-kubelet", "kubernetes:core/v1:ConfigMapPatch", "kube-system", "kubelet-config");
    const text: string = inputs.data.kubelet;
    assert.equal(text, KUBELET_CONF.replace("- 10.96.0.10", "- 10.112.0.10"));
  });

  it("names the versioned kubelet ConfigMap for kubeadm before 1.23", () => {
    assert.equal(kubeletConfigMapName({ major: "1", minor: "20" }), "kubelet-config-1.20");
    assert.equal(kubeletConfigMapName({ major: "1", minor: "28+" }), "kubelet-config");
  });

  it("fails closed when a ConfigMap lacks the key it must edit", async () => {
    const broken = { ...KUBEADM_CM, data: {} };
    let component: ClusterConfig | undefined;
    const graph = await captureGraph(() => {
      component = new ClusterConfig("cc", { podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", clusterDns: ["10.112.0.10"] });
    }, { readState: liveObjects({ "kube-system/kubeadm-config": broken }) });
    await assert.rejects(outputValue(component!.clusterConfiguration), /ConfigMap kube-system\/kubeadm-config has no key "ClusterConfiguration"/);
    assert.equal(graph.resources.filter((r) => r.name === "cc-kubeadm").length, 0, "no patch may be declared from a config that could not be read");
  });

  it("validates clusterDns", () => {
    assert.throws(() => new ClusterConfig("bad", { podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", clusterDns: ["dns"] }), /clusterDns \["dns"\] must be a non-empty list of IPs/);
  });
});

describe("CalicoIPPool and CalicoOldPoolRemoval (under mocks)", () => {
  const oldPool = { name: "default-ipv4-ippool", cidr: "10.244.0.0/16", blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" };

  it("creates the new pool with the old pool's settings, then disables the old one with a patch of spec.disabled only", async () => {
    const graph = await captureGraph(() => new CalicoIPPool("calico", { oldPool, newCidr: "10.48.0.0/16" }));
    const pool = graph.named("calico-new");
    assert.equal(pool.type, "kubernetes:crd.projectcalico.org/v1:IPPool");
    assert.equal(pool.retainOnDelete, true);
    assert.deepEqual(pool.inputs.spec, { cidr: "10.48.0.0/16", blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()", disabled: false });
    assert.equal(pool.inputs.metadata.name, "cidr-migration-10-48-0-0-16");
    const disable = assertSystemPatch(graph, "calico-disable-old", "kubernetes:crd.projectcalico.org/v1:IPPoolPatch", undefined, "default-ipv4-ippool");
    assert.deepEqual(disable.spec, { disabled: true });
    assert.ok(graph.dependsOn(graph.named("calico-disable-old"), pool), "the old pool is disabled only once the new one exists");
  });

  it("removes the old pool through the fail-closed dynamic provider, with the kubeconfig as a secret", async () => {
    const graph = await captureGraph(() => new CalicoOldPoolRemoval("calico-old", { kubeconfig: "apiVersion: v1\nkind: Config\n# admin-credentials-here\n", oldPool }));
    const removal = graph.named("calico-old-check-and-delete");
    assert.equal(removal.type, "pulumi-nodejs:dynamic/cidr-migration:CalicoPoolRemoval");
    assert.equal(removal.inputs.poolName, "default-ipv4-ippool");
    assert.equal(removal.inputs.poolCidr, "10.244.0.0/16");
    assert.ok(!plaintextOf(removal.rawInputs).includes("admin-credentials-here"), "the kubeconfig must be a secret on the wire");
  });

  it("a dual-stack run (issue 17) moves one pool per family, each with its own settings, names kept apart", async () => {
    const v6Pool = { name: "default-ipv6-ippool", cidr: "fd00:10:244::/56", blockSize: 122, ipipMode: "Never", vxlanMode: "Never", natOutgoing: false, nodeSelector: "all()" };
    const inventory = { cni: { detected: "calico", calicoPools: [oldPool, v6Pool] } } as unknown as Inventory;
    const plan = {
      cni: "calico",
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      calicoPools: { management: "manifest", newPool: "cidr-migration-10-48-0-0-16", reason: "no Tigera operator Installation" },
      secondFamily: { family: "IPv6", role: "move", serviceCidr: { from: "fd00:10:96::/112", to: "fd00:10:112::/112" }, podCidr: { from: "fd00:10:244::/56", to: "fd00:10:48::/56", nodeMaskSize: 64 } },
    } as unknown as Plan;
    const graph = await captureGraph(() => {
      const provider = new k8s.Provider("cluster", { kubeconfig: "apiVersion: v1\nkind: Config\n" });
      const move = calicoPoolMove({ plan, inventory, kubeconfig: pulumi.secret("k"), provider });
      for (const half of [move.pools, move.removal, move.otherFamily?.pools, move.otherFamily?.removal]) {
        assert.equal(typeof half, "function", "each family has both halves");
        (half as (o: pulumi.ComponentResourceOptions) => pulumi.Resource)({});
      }
    });
    assert.equal(graph.named("calico-pool-new").inputs.spec.cidr, "10.48.0.0/16");
    assert.deepEqual(graph.named("calico-pool-ipv6-new").inputs.spec, { cidr: "fd00:10:48::/56", blockSize: 122, ipipMode: "Never", vxlanMode: "Never", natOutgoing: false, nodeSelector: "all()", disabled: false });
    assert.equal(graph.named("calico-pool-ipv6-disable-old").inputs.metadata.name, "default-ipv6-ippool");
    assert.deepEqual(
      graph.ofType("pulumi-nodejs:dynamic/cidr-migration:CalicoPoolRemoval").map((r) => [r.name, r.inputs.poolName, r.inputs.poolCidr]).sort(),
      [["calico-old-pool-check-and-delete", "default-ipv4-ippool", "10.244.0.0/16"], ["calico-old-pool-ipv6-check-and-delete", "default-ipv6-ippool", "fd00:10:244::/56"]],
    );
    // a re-run after one family's old pool went: only the other family is left to do
    const later = calicoPoolMove({ plan, inventory: { cni: { detected: "calico", calicoPools: [v6Pool] } } as unknown as Inventory, kubeconfig: "k", provider: undefined as never });
    assert.match(String(later.pools), /no Calico IPPool in 10\.244\.0\.0\/16 \(moved already\)/);
    assert.equal(typeof later.otherFamily?.removal, "function");
  });

  it("validates its arguments", () => {
    assert.throws(() => new CalicoIPPool("bad", { oldPool, newCidr: "10.48.0.0/27" }), /smaller than one Calico block/);
    assert.throws(() => new CalicoIPPool("bad", { oldPool: { name: "", cidr: "" }, newCidr: "10.48.0.0/16" }), /oldPool needs name and cidr/);
    assert.throws(() => new CalicoOldPoolRemoval("bad", { kubeconfig: undefined as never, oldPool }), /kubeconfig is missing/);
  });
});

describe("FlannelConfig (under mocks)", () => {
  it("patches net-conf.json's Network only, then restarts kube-flannel-ds", async () => {
    const graph = await captureGraph(() => new FlannelConfig("flannel", { podCidr: "10.48.0.0/16", runId: "2024-05-01" }), { readState: liveObjects() });
    const inputs = assertSystemPatch(graph, "flannel-config", "kubernetes:core/v1:ConfigMapPatch", "kube-flannel", "kube-flannel-cfg");
    assert.deepEqual(Object.keys(inputs.data), ["net-conf.json"]);
    assert.equal(inputs.data["net-conf.json"], FLANNEL_CM.data["net-conf.json"].replace("10.244.0.0/16", "10.48.0.0/16"));
    const restart = assertSystemPatch(graph, "flannel-restart", "kubernetes:apps/v1:DaemonSetPatch", "kube-flannel", "kube-flannel-ds");
    assert.equal(restart.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "2024-05-01");
    assert.ok(graph.dependsOn(graph.named("flannel-restart"), graph.named("flannel-config")));
  });
});

describe("CiliumConfig (under mocks)", () => {
  it("in cluster-pool mode puts the new range first, keeps the old one, then restarts the operator", async () => {
    const clusterPool = { ...CILIUM_CM, data: { ...CILIUM_CM.data, ipam: "cluster-pool", "cluster-pool-ipv4-cidr": "10.244.0.0/16", "cluster-pool-ipv4-mask-size": "24" } };
    const graph = await captureGraph(() => new CiliumConfig("cilium", { podCidr: "10.48.0.0/16", nodeMaskSize: 24, runId: "2024-05-01" }),
      { readState: liveObjects({ "kube-system/cilium-config": clusterPool }) });
    const inputs = assertSystemPatch(graph, "cilium-config", "kubernetes:core/v1:ConfigMapPatch", "kube-system", "cilium-config");
    assert.deepEqual(inputs.data, { "cluster-pool-ipv4-cidr": "10.48.0.0/16 10.244.0.0/16" });
    const restart = assertSystemPatch(graph, "cilium-restart-operator", "kubernetes:apps/v1:DeploymentPatch", "kube-system", "cilium-operator");
    assert.equal(restart.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "2024-05-01");
    assert.ok(graph.dependsOn(graph.named("cilium-restart-operator"), graph.named("cilium-config")));
  });

  it("restarts the workload the plan's cni/cilium/restart step names: the operator Deployment, which allocates from the pool list", async () => {
    const inventory = JSON.parse(read("plan", "inventory-small.json")) as Inventory;
    inventory.cni = { detected: "cilium", calicoPools: [], ciliumClusterPoolCidr: "10.244.0.0/16" };
    const source = readStackFile(path.join(FIXTURES, "plan", "stack-small.yaml"));
    const plan = buildPlan(validateConfig(source, { inventory }), inventory);
    const step = plan.phases.find((p) => p.name === "cni")!.steps.find((s) => s.id === "cni/cilium/restart")!;
    const graph = await captureGraph(() => new CiliumConfig("cilium", { podCidr: "10.48.0.0/16", nodeMaskSize: 24, runId: "2024-05-01" }), { readState: liveObjects() });
    const restart = graph.named("cilium-restart-operator");
    const kind = restart.type.replace(/^kubernetes:apps\/v1:(\w+)Patch$/, "$1");
    assert.equal(step.target, `${kind} ${restart.inputs.metadata.namespace}/${restart.inputs.metadata.name}`);
    assert.equal(step.target, "Deployment kube-system/cilium-operator");
    assert.equal(step.action, "restart-deployment");
  });

  it("in ipam: kubernetes mode (the real v1.11 config) patches no keys", async () => {
    const graph = await captureGraph(() => new CiliumConfig("cilium", { podCidr: "10.48.0.0/16", nodeMaskSize: 24, runId: "2024-05-01" }), { readState: liveObjects() });
    assert.deepEqual(graph.named("cilium-config").inputs.data, {});
  });

  it("validates its arguments", () => {
    assert.throws(() => new CiliumConfig("bad", { podCidr: "10.48.0.0/16", nodeMaskSize: 0, runId: "r" }), /nodeMaskSize 0 is not an IPv4 mask size/);
  });
});

describe("KubeProxyConfig, FlannelConfig and CiliumConfig share ConfigMapEditThenRestart (under mocks)", () => {
  // The URNs the state already holds (before the three shared one shape): a change here would make the engine
  // replace the system patches instead of updating them. The `-live` reads of earlier versions are gone from the
  // graph (the ConfigMap is read while the program runs); the engine drops a read from the state, never the object.
  const cases: Array<[string, () => unknown, string[]]> = [
    ["KubeProxyConfig", () => new KubeProxyConfig("kube-proxy", { podCidr: "10.48.0.0/16", runId: "2024-05-01" }), [
        "cidr-migration:kubeProxyConfig:KubeProxyConfig::kube-proxy",
        "cidr-migration:kubeProxyConfig:KubeProxyConfig$kubernetes:core/v1:ConfigMapPatch::kube-proxy-config",
        "cidr-migration:kubeProxyConfig:KubeProxyConfig$kubernetes:apps/v1:DaemonSetPatch::kube-proxy-restart",
      ]],
    ["FlannelConfig", () => new FlannelConfig("flannel", { podCidr: "10.48.0.0/16", runId: "2024-05-01" }), [
        "cidr-migration:flannelConfig:FlannelConfig::flannel",
        "cidr-migration:flannelConfig:FlannelConfig$kubernetes:core/v1:ConfigMapPatch::flannel-config",
        "cidr-migration:flannelConfig:FlannelConfig$kubernetes:apps/v1:DaemonSetPatch::flannel-restart",
      ]],
    ["CiliumConfig", () => new CiliumConfig("cilium", { podCidr: "10.48.0.0/16", nodeMaskSize: 24, runId: "2024-05-01" }), [
        "cidr-migration:ciliumConfig:CiliumConfig::cilium",
        "cidr-migration:ciliumConfig:CiliumConfig$kubernetes:core/v1:ConfigMapPatch::cilium-config",
        "cidr-migration:ciliumConfig:CiliumConfig$kubernetes:apps/v1:DeploymentPatch::cilium-restart-operator",
      ]],
  ];
  for (const [component, build, expected] of cases) {
    it(`${component}: the component, its config patch and its restart keep their URNs`, async () => {
      const graph = await captureGraph(build, { readState: liveObjects() });
      assert.deepEqual(graph.resources.map((r) => r.urn.replace("urn:pulumi:test::cidr-migration::", "")), expected);
    });
  }
});
