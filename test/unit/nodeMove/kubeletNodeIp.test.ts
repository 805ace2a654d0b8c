import { strict as assert } from "assert";
import { UserError } from "../../../lib/config/errors";
import { moveKubeletNodeIp, setKubeletNodeIp } from "../../../lib/nodeMove/kubeletNodeIp";

// the shape `kubeadm join` writes (its kubelet-start phase; --node-ip when nodeRegistration sets it)
const KUBEADM_WRITTEN = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=192.168.10.21 --pod-infra-container-image=registry.k8s.io/pause:3.10"\n';

describe("lib/nodeMove kubeletNodeIp: --node-ip in kubeadm-flags.env (issue 16)", () => {
  it("replaces --node-ip and nothing else; a second edit changes nothing", () => {
    const edit = setKubeletNodeIp(KUBEADM_WRITTEN, "192.168.20.21");
    assert.equal(edit.before, "192.168.10.21");
    assert.equal(edit.text, KUBEADM_WRITTEN.replace("--node-ip=192.168.10.21", "--node-ip=192.168.20.21"));
    assert.deepEqual(setKubeletNodeIp(edit.text, "192.168.20.21"), { text: edit.text, before: "192.168.20.21", changed: false });
  });

  it("adds --node-ip when kubeadm left it out; takes a dual-stack pair", () => {
    const without = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n';
    const edit = setKubeletNodeIp(without, "192.168.20.21,fd00:20::21");
    assert.equal(edit.before, undefined);
    assert.equal(edit.text, 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=192.168.20.21,fd00:20::21"\n');
  });

  it("refuses what kubeadm would not have written, saying to set the flag by hand", () => {
    const refused = (text: string, pattern: RegExp, ip = "192.168.20.21") => assert.throws(() => setKubeletNodeIp(text, ip), (e: Error) => e instanceof UserError && pattern.test(e.message));
    refused("", /no KUBELET_KUBEADM_ARGS; kubeadm writes exactly one: set --node-ip=192\.168\.20\.21 by hand/);
    refused(`${KUBEADM_WRITTEN}${KUBEADM_WRITTEN}`, /2 lines define KUBELET_KUBEADM_ARGS/);
    refused('KUBELET_KUBEADM_ARGS="--node-ip=$IP"\n', /without quotes, escapes or expansions/);
    refused('KUBELET_KUBEADM_ARGS="--node-ip 192.168.10.21"\n', /"--node-ip" is not a --name=value flag/);
    refused('KUBELET_KUBEADM_ARGS="--node-ip=1.1.1.1 --node-ip=2.2.2.2"\n', /--node-ip is set 2 times/);
    refused(KUBEADM_WRITTEN, /--node-ip "192\.168\.20" is not an IP address/, "192.168.20");
  });

  it("moveKubeletNodeIp: the moved address replaced in place (a pair keeps its other family), added when absent, unchanged once moved, refused when it names neither", () => {
    const pair = 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.10.21,fd00:10::21 --pod-infra-container-image=registry.k8s.io/pause:3.10"\n';
    const moved = moveKubeletNodeIp(pair, "192.168.10.21", "192.168.20.21");
    assert.equal(moved.text, 'KUBELET_KUBEADM_ARGS="--node-ip=192.168.20.21,fd00:10::21 --pod-infra-container-image=registry.k8s.io/pause:3.10"\n');
    assert.deepEqual(moveKubeletNodeIp(moved.text, "192.168.10.21", "192.168.20.21"), { text: moved.text, before: "192.168.20.21,fd00:10::21", changed: false });
    const without = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock"\n';
    assert.match(moveKubeletNodeIp(without, "192.168.10.21", "192.168.20.21").text, / --node-ip=192\.168\.20\.21"$/m);
    assert.throws(() => moveKubeletNodeIp('KUBELET_KUBEADM_ARGS="--node-ip=10.9.9.9"\n', "192.168.10.21", "192.168.20.21"), /--node-ip is 10\.9\.9\.9, which names neither 192\.168\.10\.21 nor 192\.168\.20\.21/);
  });
});
