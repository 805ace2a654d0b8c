/**
 * The Patches and custom resources the kube-API components declare, applied FOR REAL to the test bed.
 *
 * The Pulumi kubernetes provider cannot run here, so the test does what it would: each component is built under
 * the SDK's mock monitor with its reads (ConfigMap.get) answered from the live cluster, and every declared
 * ConfigMapPatch / DaemonSetPatch / DeploymentPatch / IPPool / IPPoolPatch is sent to the real kube-apiserver
 * (of the version CIDR_MIGRATION_KUBE_VERSION picks) with server-side apply, one field manager, force (the provider's behaviour for `pulumi.com/patchForce`).
 * The system objects are first created by "kubeadm" (another field manager), as on a real cluster. Checked:
 * - only the declared fields change; keys and fields the patch does not name stay (no takeover of the object);
 * - without force the apply conflicts with kubeadm's ownership (why patchForce is set);
 * - a second build from the patched cluster declares identical inputs and re-applying changes nothing
 *   (resourceVersion stays): `pulumi up` twice is a no-op;
 * - the old Calico pool's removal (dynamic provider, through the SDK's real dynamic-provider host) refuses while
 *   the pool is enabled or any IPAM block or block affinity is left in it, and deletes it once none is.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import {
  AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, KubernetesObject, KubernetesObjectApi, PatchStrategy,
} from "@kubernetes/client-node";
import { parse, parseAllDocuments } from "yaml";
import { CalicoIPPool } from "../../components/calicoIPPool";
import { CiliumConfig } from "../../components/ciliumConfig";
import { ClusterConfig } from "../../components/clusterConfig";
import { FlannelConfig } from "../../components/flannelConfig";
import { KubeProxyConfig } from "../../components/kubeProxyConfig";
import { CalicoPoolRemoval } from "../../dynamic-providers/calicoPoolRemoval";
import { useTestCluster } from "../testbed/fixture";
import { installCalicoCrds } from "../support/calicoCrds";
import { MockGraph, RegisteredResource, captureGraph } from "../support/pulumiMocks";
import { ProviderHost, registrationOf, startProviderHost, urnOf } from "../support/providerHost";

const FIXTURES = path.join(__dirname, "..", "fixtures");
const read = (...parts: string[]) => fs.readFileSync(path.join(FIXTURES, ...parts), "utf8");
const FIELD_MANAGER = "pulumi-kubernetes-cidr-migration";
const RUN_ID = "2024-05-01";
const NEW_POD = "10.48.0.0/16";
const NEW_SERVICE = "10.112.0.0/12";
const NEW_DNS = "10.112.0.10";
const OLD_POOL = { name: "default-ipv4-ippool", cidr: "10.244.0.0/16", blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" };
const CALICO = { group: "crd.projectcalico.org", version: "v1" };

const FLANNEL_DOCS = parseAllDocuments(read("components", "kube-flannel-official-manifest-with-kube-flannel-cfg.yml")).map((d) => d.toJS());
const flannelObject = (kind: string) => FLANNEL_DOCS.find((o) => o?.kind === kind && o.metadata?.namespace === "kube-flannel");
const CILIUM_CM = parse(read("components", "cilium-config-v1.11-ipam-kubernetes-rendered.yaml"));

/** What kubeadm (and the CNI installers) put there, owned by their own field manager. */
function systemObjects(): KubernetesObject[] {
  const kubeProxyCm = parse(read("testbed", "kube-proxy-cm-trimmed-clustercidr.yaml"));
  const workload = (kind: "DaemonSet" | "Deployment", namespace: string, name: string) => ({
    apiVersion: "apps/v1",
    kind,
    metadata: { namespace, name, labels: { "k8s-app": name } },
    spec: {
      selector: { matchLabels: { "k8s-app": name } },
      template: {
        metadata: { labels: { "k8s-app": name } },
        spec: { containers: [{ name, image: `registry.k8s.io/${name}:v1.20.2`, command: [`/usr/local/bin/${name}`] }] },
      },
    },
  });
  return [
    { ...kubeProxyCm, data: { ...kubeProxyCm.data, "kubeconfig.conf": "apiVersion: v1\nkind: Config\nclusters: []\n" } },
    workload("DaemonSet", "kube-system", "kube-proxy"),
    parse(read("testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml")),
    { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "kube-system", name: "kubelet-config" }, data: { kubelet: read("testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml") } },
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "kube-flannel" } },
    flannelObject("ConfigMap"),
    flannelObject("DaemonSet"),
    { ...CILIUM_CM, data: { ...CILIUM_CM.data, ipam: "cluster-pool", "cluster-pool-ipv4-cidr": "10.244.0.0/16", "cluster-pool-ipv4-mask-size": "24" } },
    workload("Deployment", "kube-system", "cilium-operator"),
    { apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name: OLD_POOL.name }, spec: { cidr: OLD_POOL.cidr, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" } },
  ].map((o) => {
    // Server-side apply bodies carry no server-set metadata.
    const { creationTimestamp: _c, resourceVersion: _r, uid: _u, ...metadata } = o.metadata;
    return { ...o, metadata };
  });
}

