/**
 * The control plane's pure config edits on real-world texts: lossless map-scalar edits (yamlMapEdit), kubeadm-config
 * networking (v1beta3 and v1beta4), the kubeadm config generated for re-issuing the apiserver certificate, and the
 * node backup directory. "Lossless" is checked as: the edited text differs from the original only in the edited
 * value (a line diff of exactly the expected lines).
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse, parseAllDocuments } from "yaml";
import { UserError } from "../../../lib/config/errors";
import { kubeadmCertConfig } from "../../../lib/controlPlane/kubeadmCertConfig";
import { readKubeadmNetworking, setKubeadmNetworking } from "../../../lib/controlPlane/kubeadmConfigEdit";
import { checkRunId, nodeBackupDir } from "../../../lib/controlPlane/nodeBackupDir";
import { YamlEditError } from "../../../lib/controlPlane/yamlCstEdit";
import { editMapScalars, readMapScalar } from "../../../lib/controlPlane/yamlMapEdit";
import { read, KUBE_PROXY_CONF, CLUSTER_CONFIGURATION, lineDiff } from "../../support/configTexts";

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
