/**
 * The pure helpers behind the issue-6 components, on real-world config texts:
 * lossless map-scalar edits (yamlMapEdit) and their users (kube-proxy clusterCIDR, kubeadm networking, flannel
 * net-conf.json), the Calico pool manifest and leftover check, Cilium's cluster-pool plan, and the kubeadm config
 * generated for re-issuing the apiserver certificate. "Lossless" is checked as: the edited text differs from the
 * original only in the edited value (a line diff of exactly the expected lines).
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse, parseAllDocuments } from "yaml";
import { ipamLeftovers } from "../../../lib/nodeMove/calicoIpam";
import { defaultNewPoolName, disabledPoolPatch, newPoolManifest } from "../../../lib/podNetwork/calicoPool";
import { planCiliumPool } from "../../../lib/podNetwork/ciliumPool";
import { UserError } from "../../../lib/config/errors";
import { readFlannelNetwork, setFlannelNetwork } from "../../../lib/podNetwork/flannelNetConf";
import { kubeadmCertConfig } from "../../../lib/controlPlane/kubeadmCertConfig";
import { readKubeadmNetworking, setKubeadmNetworking } from "../../../lib/controlPlane/kubeadmConfigEdit";
import { setKubeProxyClusterCidr } from "../../../lib/podNetwork/kubeProxyConfigEdit";
import { checkRunId, nodeBackupDir } from "../../../lib/controlPlane/nodeBackupDir";
import { YamlEditError } from "../../../lib/controlPlane/yamlCstEdit";
import { editMapScalars, readMapScalar } from "../../../lib/controlPlane/yamlMapEdit";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures");
const read = (...parts: string[]) => fs.readFileSync(path.join(FIXTURES, ...parts), "utf8");
const KUBE_PROXY_CONF: string = parse(read("testbed", "kube-proxy-cm-trimmed-clustercidr.yaml")).data["config.conf"];
const CLUSTER_CONFIGURATION: string = parse(read("testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml")).data.ClusterConfiguration;
const FLANNEL_CM = parseAllDocuments(read("components", "kube-flannel-official-manifest-with-kube-flannel-cfg.yml"))
  .map((d) => d.toJS())
  .find((o) => o?.kind === "ConfigMap" && o.metadata?.name === "kube-flannel-cfg");
const NET_CONF: string = FLANNEL_CM.data["net-conf.json"];
const CILIUM_DATA: Record<string, string> = parse(read("components", "cilium-config-v1.11-ipam-kubernetes-rendered.yaml")).data;

/** Lines of `after` that are not in `before` and vice versa (a minimal check that nothing else moved). */
function lineDiff(before: string, after: string): { removed: string[]; added: string[] } {
  const a = before.split("\n");
  const b = after.split("\n");
  assert.equal(a.length === b.length || Math.abs(a.length - b.length) <= 1, true, "line count changed by more than one");
  const removed = a.filter((line, i) => b[i] !== line);
  const added = b.filter((line, i) => a[i] !== line);
  return { removed, added };
}

