// Dual-stack planning (issue 17): each ClusterIP and podCIDR is planned in its own family's ranges, a Service keeps
// its own family order, and the plan report shows each family's old → new. What a dual-stack run cannot carry out yet
// is refused before any change, naming the key.
import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError } from "../../../lib/config/errors";
import { readStackFile } from "../../../lib/config/stackFile";
import { cidrContains } from "../../../lib/net/cidr";
import { Inventory, ServiceInfo } from "../../../lib/plan/inventory";
import { buildPlan } from "../../../lib/plan/plan";
import { planInconsistencies } from "../../../lib/plan/planConsistency";
import { Plan } from "../../../lib/plan/planModel";
import { renderPlan } from "../../../lib/plan/planReport";
import { serviceMovesFromPlan } from "../../../lib/serviceMove/planMoves";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "plan");
const V6 = { serviceFrom: "fd00:10:96::/112", serviceTo: "fd00:10:112::/112", podFrom: "fd00:10:244::/56", podTo: "fd00:10:48::/56" };

/** The small fixture cluster made dual-stack (IPv4 primary), on Flannel: one Service of every family shape. */
function dualInventory(): Inventory {
  const inventory = JSON.parse(readFileSync(path.join(FIXTURES, "inventory-small.json"), "utf8")) as Inventory;
  inventory.cni = { detected: "flannel", calicoPools: [], flannelNetwork: "10.244.0.0/16", flannelIpv6Network: V6.podFrom };
  inventory.kubeProxy = { clusterCIDR: `10.244.0.0/16,${V6.podFrom}`, mode: "iptables" } as Inventory["kubeProxy"];
  inventory.kubeadmConfig = { ...inventory.kubeadmConfig!, podSubnet: `10.244.0.0/16,${V6.podFrom}`, serviceSubnet: `10.96.0.0/12,${V6.serviceFrom}` };
  const svc = (name: string, ips: string[], families: string[]): ServiceInfo => ({
    namespace: "mixed", name, type: "ClusterIP", clusterIP: ips[0], clusterIPs: ips, ipFamilies: families, hasSelector: true,
  });
  inventory.services.push(
    svc("v4-single", ["10.96.7.1"], ["IPv4"]),
    svc("v6-single", ["fd00:10:96::72"], ["IPv6"]),
    svc("prefer-v4-first", ["10.96.7.3", "fd00:10:96::73"], ["IPv4", "IPv6"]),
    svc("require-v6-first", ["fd00:10:96::74", "10.96.7.4"], ["IPv6", "IPv4"]),
  );
  inventory.nodes = inventory.nodes.map((n, i) => ({ ...n, podCIDRs: [n.podCIDR!, `fd00:10:244:${i}::/64`] }));
  return inventory;
}

