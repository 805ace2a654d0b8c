/**
 * The control plane's pure config edits on real-world texts: kubeadm-config networking (v1beta3 and v1beta4), the
 * kubeadm config generated for re-issuing the apiserver certificate, and the node backup directory. "Lossless" is
 * checked as: the edited text differs from the original only in the edited value (a line diff of exactly the
 * expected lines).
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse, parseAllDocuments } from "yaml";
import { UserError } from "../../../lib/config/errors";
import { kubeadmCertConfig } from "../../../lib/controlPlane/kubeadmCertConfig";
import { readKubeadmNetworking, setKubeadmNetworking } from "../../../lib/controlPlane/kubeadmConfigEdit";
import { checkRunId, nodeBackupDir } from "../../../lib/controlPlane/nodeBackupDir";
import { read, KUBE_PROXY_CONF, CLUSTER_CONFIGURATION, lineDiff } from "../../support/configTexts";

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

  it("etcd's extra SANs (a node address change) go to its server and peer certificates; not with external etcd", () => {
    const input = { clusterConfiguration: CLUSTER_CONFIGURATION, serviceSubnet: "10.96.0.0/12", nodeName: "cp-1", advertiseAddress: "192.168.7.105", certificatesDir: "/etc/kubernetes/pki", etcdExtraSans: ["192.168.1.105"] };
    const cluster = parseAllDocuments(kubeadmCertConfig(input))[1].toJS();
    assert.deepEqual(cluster.etcd.local.serverCertSANs, ["192.168.1.105"]);
    assert.deepEqual(cluster.etcd.local.peerCertSANs, ["192.168.1.105"]);
    assert.equal(cluster.etcd.local.dataDir, parse(CLUSTER_CONFIGURATION).etcd.local.dataDir, "the rest of etcd.local kept");
    const external = CLUSTER_CONFIGURATION.replace(/etcd:\n  local:\n    dataDir: \S+\n/, "etcd:\n  external:\n    endpoints: [https://10.0.0.9:2379]\n");
    assert.notEqual(external, CLUSTER_CONFIGURATION);
    assert.deepEqual(parseAllDocuments(kubeadmCertConfig({ ...input, clusterConfiguration: external }))[1].toJS().etcd, { external: { endpoints: ["https://10.0.0.9:2379"] } });
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