describe("yamlMapEdit: lossless scalar edits in mappings", () => {
  const text = "# head comment\nkind: Thing\nnet:\n  dns: x # keep me\n  svc: \"10.96.0.0/12\"\n  # trailing comment\nz: 'q'\n";

  it("updates a value in place, keeping quote style, comments and every other byte", () => {
    const result = editMapScalars(text, "t", [{ path: ["net", "svc"], value: "10.112.0.0/12" }]);
    assert.equal(result.text, text.replace('"10.96.0.0/12"', '"10.112.0.0/12"'));
    assert.deepEqual(result.changes, [{ path: "net.svc", action: "updated", before: "10.96.0.0/12", after: "10.112.0.0/12" }]);
  });

  it("adds a missing key after the mapping's last entry, indented like its siblings, only when asked", () => {
    assert.throws(() => editMapScalars(text, "t", [{ path: ["net", "pod"], value: "10.48.0.0/16" }]), /no net\.pod to set/);
    const result = editMapScalars(text, "t", [{ path: ["net", "pod"], value: "10.48.0.0/16", createMissing: true }]);
    assert.equal(result.text, text.replace('  svc: "10.96.0.0/12"\n', '  svc: "10.96.0.0/12"\n  pod: 10.48.0.0/16\n'));
    assert.equal(readMapScalar(result.text, "t", ["net", "pod"]), "10.48.0.0/16");
  });

  it("adds a key to a text without a final newline without adding one at the end", () => {
    const result = editMapScalars("a: 1\nb: 2", "t", [{ path: ["c"], value: "3", createMissing: true }]);
    assert.equal(result.text, "a: 1\nb: 2\nc: \"3\"");
  });

  it("is a no-op (same string) when the value is already right, so a re-run changes nothing", () => {
    const result = editMapScalars(text, "t", [{ path: ["net", "dns"], value: "x" }]);
    assert.equal(result.text, text);
    assert.equal(result.changes[0].action, "unchanged");
  });

  it("quotes values that would not read back as the same string", () => {
    const result = editMapScalars("a: b\n", "t", [{ path: ["a"], value: "true" }]);
    assert.equal(result.text, 'a: "true"\n');
  });

  it("refuses nested objects, block scalars and missing parents with a message naming the key", () => {
    assert.throws(() => editMapScalars(text, "cm", [{ path: ["net"], value: "x" }]), (e: Error) => e instanceof YamlEditError && /cm: net has no scalar value/.test(e.message));
    assert.throws(() => editMapScalars("a: |\n  x\n", "cm", [{ path: ["a"], value: "y" }]), /block scalar/);
    assert.throws(() => editMapScalars(text, "cm", [{ path: ["nope", "x"], value: "y" }]), /nope is not a mapping/);
  });

  it("edits JSON (a YAML flow mapping) in place", () => {
    const json = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {"Type": "vxlan"}\n}\n';
    assert.equal(editMapScalars(json, "j", [{ path: ["Network"], value: "10.48.0.0/16" }]).text, json.replace("10.244.0.0/16", "10.48.0.0/16"));
  });
});