function dualConfig(inventory: Inventory, values: (v: Record<string, unknown>) => void = () => {}, planOnly = true) {
  const source = readStackFile(path.join(FIXTURES, "stack-small.yaml"));
  source.values.cni = "flannel";
  source.values.serviceCidr = { from: ["10.96.0.0/12", V6.serviceFrom], to: ["10.112.0.0/12", V6.serviceTo] };
  source.values.podCidr = { from: ["10.244.0.0/16", V6.podFrom], to: ["10.48.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } };
  values(source.values);
  return validateConfig(source, { inventory, planOnly });
}

const row = (plan: Plan, name: string) => plan.services.find((s) => s.namespace === "mixed" && s.name === name)!;

describe("lib/plan: dual-stack plans (issue 17)", () => {
  it("plans each family's ClusterIP in that family's new range, keeping each Service's family order and offsets", () => {
    const inventory = dualInventory();
    const plan = buildPlan(dualConfig(inventory), inventory);
    assert.deepEqual(plan.secondFamily?.serviceCidr, { from: V6.serviceFrom, to: V6.serviceTo });

    const v4 = row(plan, "v4-single");
    assert.equal(v4.action, "recreate");
    assert.equal(v4.newClusterIP, "10.112.7.1");
    assert.equal(v4.newClusterIPs, undefined, "a single-stack Service moves its one address");

    const v6 = row(plan, "v6-single");
    assert.equal(v6.action, "recreate");
    assert.equal(v6.oldClusterIP, "fd00:10:96::72");
    assert.equal(v6.newClusterIP, "fd00:10:112::72", "an IPv6-only Service moves in the IPv6 range, at its offset");
    assert.ok(v6.keepsOffset);

    const prefer = row(plan, "prefer-v4-first");
    assert.deepEqual(prefer.oldClusterIPs, ["10.96.7.3", "fd00:10:96::73"]);
    assert.deepEqual(prefer.newClusterIPs, ["10.112.7.3", "fd00:10:112::73"], "both families move at once");
    assert.equal(prefer.newClusterIP, "10.112.7.3");

    const require = row(plan, "require-v6-first");
    assert.deepEqual(require.newClusterIPs, ["fd00:10:112::74", "10.112.7.4"], "IPv6 first stays first");
    assert.equal(require.oldClusterIP, "fd00:10:96::74");
    assert.equal(require.newClusterIP, "fd00:10:112::74");

    // the moves the graph hands the Service mover: a dual-stack Service's second family rides along
    const moves = serviceMovesFromPlan(plan).moves;
    assert.deepEqual(moves["mixed/require-v6-first"], { fromIP: "fd00:10:96::74", toIP: "fd00:10:112::74", type: "ClusterIP", otherFamily: { fromIP: "10.96.7.4", toIP: "10.112.7.4" } });
    assert.deepEqual(moves["mixed/v6-single"], { fromIP: "fd00:10:96::72", toIP: "fd00:10:112::72", type: "ClusterIP" });

    // nothing outside, nothing shared, and the kube-proxy / kubeadm pairs are recognised as the old ranges
    assert.deepEqual(plan.warnings.filter((w) => /OUTSIDE|MISMATCH/.test(w.code)), []);
    assert.deepEqual(planInconsistencies(plan), []);
  });

  it("gives every node a new subnet in each family, at each family's node mask", () => {
    const inventory = dualInventory();
    const plan = buildPlan(dualConfig(inventory), inventory);
    for (const n of plan.nodes) {
      assert.equal(n.action, "move", n.name);
      assert.equal(n.newPodCIDRs?.length, 2, n.name);
      assert.equal(n.newPodCIDRs![0], n.newPodCIDR);
      assert.ok(cidrContains("10.48.0.0/16", n.newPodCIDRs![0]) && n.newPodCIDRs![0].endsWith("/24"), n.newPodCIDRs![0]);
      assert.ok(cidrContains(V6.podTo, n.newPodCIDRs![1]) && n.newPodCIDRs![1].endsWith("/64"), n.newPodCIDRs![1]);
    }
    assert.equal(new Set(plan.nodes.map((n) => n.newPodCIDRs![1])).size, plan.nodes.length, "one IPv6 subnet per node");
  });

  it("an add-family run moves no Service and keeps each node's first subnet, adding a subnet of the new family", () => {
    const inventory = dualInventory();
    inventory.services = inventory.services.filter((s) => !s.clusterIPs?.some((ip) => ip.includes(":")));
    inventory.nodes = inventory.nodes.map(({ podCIDRs: _, ...n }) => n);
    inventory.kubeProxy = { clusterCIDR: "10.244.0.0/16", mode: "iptables" } as Inventory["kubeProxy"];
    inventory.kubeadmConfig = { ...inventory.kubeadmConfig!, podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" };
    const config = dualConfig(inventory, (v) => {
      v.serviceCidr = { from: "10.96.0.0/12", to: ["10.96.0.0/12", V6.serviceTo] };
      v.podCidr = { from: "10.244.0.0/16", to: ["10.244.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } };
    });
    assert.equal(config.secondFamily?.role, "add");
    const plan = buildPlan(config, inventory);
    assert.deepEqual(plan.services.filter((s) => s.action === "recreate").map((s) => `${s.namespace}/${s.name}`), []);
    for (const n of plan.nodes) {
      assert.equal(n.newPodCIDR, n.oldPodCIDR, `${n.name} keeps its IPv4 subnet`);
      assert.ok(cidrContains(V6.podTo, n.newPodCIDRs![1]), `${n.name} gains an IPv6 subnet`);
    }
    const report = renderPlan(plan);
    assert.match(report, /Service CIDR {2}IPv4: 10\.96\.0\.0\/12 \(kept\)\n {14}IPv6: fd00:10:112::\/112 \(added\)/);
    assert.deepEqual(planInconsistencies(plan), []);
  });

  it("the report shows each family's ranges and both addresses of a dual-stack Service", () => {
    const inventory = dualInventory();
    const report = renderPlan(buildPlan(dualConfig(inventory), inventory));
    assert.match(report, /Service CIDR {2}IPv4: 10\.96\.0\.0\/12 -> 10\.112\.0\.0\/12\n {14}IPv6: fd00:10:96::\/112 -> fd00:10:112::\/112/);
    assert.match(report, /Pod CIDR {6}IPv4: 10\.244\.0\.0\/16 -> 10\.48\.0\.0\/16 \(node mask \/24\)\n {14}IPv6: fd00:10:244::\/56 -> fd00:10:48::\/56 \(node mask \/64\)/);
    assert.match(report, /mixed\/require-v6-first\s+ClusterIP\s+fd00:10:96::74, 10\.96\.7\.4\s+fd00:10:112::74, 10\.112\.7\.4\s+recreate/);
  });

  it("the consistency check catches a dual-stack row planned outside its family's range or out of order", () => {
    const inventory = dualInventory();
    const plan = buildPlan(dualConfig(inventory), inventory);
    const prefer = row(plan, "prefer-v4-first");
    prefer.newClusterIPs = ["10.112.7.3", "fd00:10:999::3"];
    assert.ok(planInconsistencies(plan).some((m) => /prefer-v4-first moves to fd00:10:999::3, outside the new range fd00:10:112::\/112/.test(m)));
    prefer.newClusterIPs = ["fd00:10:112::73", "10.112.7.3"];
    assert.ok(planInconsistencies(plan).some((m) => /prefer-v4-first lists fd00:10:96::73|changes the family/.test(m)));
  });

  it("a valid dual-stack config runs as well as plans: the same plan with or without planOnly", () => {
    const inventory = dualInventory();
    assert.deepEqual(buildPlan(dualConfig(inventory, () => {}, false), inventory), buildPlan(dualConfig(inventory), inventory));
  });

  it("refuses, naming the key, what a dual-stack run cannot carry out: the etcd rewrite, Cilium, flannel without IPv6Network, a dual-stack DNS Service, an IPv6 family added to Calico without its pool", () => {
    const refusal = (inventory: Inventory, values: (v: Record<string, unknown>) => void, key: string, pattern: RegExp) =>
      assert.throws(() => buildPlan(dualConfig(inventory, values), inventory), (e: unknown) => {
        const problems = (e as ConfigError).problems ?? [];
        return e instanceof ConfigError && problems.some((p) => p.key === `cidr-migration:${key}` && pattern.test(p.message));
      }, key);

    refusal(dualInventory(), (v) => { v.services = { strategy: "etcd-rewrite" }; }, "services.strategy", /"etcd-rewrite".*set services.strategy to "recreate"/);

    const cilium = dualInventory();
    cilium.cni = { detected: "cilium", calicoPools: [], ciliumClusterPoolCidr: "10.244.0.0/16" };
    refusal(cilium, (v) => { v.cni = "cilium"; }, "cni", /Cilium.*cluster-pool-ipv6-cidr/);

    const noV6Flannel = dualInventory();
    delete noV6Flannel.cni.flannelIpv6Network;
    refusal(noV6Flannel, () => {}, "podCidr.to", /no "IPv6Network".*"EnableIPv6": true/);

    const dualDns = dualInventory();
    const dns = dualDns.services.find((s) => s.namespace === "kube-system" && s.name === "kube-dns")!;
    Object.assign(dns, { clusterIPs: [dns.clusterIP, "fd00:10:96::a"], ipFamilies: ["IPv4", "IPv6"] });
    refusal(dualDns, () => {}, "dns.service", /holds 10\.96\.0\.10 and fd00:10:96::a.*kubectl -n kube-system patch service kube-dns.*"SingleStack"/);

    const calico = dualInventory();
    calico.cni = { detected: "calico", calicoPools: [{ name: "default-ipv4-ippool", cidr: "10.244.0.0/16", blockSize: 26 }] } as Inventory["cni"];
    calico.nodes = calico.nodes.map((n) => ({ ...n, podCIDRs: [n.podCIDR!] }));
    calico.kubeProxy = { clusterCIDR: "10.244.0.0/16", mode: "iptables" } as Inventory["kubeProxy"];
    calico.kubeadmConfig = { ...calico.kubeadmConfig!, podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" };
    calico.services = calico.services.filter((s) => s.namespace !== "mixed");
    const addV6 = (v: Record<string, unknown>) => {
      v.cni = "calico";
      v.serviceCidr = { from: "10.96.0.0/12", to: ["10.96.0.0/12", V6.serviceTo] };
      v.podCidr = { from: "10.244.0.0/16", to: ["10.244.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } };
    };
    refusal(calico, addV6, "podCidr.to", /adds IPv6 pod range fd00:10:48::\/56, but Calico has no IPv6 IPPool there.*FELIX_IPV6SUPPORT/);
    calico.cni.calicoPools.push({ name: "default-ipv6-ippool", cidr: V6.podTo, blockSize: 122 } as Inventory["cni"]["calicoPools"][number]);
    assert.equal(buildPlan(dualConfig(calico, addV6), calico).secondFamily?.role, "add", "with the IPv6 pool there, adding the family is planned");
    // moving both families: Calico must hold an IPv6 pool in the old range (or, re-run, the new)
    calico.cni.calicoPools.pop();
    refusal(calico, (v) => { v.cni = "calico"; }, "podCidr.from", /lists IPv6 pod range fd00:10:244::\/56, but Calico has no IPv6 IPPool in it/);
  });
});
