import { strict as assert } from "assert";
import { controlPlaneRejoinOf, controlPlaneRejoins, ControlPlaneRejoinContext } from "../../../lib/nodeMove/controlPlaneRejoin";
import { parseJoinCommand } from "../../../lib/nodeMove/joinCommand";

const CLUSTER_CONFIGURATION = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: 10.0.0.11:6443\nnetworking:\n  podSubnet: 10.244.0.0/16\n";
const context = (change: Partial<ControlPlaneRejoinContext> = {}): ControlPlaneRejoinContext => ({
  clusterConfiguration: CLUSTER_CONFIGURATION,
  kubeconfigServer: "https://10.0.0.11:6443",
  etcdEndpoints: ["https://10.0.0.11:2379", "https://10.0.0.12:2379"],
  controlPlaneNodes: 3,
  ...change,
});
const cp = (n: number, addressMoves = false) => ({ name: `cp-${n}`, addresses: [`10.0.0.1${n}`], addressMoves });
const reason = (decision: ReturnType<typeof controlPlaneRejoinOf>) => (decision.rejoin ? "joined again" : decision.reason);

describe("control-plane kubeadm-rejoin: which nodes etcd can spare", () => {
  it("joins a control-plane node of three again at its own address, with kubeadm's etcd data dir", () => {
    assert.deepEqual(controlPlaneRejoinOf(cp(2), context()), { rejoin: true, target: { advertiseAddress: "10.0.0.12", etcdDataDir: "/var/lib/etcd" } });
    const dataDir = `${CLUSTER_CONFIGURATION}etcd:\n  local:\n    dataDir: /data/etcd\n`;
    assert.deepEqual(controlPlaneRejoinOf(cp(3), context({ clusterConfiguration: dataDir })), { rejoin: true, target: { advertiseAddress: "10.0.0.13", etcdDataDir: "/data/etcd" } });
  });

  it("re-registers, saying why, where a reset could not be spared or the join could not reach what it dials", () => {
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ controlPlaneNodes: 2 }))), /has 2 control-plane node\(s\): its etcd cannot spare a member/);
    assert.match(reason(controlPlaneRejoinOf(cp(1), context({ kubeconfigServer: "https://lb.example:6443" }))), /serves the cluster's controlPlaneEndpoint 10\.0\.0\.11:6443, which kubeadm join dials/);
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ kubeconfigServer: "https://10.0.0.12:6443" }))), /kubeconfig server https:\/\/10\.0\.0\.12:6443 is on it/);
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ etcdEndpoints: ["https://10.0.0.12:2379"] }))), /every etcd endpoint of the stack/);
    assert.match(reason(controlPlaneRejoinOf(cp(2, true), context())), /its address changes in this run/);
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ clusterConfiguration: `${CLUSTER_CONFIGURATION}etcd:\n  external:\n    endpoints: [https://etcd:2379]\n` }))), /etcd is external/);
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ clusterConfiguration: `${CLUSTER_CONFIGURATION}certificatesDir: /srv/pki\n` }))), /certificatesDir is \/srv\/pki/);
    assert.match(reason(controlPlaneRejoinOf(cp(2), context({ clusterConfiguration: undefined }))), /no ClusterConfiguration/);
    assert.match(reason(controlPlaneRejoinOf({ name: "cp-2", addresses: [], addressMoves: false }, context())), /no InternalIP/);
  });

  it("splits the control-plane nodes into those joined again and those re-registered", () => {
    const { joins, reregistered } = controlPlaneRejoins([cp(1), cp(2), cp(3)], context());
    assert.deepEqual(Object.keys(joins), ["cp-2", "cp-3"]);
    assert.deepEqual(reregistered.map((r) => r.name), ["cp-1"]);
  });

  it("reads a control-plane join's certificate key as a secret", () => {
    const key = "0f".repeat(32);
    const join = parseJoinCommand(`kubeadm join 10.0.0.11:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)} --control-plane --certificate-key ${key}`);
    assert.equal(join.certificateKey?.reveal("test"), key);
    assert.equal(String(join.certificateKey), "[secret]");
    assert.equal(parseJoinCommand(`kubeadm join 10.0.0.11:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)}`).certificateKey, undefined);
  });
});
