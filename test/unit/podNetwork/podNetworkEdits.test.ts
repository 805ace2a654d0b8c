/**
 * The pod network's pure config edits on real-world texts: kube-proxy clusterCIDR, flannel net-conf.json, the
 * Calico pool manifest and leftover check, and Cilium's cluster-pool plan. "Lossless" is checked as: the edited
 * text differs from the original only in the edited value (a line diff of exactly the expected lines).
 */
import { strict as assert } from "assert";
import { parse } from "yaml";
import { ipamLeftovers } from "../../../lib/nodeMove/calicoIpam";
import { defaultNewPoolName, disabledPoolPatch, newPoolManifest } from "../../../lib/podNetwork/calicoPool";
import { planCiliumPool } from "../../../lib/podNetwork/ciliumPool";
import { UserError } from "../../../lib/config/errors";
import { readFlannelNetwork, setFlannelNetwork } from "../../../lib/podNetwork/flannelNetConf";
import { flannelTransitionNetwork } from "../../../lib/plan/phases";
import { setKubeProxyClusterCidr } from "../../../lib/podNetwork/kubeProxyConfigEdit";
import { KUBE_PROXY_CONF, CLUSTER_CONFIGURATION, NET_CONF, CILIUM_DATA, lineDiff } from "../../support/configTexts";

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

  it("a dual-stack pair is written comma-separated, primary first; two ranges of one family are refused (issue 17)", () => {
    const edit = setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.0/16,fd00:10:48::/56");
    assert.deepEqual(lineDiff(KUBE_PROXY_CONF, edit.text), { removed: ["clusterCIDR: 10.244.0.0/16"], added: ["clusterCIDR: 10.48.0.0/16,fd00:10:48::/56"] });
    assert.equal(parse(edit.text).clusterCIDR, "10.48.0.0/16,fd00:10:48::/56");
    assert.throws(() => setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.0/16,10.49.0.0/16"), (e: Error) => e instanceof UserError && /neither one range nor a dual-stack pair/.test(e.message));
  });

  it("refuses a non-normal CIDR and a text that is not a KubeProxyConfiguration", () => {
    assert.throws(() => setKubeProxyClusterCidr(KUBE_PROXY_CONF, "10.48.0.1/16"), (e: Error) => e instanceof UserError && /clusterCIDR "10\.48\.0\.1\/16" is not a CIDR .*did you mean 10\.48\.0\.0\/16/.test(e.message));
    assert.throws(() => setKubeProxyClusterCidr(CLUSTER_CONFIGURATION, "10.48.0.0/16"), /kind is "ClusterConfiguration", not KubeProxyConfiguration/);
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

  it("a dual-stack pair: Network and IPv6Network, byte for byte; a config without IPv6Network is refused naming what to set (issue 17)", () => {
    const dual = NET_CONF.replace('"Network": "10.244.0.0/16",', '"Network": "10.244.0.0/16",\n      "EnableIPv6": true,\n      "IPv6Network": "fd00:10:244::/56",');
    assert.equal(JSON.parse(dual).IPv6Network, "fd00:10:244::/56", "the fixture holds both families");
    const edit = setFlannelNetwork(dual, "10.48.0.0/16,fd00:10:48::/56");
    assert.equal(edit.text, dual.replace('"10.244.0.0/16"', '"10.48.0.0/16"').replace('"fd00:10:244::/56"', '"fd00:10:48::/56"'));
    assert.throws(() => setFlannelNetwork(NET_CONF, "10.48.0.0/16,fd00:10:48::/56"), (e: Error) => e instanceof UserError && /no "IPv6Network" for fd00:10:48::\/56.*EnableIPv6 and IPv6Network/.test(e.message));
    assert.throws(() => setFlannelNetwork(NET_CONF, "fd00:10:48::/56"), /no IPv4 range/);
  });

  it("the transition Network covers old and new per family; a family the run adds is its new range alone", () => {
    assert.equal(flannelTransitionNetwork({ from: "10.244.0.0/16", to: "10.48.0.0/16" }), "10.0.0.0/8");
    assert.equal(flannelTransitionNetwork({ from: "10.244.0.0/16,fd00:10:244::/56", to: "10.48.0.0/16,fd00:10:48::/56" }), "10.0.0.0/8,fd00:10::/38");
    assert.equal(flannelTransitionNetwork({ from: "10.244.0.0/16", to: "10.244.0.0/16,fd00:10:48::/56" }), "10.244.0.0/16,fd00:10:48::/56");
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
