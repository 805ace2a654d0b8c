// A control-plane node's own files after its address moves (issue 16): which edits, and which restarts, from what the
// node holds (real kubeadm manifests, test/fixtures/manifests v1.29, whose node is at 192.37.70.3).
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { UserError } from "../../../lib/config/errors";
import { CONTROL_PLANE_NODE_FILES, controlPlaneAddressEdits } from "../../../lib/controlPlane/controlPlaneAddressEdits";
import { markNodeAddress } from "../../../lib/controlPlane/staticPodRestartEdit";

const MANIFESTS = path.join(__dirname, "..", "..", "fixtures", "manifests");
const FROM = "192.37.70.3";
const TO = "192.37.80.3";
const kubeconfigAt = (host: string) => `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://${host}:6443\n  name: kubernetes\n`;
const KCM_MANIFEST = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
const FLAGS = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=${FROM}"\n`;

function files(change: Record<string, string | undefined> = {}): Map<string, string | undefined> {
  const m = new Map<string, string | undefined>(CONTROL_PLANE_NODE_FILES.map((p) => [p, undefined]));
  m.set("/etc/kubernetes/manifests/etcd.yaml", fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-etcd.yaml"), "utf8"));
  m.set("/etc/kubernetes/manifests/kube-apiserver.yaml", fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-kube-apiserver.yaml"), "utf8"));
  // the scheduler's manifest is left out: a node may run without one
  m.set(KCM_MANIFEST, fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-kube-controller-manager.yaml"), "utf8"));
  // admin.conf names the controlPlaneEndpoint (a DNS name here), the component kubeconfigs the node itself
  m.set("/etc/kubernetes/admin.conf", kubeconfigAt("cp.example"));
  for (const c of ["controller-manager", "scheduler", "kubelet"]) m.set(`/etc/kubernetes/${c}.conf`, kubeconfigAt(FROM));
  m.set("/var/lib/kubelet/kubeadm-flags.env", FLAGS);
  for (const [k, v] of Object.entries(change)) m.set(k, v);
  return m;
}

const r0 = (e: ReturnType<typeof controlPlaneAddressEdits>) => e.restarts[0];

describe("lib/controlPlane controlPlaneAddressEdits", () => {
  it("moves every mention of the node's address in its manifests, kubeconfigs and kubelet flags: the kubelet's files apart from the components'", () => {
    const e = controlPlaneAddressEdits("cp-2", files(), FROM, TO);
    assert.equal(e.etcd!.next, e.etcd!.current.split(FROM).join(TO));
    assert.ok(e.etcd!.changed.some((p) => p.includes("command")), e.etcd!.changed.join());
    assert.equal(e.apiserver!.next, e.apiserver!.current.split(FROM).join(TO));
    assert.deepEqual(e.kubelet.map((f) => f.path), ["/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/kubeadm-flags.env"]);
    assert.deepEqual(e.components.map((f) => f.path), ["/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf"], "admin.conf names no node address; super-admin.conf is absent");
    for (const f of [...e.kubelet, ...e.components]) assert.equal(f.next, f.current.split(FROM).join(TO), f.path);
    assert.deepEqual(e.kubelet[1].changed, [`--node-ip=${TO}`]);
    // the controller-manager names no node address in its manifest: it is marked, to restart as a new pod
    assert.deepEqual(e.restarts.map((r) => [r.component, r.path, r.next]), [["kube-controller-manager", KCM_MANIFEST, markNodeAddress(r0(e).current, KCM_MANIFEST, TO)]]);
  });

  it("gives no edit for what already names the new address (a re-run)", () => {
    const moved = new Map([...files()].map(([p, t]) => [p, t?.split(FROM).join(TO)]));
    moved.set(KCM_MANIFEST, markNodeAddress(moved.get(KCM_MANIFEST)!, KCM_MANIFEST, TO));
    assert.deepEqual(controlPlaneAddressEdits("cp-2", moved, FROM, TO), { etcd: undefined, apiserver: undefined, kubelet: [], components: [], restarts: [] });
    const onlyFlags = new Map(moved).set("/var/lib/kubelet/kubeadm-flags.env", FLAGS);
    assert.deepEqual(controlPlaneAddressEdits("cp-2", onlyFlags, FROM, TO).kubelet.map((f) => f.path), ["/var/lib/kubelet/kubeadm-flags.env"]);
  });

  it("leaves etcd out with external etcd (no etcd.yaml)", () => {
    const e = controlPlaneAddressEdits("cp-2", files({ "/etc/kubernetes/manifests/etcd.yaml": undefined }), FROM, TO);
    assert.ok(!("etcd" in e));
    assert.ok(e.apiserver);
  });

  it("refuses a node that is not a kubeadm control-plane node, or whose --node-ip names neither address", () => {
    assert.throws(() => controlPlaneAddressEdits("cp-2", files({ "/etc/kubernetes/manifests/kube-apiserver.yaml": undefined }), FROM, TO),
      (err: Error) => err instanceof UserError && /node cp-2: \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml does not exist; .* Check the node's role/.test(err.message));
    assert.throws(() => controlPlaneAddressEdits("cp-2", files({ "/var/lib/kubelet/kubeadm-flags.env": FLAGS.replace(FROM, "10.9.9.9") }), FROM, TO),
      /--node-ip is 10\.9\.9\.9, which names neither 192\.37\.70\.3 nor 192\.37\.80\.3/);
  });
});