describe("kube-proxy clusterCIDR (real kubeadm-rendered config.conf)", () => {
  it("changes exactly the clusterCIDR line", () => {
    const edit = setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.0/16");
    assert.equal(edit.before, "10.244.0.0/16");
    assert.equal(edit.changed, true);
    assert.deepEqual(lineDiff(KUBE_PROXY_CONF, edit.text), { removed: ["clusterCIDR: 10.244.0.0/16"], added: ["clusterCIDR: 10.48.0.0/16"] });
    assert.equal(parse(edit.text).clusterCIDR, "10.48.0.0/16");
  });

  it("is idempotent", () => {
    const once = setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.0/16").text;
    const twice = setKubeProxyClusterCidr(once, "10.48.0.0/16");
    assert.equal(twice.text, once);
    assert.equal(twice.changed, false);
  });

  it("adds clusterCIDR when kubeadm left it out", () => {
    const without = KUBE_PROXY_CONF.split("\n").filter((l) => !l.startsWith("clusterCIDR:")).join("\n");
    const edit = setKubeProxyClusterCidr(without, "10.48.0.0/16");
    assert.equal(edit.before, undefined);
    assert.equal(parse(edit.text).clusterCIDR, "10.48.0.0/16");
    assert.deepEqual(parse(edit.text), { ...parse(without), clusterCIDR: "10.48.0.0/16" });
  });

  it("refuses a non-normal CIDR and a text that is not a KubeProxyConfiguration", () => {
    assert.throws(() => setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.1/16"), (e: Error) => e instanceof UserError && /clusterCIDR "10\.48\.0\.1\/16" is not a CIDR .*did you mean 10\.48\.0\.0\/16/.test(e.message));
    assert.throws(() => setKubeProxyClusterCidr(CLUSTER_CONFIGURATION, "10.48.0.0/16"), /kind is "ClusterConfiguration", not KubeProxyConfiguration/);
  });
});

describe("kubeadm-config networking (real v1beta3 ClusterConfiguration)", () => {
  it("changes exactly podSubnet and serviceSubnet", () => {
    const edit = setKubeadmNetworking(CLUSTER_CONFIGURATION, { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" });
    assert.deepEqual(edit.before, { podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" });
    assert.deepEqual(lineDiff(CLUSTER_CONFIGURATION, edit.text), {
      removed: ["  podSubnet: 10.244.0.0/16", "  serviceSubnet: 10.96.0.0/12"],
      added: ["  podSubnet: 10.48.0.0/16", "  serviceSubnet: 10.112.0.0/12"],
    });
    assert.deepEqual(readKubeadmNetworking(edit.text), { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" });
    assert.equal(setKubeadmNetworking(edit.text, { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" }).changed, false);
  });

  it("adds podSubnet under networking when the cluster was made without --pod-network-cidr", () => {
    const without = CLUSTER_CONFIGURATION.replace("  podSubnet: 10.244.0.0/16\n", "");
    const edit = setKubeadmNetworking(without, { podSubnet: "10.48.0.0/16" });
    assert.equal(parse(edit.text).networking.podSubnet, "10.48.0.0/16");
    assert.equal(parse(edit.text).networking.serviceSubnet, "10.96.0.0/12");
  });

  it("refuses another kind and an empty request", () => {
    assert.throws(() => setKubeadmNetworking(KUBE_PROXY_CONF, { podSubnet: "10.48.0.0/16" }), /not ClusterConfiguration/);
    assert.throws(() => setKubeadmNetworking(CLUSTER_CONFIGURATION, {}), /nothing to set/);
  });
});

describe("flannel net-conf.json (official kube-flannel.yml)", () => {
  it("changes only Network, byte for byte", () => {
    const edit = setFlannelNetwork(NET_CONF, "10.48.0.0/16");
    assert.equal(edit.before, "10.244.0.0/16");
    assert.equal(edit.text, NET_CONF.replace('"Network": "10.244.0.0/16"', '"Network": "10.48.0.0/16"'));
    assert.deepEqual(JSON.parse(edit.text), { ...JSON.parse(NET_CONF), Network: "10.48.0.0/16" });
    assert.equal(setFlannelNetwork(edit.text, "10.48.0.0/16").changed, false);
  });

  it("refuses invalid JSON and a config without Network", () => {
    assert.throws(() => setFlannelNetwork("{ nope", "10.48.0.0/16"), /not valid JSON/);
    assert.throws(() => readFlannelNetwork('{"IPv6Network": "fd00::/48"}'), /no "Network" string/);
  });
});

describe("Calico pools", () => {
  const oldPool = { name: "default-ipv4-ippool", cidr: "10.244.0.0/16", blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" };

  it("copies the old pool's settings into the new range", () => {
    const pool = newPoolManifest(oldPool, { cidr: "10.48.0.0/16" });
    assert.deepEqual(pool, {
      apiVersion: "crd.projectcalico.org/v1",
      kind: "IPPool",
      metadata: { name: "cidr-migration-10-48-0-0-16", labels: { "app.kubernetes.io/managed-by": "cidr-migration" } },
      spec: { cidr: "10.48.0.0/16", blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()", disabled: false },
    });
    assert.equal(defaultNewPoolName("fd00:10::/56"), "cidr-migration-fd00-10-56");
  });

  it("uses Calico's defaults for settings the old pool did not have", () => {
    const pool = newPoolManifest({ name: "p", cidr: "10.244.0.0/16" }, { cidr: "10.48.0.0/16", name: "new-pool" });
    assert.deepEqual(pool.spec, { cidr: "10.48.0.0/16", blockSize: 26, ipipMode: "Never", vxlanMode: "Never", natOutgoing: false, nodeSelector: "all()", disabled: false });
  });

  it("refuses a new range smaller than one block, another family, both encapsulations and a reused name", () => {
    assert.throws(() => newPoolManifest(oldPool, { cidr: "10.48.0.0/27" }), /smaller than one Calico block \(\/26/);
    assert.throws(() => newPoolManifest(oldPool, { cidr: "fd00::/48" }), /IPv4 .* but the new pod range fd00::\/48 is IPv6/);
    assert.throws(() => newPoolManifest({ ...oldPool, vxlanMode: "Always" }, { cidr: "10.48.0.0/16" }), /both ipipMode Always and vxlanMode Always/);
    assert.throws(() => newPoolManifest(oldPool, { cidr: "10.48.0.0/16", name: "default-ipv4-ippool" }), /is the old pool's name/);
    assert.throws(() => newPoolManifest({ ...oldPool, ipipMode: "Sometimes" }, { cidr: "10.48.0.0/16" }), /ipipMode "Sometimes" is not one of Always, CrossSubnet, Never/);
  });

  it("disables the old pool with a patch that names only spec.disabled", () => {
    assert.deepEqual(disabledPoolPatch("default-ipv4-ippool"), { apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name: "default-ipv4-ippool" }, spec: { disabled: true } });
  });

  it("counts IPAM blocks and affinities that overlap the pool, and unreadable CIDRs as leftovers", () => {
    const left = ipamLeftovers("10.244.0.0/16",
      [{ name: "10-244-3-0-26", cidr: "10.244.3.0/26" }, { name: "10-48-0-0-26", cidr: "10.48.0.0/26" }, { name: "broken", cidr: "" }],
      [{ name: "host-a-10-48-0-0-26", cidr: "10.48.0.0/26", node: "a" }, { name: "host-b-10-244-3-0-26", cidr: "10.244.3.0/26", node: "b" }]);
    assert.deepEqual(left.blocks.map((b) => b.name), ["10-244-3-0-26", "broken"]);
    assert.deepEqual(left.affinities.map((a) => a.name), ["host-b-10-244-3-0-26"]);
    assert.deepEqual(ipamLeftovers("10.244.0.0/16", [{ name: "n", cidr: "10.48.0.0/26" }], []), { blocks: [], affinities: [] });
  });
});

describe("Cilium cluster pool", () => {
  const clusterPool = { ...CILIUM_DATA, ipam: "cluster-pool", "cluster-pool-ipv4-cidr": "10.244.0.0/16", "cluster-pool-ipv4-mask-size": "24" };

  it("puts the new range first and keeps the old element (Cilium: never change existing elements)", () => {
    const plan = planCiliumPool(clusterPool, { newPodCidr: "10.48.0.0/16", nodeMaskSize: 24 });
    assert.deepEqual(plan, { ipamMode: "cluster-pool", data: { "cluster-pool-ipv4-cidr": "10.48.0.0/16 10.244.0.0/16" }, poolCidrs: ["10.48.0.0/16", "10.244.0.0/16"], changed: true });
    const again = planCiliumPool({ ...clusterPool, ...plan.data }, { newPodCidr: "10.48.0.0/16", nodeMaskSize: 24 });
    assert.deepEqual(again.data, plan.data);
    assert.equal(again.changed, false);
  });

  it("changes nothing in ipam: kubernetes mode (the real v1.11 config): Cilium follows Node.spec.podCIDR", () => {
    assert.deepEqual(planCiliumPool(CILIUM_DATA, { newPodCidr: "10.48.0.0/16", nodeMaskSize: 24 }), { ipamMode: "kubernetes", data: {}, changed: false });
  });

  it("refuses a different mask size and other IPAM modes", () => {
    assert.throws(() => planCiliumPool(clusterPool, { newPodCidr: "10.48.0.0/16", nodeMaskSize: 25 }), /cluster-pool-ipv4-mask-size is 24 but the plan uses \/25/);
    assert.throws(() => planCiliumPool({ ...CILIUM_DATA, ipam: "multi-pool" }, { newPodCidr: "10.48.0.0/16", nodeMaskSize: 24 }), /ipam "multi-pool" is not cluster-pool or kubernetes/);
  });
});

describe("kubeadm-config networking (real v1beta4 ClusterConfiguration from kubeadm 1.37, extraArgs as {name, value} lists)", () => {
  const V1BETA4 = fs.readFileSync(path.join(__dirname, "..", "..", "fixtures", "testbed", "kubeadm-clusterconfiguration-v1beta4-v1.37-extraargs.yaml"), "utf8");

  it("changes networking and the range flags in extraArgs, keeping the list form and every other argument", () => {
    const edit = setKubeadmNetworking(V1BETA4, { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" });
    assert.deepEqual(lineDiff(V1BETA4, edit.text), {
      removed: ["    value: 10.96.0.0/12", "    value: 10.244.0.0/16", "  podSubnet: 10.244.0.0/16", "  serviceSubnet: 10.96.0.0/12"],
      added: ["    value: 10.112.0.0/12", "    value: 10.48.0.0/16", "  podSubnet: 10.48.0.0/16", "  serviceSubnet: 10.112.0.0/12"],
    });
    const after = parse(edit.text);
    assert.deepEqual(after.apiServer.extraArgs, [{ name: "service-cluster-ip-range", value: "10.112.0.0/12" }, { name: "audit-log-maxage", value: "30" }]);
    assert.deepEqual(after.controllerManager.extraArgs, [
      { name: "cluster-cidr", value: "10.48.0.0/16" }, { name: "node-cidr-mask-size", value: "24" }, { name: "bind-address", value: "0.0.0.0" },
    ]);
    assert.equal(setKubeadmNetworking(edit.text, { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" }).changed, false);
  });

  it("edits a v1beta3 extraArgs mapping in place and adds no flag that was not there", () => {
    const v1beta3 = CLUSTER_CONFIGURATION.replace("controllerManager: {}", "controllerManager:\n  extraArgs:\n    cluster-cidr: 10.244.0.0/16");
    assert.notEqual(v1beta3, CLUSTER_CONFIGURATION);
    const after = parse(setKubeadmNetworking(v1beta3, { podSubnet: "10.48.0.0/16", serviceSubnet: "10.112.0.0/12" }).text);
    assert.deepEqual(after.controllerManager.extraArgs, { "cluster-cidr": "10.48.0.0/16" });
    assert.deepEqual(after.apiServer.extraArgs, { "authorization-mode": "Node,RBAC" });
  });
});

describe("kubeadm config for re-issuing the apiserver certificate", () => {
  it("is the cluster's own ClusterConfiguration with the new serviceSubnet, extra SANs and this node's endpoint", () => {
    const text = kubeadmCertConfig({
      clusterConfiguration: CLUSTER_CONFIGURATION,
      serviceSubnet: "10.112.0.0/12",
      nodeName: "cp-1",
      advertiseAddress: "192.168.1.105",
      extraSans: ["10.96.0.1"],
      certificatesDir: "/tmp/root/etc/kubernetes/pki",
    });
    const [init, cluster] = parseAllDocuments(text).map((d) => d.toJS());
    assert.deepEqual(init, {
      apiVersion: "kubeadm.k8s.io/v1beta3",
      kind: "InitConfiguration",
      localAPIEndpoint: { advertiseAddress: "192.168.1.105", bindPort: 6443 },
      nodeRegistration: { name: "cp-1" },
    });
    const original = parse(CLUSTER_CONFIGURATION);
    assert.deepEqual(cluster, {
      ...original,
      certificatesDir: "/tmp/root/etc/kubernetes/pki",
      networking: { ...original.networking, serviceSubnet: "10.112.0.0/12" },
      apiServer: { ...original.apiServer, certSANs: ["10.96.0.1"] },
    });
  });

  it("refuses a config of another kind and a bad advertise address", () => {
    const input = { clusterConfiguration: CLUSTER_CONFIGURATION, serviceSubnet: "10.112.0.0/12", nodeName: "cp-1", advertiseAddress: "192.168.1.105", certificatesDir: "/etc/kubernetes/pki" };
    assert.throws(() => kubeadmCertConfig({ ...input, clusterConfiguration: KUBE_PROXY_CONF }), /not a ClusterConfiguration/);
    assert.throws(() => kubeadmCertConfig({ ...input, advertiseAddress: "cp-1.example" }), /advertiseAddress "cp-1.example" is not an IP address/);
  });
});

describe("node backup directory", () => {
  it("is /var/lib/cidr-migration/backup/<runId>, with a checked run id", () => {
    assert.equal(nodeBackupDir("2024-05-01"), "/var/lib/cidr-migration/backup/2024-05-01");
    assert.throws(() => checkRunId("../etc"), (e: Error) => e instanceof UserError && /runId "\.\.\/etc" must be/.test(e.message));
  });
});
