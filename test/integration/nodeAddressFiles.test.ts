// A control-plane node's own files after its address change (issue 16): the static-pod manifests and kubeconfigs
// this test-bed version's real kubeadm writes for the old address, edited by moveNodeAddressInYaml, read the same
// as what the same kubeadm writes for the new address; and every byte but the moved addresses stays.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { moveNodeAddressInYaml } from "../../lib/controlPlane/nodeAddressFileEdit";
import { tempDir } from "../support/tempDirs";
import { kubeadmControlPlane } from "../testbed/kubeadmControlPlane";

const MANIFESTS = ["etcd.yaml", "kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"];
const KUBECONFIGS = ["admin.conf", "controller-manager.conf", "scheduler.conf", "kubelet.conf"];
const PHASES = [["etcd", "local"], ["kubeconfig", "all"]];

for (const [from, to] of [["192.168.1.105", "192.168.7.105"], ["fd00:1::105", "fd00:7::105"]]) {
  describe(`node address change: a control-plane node's manifests and kubeconfigs moved ${from} → ${to}, against real kubeadm (issue 16)`, function () {
    this.timeout(120_000);
    let before = "";
    let after = "";
    const read = (root: string, file: string) => fs.readFileSync(path.join(root, "etc/kubernetes", file), "utf8");

    it("kubeadm writes both nodes", () => {
      before = tempDir("node-address-before");
      after = tempDir("node-address-after");
      const opts = { nodeName: "cp-1", serviceSubnet: from.includes(":") ? "fd00:10:96::/112" : "10.96.0.0/12", podSubnet: from.includes(":") ? "fd00:10:244::/56" : "10.244.0.0/16", morePhases: PHASES };
      kubeadmControlPlane(before, { ...opts, advertiseAddress: from });
      kubeadmControlPlane(after, { ...opts, advertiseAddress: to });
      for (const m of ["etcd.yaml", "kube-apiserver.yaml"]) assert.ok(read(before, `manifests/${m}`).includes(from), `${m} names the old address`);
    });

    it("each static-pod manifest edited reads as kubeadm's for the new address; only the lines naming the address differ", () => {
      for (const m of MANIFESTS) {
        const original = read(before, `manifests/${m}`);
        const edited = moveNodeAddressInYaml(original, m, from, to);
        assert.deepEqual(parse(edited.text), parse(read(after, `manifests/${m}`)), m);
        const lines = (t: string) => t.split("\n");
        const differing = lines(original).filter((line, i) => line !== lines(edited.text)[i]);
        assert.equal(differing.length, edited.changed.length, `${m}: one line per value changed (${edited.changed.join(", ")})`);
        assert.ok(differing.every((line) => line.includes(from)), `${m}: only lines naming ${from} changed`);
        assert.equal(moveNodeAddressInYaml(edited.text, m, from, to).changed.length, 0, `${m}: a second edit finds nothing`);
      }
      const changed = (m: string) => moveNodeAddressInYaml(read(before, `manifests/${m}`), m, from, to).changed;
      assert.ok(changed("etcd.yaml").some((p) => p.startsWith("metadata.annotations")), "etcd's advertise-client-urls annotation moves");
      assert.ok(changed("etcd.yaml").some((p) => p.startsWith("spec.containers[0].command")), "etcd's URLs move");
      assert.ok(changed("kube-apiserver.yaml").some((p) => p.startsWith("spec.containers[0].command")), "--advertise-address moves");
      assert.ok(changed("kube-apiserver.yaml").some((p) => p.includes("Probe")), "the probes' host moves");
    });

    it("each kubeconfig's server moves (its credentials are this node's own and stay)", () => {
      for (const k of KUBECONFIGS) {
        const original = read(before, k);
        const edited = moveNodeAddressInYaml(original, k, from, to);
        const server = (t: string) => (parse(t) as { clusters: Array<{ cluster: { server: string } }> }).clusters[0].cluster.server;
        assert.equal(server(edited.text), server(read(after, k)), k);
        if (server(original).includes(from)) assert.deepEqual(edited.changed, ["clusters[0].cluster.server"], k);
        const { clusters: _a, ...rest } = parse(edited.text);
        const { clusters: _b, ...originalRest } = parse(original);
        assert.deepEqual(rest, originalRest, `${k}: users and contexts untouched`);
      }
    });
  });
}