async function applyAs(kc: KubeConfig, manager: string, body: KubernetesObject, force: boolean): Promise<KubernetesObject> {
  return KubernetesObjectApi.makeApiClient(kc).patch(body, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);
}

/** Live ConfigMaps as the mocks' ConfigMap.get answers them. */
async function liveConfigMaps(kc: KubeConfig): Promise<(type: string, id: string) => Record<string, unknown> | undefined> {
  const core = kc.makeApiClient(CoreV1Api);
  const objects = new Map<string, Record<string, unknown>>();
  for (const id of ["kube-system/kube-proxy", "kube-system/kubeadm-config", "kube-system/kubelet-config", "kube-flannel/kube-flannel-cfg", "kube-system/cilium-config"]) {
    const [namespace, name] = id.split("/");
    const cm = await core.readNamespacedConfigMap({ namespace, name });
    objects.set(id, { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name }, data: cm.data });
  }
  return (type, id) => (type === "kubernetes:core/v1:ConfigMap" ? objects.get(id) : undefined);
}

async function declared(kc: KubeConfig): Promise<MockGraph> {
  return captureGraph(() => {
    new KubeProxyConfig("kube-proxy", { podCidr: NEW_POD, runId: RUN_ID });
    new ClusterConfig("cluster-config", { podCidr: NEW_POD, serviceCidr: NEW_SERVICE, clusterDns: [NEW_DNS] });
    new FlannelConfig("flannel", { podCidr: NEW_POD, runId: RUN_ID });
    new CiliumConfig("cilium", { podCidr: NEW_POD, nodeMaskSize: 24, runId: RUN_ID });
    new CalicoIPPool("calico", { oldPool: OLD_POOL, newCidr: NEW_POD });
  }, { readState: await liveConfigMaps(kc) });
}

const APPLIED_TYPES = /^kubernetes:.*(Patch|:IPPool)$/;

/** A declared resource's inputs as the apply body the provider sends. */
function body(resource: RegisteredResource): KubernetesObject {
  const { apiVersion, kind, metadata, ...rest } = resource.inputs;
  assert.ok(apiVersion && kind, `${resource.name} declares no apiVersion/kind`);
  return { apiVersion, kind: kind.replace(/Patch$/, ""), metadata, ...rest } as KubernetesObject;
}

describe("kube-API components applied to the real test bed (server-side apply, force)", function () {
  const cluster = useTestCluster({ serviceCidr: "10.96.0.0/12", podCidr: "10.244.0.0/16", controllerManager: false });
  const kc = () => cluster().kubeConfig();
  let graph: MockGraph;
  const versionsAfterFirstApply = new Map<string, string>();

  before(async () => {
    await installCalicoCrds(kc());
    for (const object of systemObjects()) await applyAs(kc(), "kubeadm", object, false);
    graph = await declared(kc());
  });

  it("declares the patches and the new pool the runbook needs", () => {
    const names = graph.resources.filter((r) => APPLIED_TYPES.test(r.type)).map((r) => r.name).sort();
    assert.deepEqual(names, [
      "calico-disable-old", "calico-new", "cilium-config", "cilium-restart-operator", "cluster-config-kubeadm", "cluster-config-kubelet",
      "flannel-config", "flannel-restart", "kube-proxy-config", "kube-proxy-restart",
    ]);
  });

  it("without force, the kube-proxy patch conflicts with kubeadm's ownership of config.conf", async () => {
    const error = await applyAs(kc(), FIELD_MANAGER, body(graph.named("kube-proxy-config")), false).then(() => undefined, (e: { code?: number }) => e);
    assert.equal(error?.code, 409);
  });

  it("applies every declared object in dependency order", async () => {
    const applied = graph.resources.filter((r) => APPLIED_TYPES.test(r.type));
    const pending = [...applied];
    const done = new Set<string>();
    while (pending.length > 0) {
      const next = pending.findIndex((r) => r.dependencies.every((urn) => done.has(urn) || !applied.some((a) => a.urn === urn)));
      assert.ok(next >= 0, "the declared graph has a cycle");
      const [resource] = pending.splice(next, 1);
      const result = await applyAs(kc(), FIELD_MANAGER, body(resource), true);
      versionsAfterFirstApply.set(resource.name, result.metadata!.resourceVersion!);
      done.add(resource.urn);
    }
  });

  it("kube-proxy: clusterCIDR moved, kubeconfig.conf untouched, our manager owns only config.conf; restart annotation set", async () => {
    const cm = await kc().makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: "kube-system", name: "kube-proxy" });
    assert.equal(parse(cm.data!["config.conf"]).clusterCIDR, NEW_POD);
    assert.equal(cm.data!["kubeconfig.conf"], "apiVersion: v1\nkind: Config\nclusters: []\n");
    const ours = cm.metadata!.managedFields!.find((f) => f.manager === FIELD_MANAGER)!;
    assert.deepEqual(Object.keys((ours.fieldsV1 as Record<string, Record<string, unknown>>)["f:data"]), ["f:config.conf"]);
    const ds = await kc().makeApiClient(AppsV1Api).readNamespacedDaemonSet({ namespace: "kube-system", name: "kube-proxy" });
    assert.equal(ds.spec!.template.metadata!.annotations!["kubectl.kubernetes.io/restartedAt"], RUN_ID);
    assert.equal(ds.spec!.template.spec!.containers[0].image, "registry.k8s.io/kube-proxy:v1.20.2", "the rest of the DaemonSet stays");
  });

  it("kubeadm-config and kubelet-config carry the new ranges and DNS IP, the rest as before", async () => {
    const core = kc().makeApiClient(CoreV1Api);
    const kubeadm = parse((await core.readNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config" })).data!.ClusterConfiguration);
    const original = parse(parse(read("testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml")).data.ClusterConfiguration);
    assert.deepEqual(kubeadm, { ...original, networking: { ...original.networking, podSubnet: NEW_POD, serviceSubnet: NEW_SERVICE } });
    const kubelet = (await core.readNamespacedConfigMap({ namespace: "kube-system", name: "kubelet-config" })).data!.kubelet;
    assert.equal(kubelet, read("testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml").replace("- 10.96.0.10", `- ${NEW_DNS}`));
  });

  it("flannel and cilium: Network / pool moved, the rest kept, workloads restarted", async () => {
    const core = kc().makeApiClient(CoreV1Api);
    const apps = kc().makeApiClient(AppsV1Api);
    const flannel = await core.readNamespacedConfigMap({ namespace: "kube-flannel", name: "kube-flannel-cfg" });
    assert.deepEqual(JSON.parse(flannel.data!["net-conf.json"]), { ...JSON.parse(flannelObject("ConfigMap").data["net-conf.json"]), Network: NEW_POD });
    assert.equal(flannel.data!["cni-conf.json"], flannelObject("ConfigMap").data["cni-conf.json"]);
    const flannelDs = await apps.readNamespacedDaemonSet({ namespace: "kube-flannel", name: "kube-flannel-ds" });
    assert.equal(flannelDs.spec!.template.metadata!.annotations!["kubectl.kubernetes.io/restartedAt"], RUN_ID);
    assert.deepEqual(flannelDs.spec!.template.spec!.containers[0].args, ["--ip-masq", "--kube-subnet-mgr", "--healthz-port=8081"]);
    const cilium = await core.readNamespacedConfigMap({ namespace: "kube-system", name: "cilium-config" });
    assert.equal(cilium.data!["cluster-pool-ipv4-cidr"], `${NEW_POD} 10.244.0.0/16`);
    assert.equal(cilium.data!["cluster-pool-ipv4-mask-size"], "24");
    assert.equal(cilium.data!.tunnel, "vxlan");
    const operator = await apps.readNamespacedDeployment({ namespace: "kube-system", name: "cilium-operator" });
    assert.equal(operator.spec!.template.metadata!.annotations!["kubectl.kubernetes.io/restartedAt"], RUN_ID);
  });

  it("calico: the new pool has the old pool's settings; the old pool is disabled and otherwise unchanged", async () => {
    const api = kc().makeApiClient(CustomObjectsApi);
    const pool = (await api.getClusterCustomObject({ ...CALICO, plural: "ippools", name: "cidr-migration-10-48-0-0-16" })) as { spec: Record<string, unknown> };
    assert.deepEqual(pool.spec, { cidr: NEW_POD, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()", disabled: false });
    const old = (await api.getClusterCustomObject({ ...CALICO, plural: "ippools", name: OLD_POOL.name })) as { spec: Record<string, unknown> };
    assert.deepEqual(old.spec, { cidr: OLD_POOL.cidr, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()", disabled: true });
  });

  it("a second run declares the same inputs from the patched cluster, and re-applying changes nothing", async () => {
    const again = await declared(kc());
    for (const resource of graph.resources.filter((r) => APPLIED_TYPES.test(r.type))) {
      assert.deepEqual(again.named(resource.name).inputs, resource.inputs, `${resource.name} must be stable once applied`);
      const result = await applyAs(kc(), FIELD_MANAGER, body(again.named(resource.name)), true);
      assert.equal(result.metadata!.resourceVersion, versionsAfterFirstApply.get(resource.name), `${resource.name} changed on re-apply`);
    }
  });

  describe("CalicoPoolRemoval through the SDK's dynamic-provider host", () => {
    let host: ProviderHost;
    const urn = urnOf("pulumi-nodejs:dynamic/cidr-migration:CalicoPoolRemoval", "calico-old-check-and-delete");
    before(async () => {
      host = await startProviderHost();
    });
    after(async () => {
      await host?.stop();
    });

    async function attempt(poolName = OLD_POOL.name, kubeconfig = fs.readFileSync(cluster().kubeconfigPath, "utf8")) {
      const registration = await registrationOf(() => new CalicoPoolRemoval("calico-old-check-and-delete", { kubeconfig, poolName, poolCidr: OLD_POOL.cidr }));
      const checked = await host.check(urn, {}, registration.inputs);
      assert.deepEqual(checked.failures, []);
      return host.create(urn, checked.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs });
    }
    const custom = () => kc().makeApiClient(CustomObjectsApi);
    const block = { apiVersion: "crd.projectcalico.org/v1", kind: "IPAMBlock", metadata: { name: "10-244-3-0-26" }, spec: { cidr: "10.244.3.0/26", affinity: "host:worker-a", allocations: [null, 0], unallocated: [0], attributes: [{ handle_id: "k8s-pod-network.abc" }], strictAffinity: false } };
    const affinity = { apiVersion: "crd.projectcalico.org/v1", kind: "BlockAffinity", metadata: { name: "worker-a-10-244-3-0-26" }, spec: { cidr: "10.244.3.0/26", node: "worker-a", state: "confirmed", deleted: "false" } };

    it("refuses while an IPAM block and a block affinity are left in the old pool, naming them", async () => {
      await custom().createClusterCustomObject({ ...CALICO, plural: "ipamblocks", body: block });
      await custom().createClusterCustomObject({ ...CALICO, plural: "blockaffinities", body: affinity });
      await custom().createClusterCustomObject({ ...CALICO, plural: "ipamblocks", body: { ...block, metadata: { name: "10-48-0-0-26" }, spec: { ...block.spec, cidr: "10.48.0.0/26" } } });
      await assert.rejects(attempt(), /Calico IPPool default-ipv4-ippool \(10\.244\.0\.0\/16\) is still in use: 1 IPAM block\(s\): 10-244-3-0-26 \(10\.244\.3\.0\/26 on host:worker-a\); 1 block affinity: worker-a-10-244-3-0-26/);
      await custom().deleteClusterCustomObject({ ...CALICO, plural: "ipamblocks", name: "10-244-3-0-26" });
      await assert.rejects(attempt(), /still in use: 1 block affinity: worker-a-10-244-3-0-26 \(10\.244\.3\.0\/26 on worker-a\)/);
      await custom().getClusterCustomObject({ ...CALICO, plural: "ippools", name: OLD_POOL.name });
    });

    it("refuses a pool that is not disabled, and fails closed when the API cannot be read", async () => {
      await custom().createClusterCustomObject({ ...CALICO, plural: "ippools", body: { apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name: "still-enabled" }, spec: { cidr: OLD_POOL.cidr } } });
      await assert.rejects(attempt("still-enabled"), /Calico IPPool still-enabled \(10\.244\.0\.0\/16\) is not disabled/);
      const unreachable = fs.readFileSync(cluster().kubeconfigPath, "utf8").replace(cluster().server, "https://127.0.0.1:9");
      await assert.rejects(attempt(OLD_POOL.name, unreachable), /cannot reach the cluster at https:\/\/127\.0\.0\.1:9/);
      await custom().getClusterCustomObject({ ...CALICO, plural: "ippools", name: OLD_POOL.name });
    });

    it("deletes the old pool once nothing is left in it; a re-run finds it already absent; the new pool stays", async () => {
      await custom().deleteClusterCustomObject({ ...CALICO, plural: "blockaffinities", name: "worker-a-10-244-3-0-26" });
      const created = await attempt();
      assert.equal(created.outputs.result, "deleted");
      assert.equal(created.outputs.kubeconfig, undefined, "the kubeconfig is never an output");
      const gone = await custom().getClusterCustomObject({ ...CALICO, plural: "ippools", name: OLD_POOL.name }).then(() => false, (e: { code?: number }) => e.code === 404);
      assert.equal(gone, true);
      assert.equal((await attempt()).outputs.result, "already-absent");
      await custom().getClusterCustomObject({ ...CALICO, plural: "ippools", name: "cidr-migration-10-48-0-0-16" });
    });
  });
});
