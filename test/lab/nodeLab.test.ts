// The migration on real nodes (issue 14), `npm run test:lab`: each case brings up a fresh 3-node kubeadm cluster
// (containerd, kubelet, Flannel, kube-proxy, CoreDNS; `sandbox up --nodes`), starts live traffic from real pods, and
// runs `pulumi preview`, `pulumi up` and `cidr-migration verify` through the real engine as an operator does. Then it
// checks the cluster itself: every pod and node podCIDR in the new range, cni0 and flannel.1 on each node's new
// subnet, DNS at its final address, and what the prober saw. Needs root and the node builds (about 15 min cold);
// each case takes about 8 minutes. Not part of `npm test`: its builds do not fit CI's time on a cold machine.
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { cidrContains } from "../../lib/net/cidr";
import { phaseWindows, stepWindows } from "../testbed/nodes/engineTimeline";
import { buildLab, defaultSite, LAB_RANGES, labDir, labDown, LabSite } from "../testbed/nodes/labStack";
import { LabMigration, migrateLab } from "../testbed/nodes/labMigration";
import { summarizeTraffic } from "../testbed/nodes/trafficSummary";
import { inNode } from "../testbed/nodes/inNode";
import { PROBE_NAMESPACE, PROBED_SERVICES } from "../testbed/nodes/probeWorkload";

const NEW_POD_RANGE = LAB_RANGES.podCidr.to;
const DNS_FINAL_IP = "10.112.0.10";

function kubectlJsonAt(kubeconfigPath: string, args: string[]): { items: Array<Record<string, any>> } & Record<string, any> {
  const result = spawnSync(path.join(labDir(), "bin", "kubectl"), ["--kubeconfig", kubeconfigPath, ...args, "-o", "json"], { encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

const kubectlJson = (m: LabMigration, args: string[]) => kubectlJsonAt(m.lab.kubeconfigPath, args);

/** The IPv4 address of `device` inside `node`, as "a.b.c.d/len"; undefined when the node has no such device. */
function deviceAddress(node: string, device: string): string | undefined {
  if (!inNode(node, ["ip", "-o", "link", "show"]).includes(` ${device}:`)) return undefined;
  const match = /inet (\S+)/.exec(inNode(node, ["ip", "-4", "-o", "addr", "show", "dev", device]));
  assert.ok(match, `${device} on ${node} has an IPv4 address`);
  return match[1];
}

function migratedCluster(m: LabMigration): void {
  assert.equal(m.preview.exitCode, 0, `pulumi preview failed; see ${m.preview.logFile}`);
  assert.equal(m.up.exitCode, 0, `pulumi up failed; see ${m.up.logFile}`);
  assert.equal(m.verify.exitCode, 0, `cidr-migration verify failed; see ${m.verify.logFile}`);

  const nodes = kubectlJson(m, ["get", "nodes"]).items;
  assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), m.lab.nodes.map((n) => n.name).sort(), "every node came back");
  const bridged: string[] = [];
  for (const node of nodes) {
    const podCidr: string = node.spec.podCIDR;
    assert.ok(cidrContains(NEW_POD_RANGE, podCidr), `${node.metadata.name}'s podCIDR ${podCidr} is in ${NEW_POD_RANGE}`);
    assert.ok(node.status.conditions.some((c: { type: string; status: string }) => c.type === "Ready" && c.status === "True"), `${node.metadata.name} is Ready`);
    // what the CNI really put on the node: the VXLAN device in its new subnet, and the bridge's gateway there too.
    // The bridge plugin makes cni0 with the node's first pod, and the node cleanup removed the old one: a node the
    // rollout left without pods has none, and that is no leftover.
    const [cni0, flannel] = [deviceAddress(node.metadata.name, "cni0"), deviceAddress(node.metadata.name, "flannel.1")];
    assert.ok(flannel, `flannel.1 exists on ${node.metadata.name}`);
    assert.ok(cidrContains(podCidr, flannel.split("/")[0]), `flannel.1 ${flannel} on ${node.metadata.name} is in ${podCidr}`);
    if (cni0 === undefined) continue;
    assert.ok(cidrContains(podCidr, cni0.split("/")[0]), `cni0 ${cni0} on ${node.metadata.name} is in ${podCidr}`);
    bridged.push(node.metadata.name);
  }
  assert.ok(bridged.length > 0, "cni0 was checked on at least one node");
  const pods = kubectlJson(m, ["get", "pods", "--all-namespaces"]).items.filter((p) => !p.spec.hostNetwork && p.status.podIP);
  assert.ok(pods.length >= 5, `pods with their own network run (${pods.length})`);
  for (const pod of pods) assert.ok(cidrContains(NEW_POD_RANGE, pod.status.podIP), `${pod.metadata.namespace}/${pod.metadata.name} ${pod.status.podIP} is in ${NEW_POD_RANGE}`);
  const dns = kubectlJson(m, ["-n", "kube-system", "get", "service", "kube-dns"]);
  assert.equal(dns.spec.clusterIP, DNS_FINAL_IP);
}

/**
 * Every moved node at its new address only: its Node's InternalIP, its host-network pods (at least `hostNetworkPods[name]`)
 * and its own interface; then the second preview found nothing to change.
 */
function movedNodes(m: LabMigration, hostNetworkPods: Record<string, number>): void {
  for (const { name, from, to } of m.addressMoves) {
    const node = kubectlJson(m, ["get", "node", name]);
    assert.deepEqual(node.status.addresses.filter((a: { type: string }) => a.type === "InternalIP").map((a: { address: string }) => a.address), [to], name);
    const hostNetwork = kubectlJson(m, ["get", "pods", "--all-namespaces", "--field-selector", `spec.nodeName=${name}`]).items.filter((p) => p.spec.hostNetwork);
    console.log(`      ${name} ${from} → ${to}: ${hostNetwork.map((p) => `${p.metadata.name} ${p.status.podIP}`).join(", ")}`);
    assert.ok(hostNetwork.length >= hostNetworkPods[name], `the host-network pods of ${name}: ${hostNetwork.map((p) => p.metadata.name).join(", ")}`);
    for (const p of hostNetwork) assert.equal(p.status.podIP, to, `${p.metadata.namespace}/${p.metadata.name} at ${to}`);
    const addresses = inNode(name, ["ip", "-4", "-o", "addr", "show", "dev", "eth0"]);
    assert.match(addresses, new RegExp(`inet ${to.replace(/\./g, "\\.")}/24`));
    assert.doesNotMatch(addresses, new RegExp(`inet ${from.replace(/\./g, "\\.")}/`));
    // flannel tunnels from the new address, and every other node tunnels to it
    assert.equal(node.metadata.annotations["flannel.alpha.coreos.com/public-ip"], to, `${name}'s flannel public-ip`);
    assert.match(inNode(name, ["ip", "-d", "link", "show", "flannel.1"]), new RegExp(`vxlan id 1 local ${to.replace(/\./g, "\\.")} `));
    for (const other of m.lab.nodes.filter((n) => n.name !== name)) {
      const fdb = inNode(other.name, ["bridge", "fdb", "show", "dev", "flannel.1"]);
      assert.ok(fdb.includes(`dst ${to} `) && !fdb.includes(`dst ${from} `), `${other.name}'s forwarding entries for ${name}: ${fdb.trim()}`);
    }
  }
  const { traffic } = trafficOf(m);
  console.log(`      pulumi up ${(m.up.millis / 1000).toFixed(1)} s; failed lookups ${traffic.total.dns.fail}, requests by name ${traffic.total.name.fail}`);
  assert.equal(m.again?.exitCode, 0, `a second run would change something; see ${m.again?.logFile}`);
}

/** What the prober saw, per phase; printed, since the closing figures come from it whether the case passes or not. */
function trafficOf(m: LabMigration) {
  const { phases } = phaseWindows(m.events, m.lab.nodes.map((n) => n.name));
  const pods = m.records.filter((r) => r.kind === "start").length;
  const traffic = summarizeTraffic(m.records, phases);
  console.log(`      traffic: ${JSON.stringify(traffic.total)}; phases: ${phases.map((w) => `${w.name} ${Math.round((w.end - w.start) / 1000)} s`).join(", ")}`);
  for (const o of traffic.longest) console.log(`      longest ${o.probe} ${o.target}: ${o.millis} ms, ${o.failures} failed, in ${o.phases.join("+")}${o.firstError ? ` (${o.firstError})` : ""}`);
  // each outage by name or DNS, with the steps that were running when it began
  const steps = stepWindows(m.events);
  for (const o of m.records.filter((r) => r.kind === "outage" && r.probe !== "oldip")) {
    const from = o.from as number; // ms since the epoch, as the events' stamps
    const running = steps.filter((st) => st.start <= from + 1000 && st.end >= from - 1000).map((st) => st.name);
    const firstError = m.records.find((f) => f.kind === "failure" && f.seenFrom === o.seenFrom && f.probe === o.probe && f.target === o.target && (f.t as number) >= from)?.error;
    console.log(`      outage ${o.probe} ${o.target} seen from ${o.seenFrom} ${(((o.to as number) - from) / 1000).toFixed(1)} s, ${o.failures} failed (${firstError}), during ${running.join(", ") || "no step"}`);
  }
  return { phases, pods, traffic };
}

interface EtcdMember { ID: string; name: string; isLearner?: boolean }

/** etcdctl inside cp-1's etcd pod (the lab's etcd image carries it), with kubeadm's health-check client certificate. */
function etcdctl(kubeconfigPath: string, args: string[]): string {
  const pki = "/etc/kubernetes/pki/etcd";
  const result = spawnSync(path.join(labDir(), "bin", "kubectl"), [
    "--kubeconfig", kubeconfigPath, "-n", "kube-system", "exec", "etcd-cp-1", "--", "etcdctl", "--endpoints=https://127.0.0.1:2379",
    `--cacert=${pki}/ca.crt`, `--cert=${pki}/healthcheck-client.crt`, `--key=${pki}/healthcheck-client.key`, ...args,
  ], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  return result.stdout;
}

/** The etcd members, IDs in hex (JSON numbers would lose their low digits). */
function etcdMembers(kubeconfigPath: string): EtcdMember[] {
  return (JSON.parse(etcdctl(kubeconfigPath, ["member", "list", "-w", "json", "--hex"])) as { members: EtcdMember[] }).members;
}

/** No failed lookup or request by name, and the cached old ClusterIP answered, throughout, until the bridges end. */
function bridgedTraffic(m: LabMigration): void {
  const { phases, traffic } = trafficOf(m);
  assert.deepEqual([traffic.total.dns.fail, traffic.total.name.fail], [0, 0], JSON.stringify(traffic.longest));
  const bridgesEnd = phases.find((w) => w.name === "old-ip-bridges");
  assert.ok(bridgesEnd, "the old-ip-bridges step ran");
  const cachedBeforeEnd = m.records.filter((r) => r.kind === "second" && r.probe === "oldip" && (r.t as number) * 1000 < bridgesEnd.start);
  assert.ok(cachedBeforeEnd.reduce((n, r) => n + (r.ok as number), 0) > 500, "the cached address was probed throughout");
  assert.equal(cachedBeforeEnd.reduce((n, r) => n + (r.fail as number), 0), 0, JSON.stringify(traffic.longest));
}

describe("the migration on real nodes (node lab)", function () {
  this.timeout(30 * 60_000);
  // the builds (about 40 minutes on a cold machine) before any case's own 30 minutes start
  before(async function () {
    this.timeout(90 * 60_000);
    await buildLab();
  });
  after(async () => {
    // CIDR_MIGRATION_LAB_KEEP=1 leaves the last case's cluster and stack up to look at (`sandbox down --nodes` removes it)
    if (process.env.CIDR_MIGRATION_LAB_KEEP !== "1") await labDown();
  });

  describe("reregister, no bridge: the defaults, Services moved in place", () => {
    let m: LabMigration;
    const uidsBefore = new Map<string, string>();
    before(async () => {
      m = await migrateLab({
        bridge: false, strategy: "reregister",
        beforeUp: (kubeconfigPath) => {
          for (const s of kubectlJsonAt(kubeconfigPath, ["-n", PROBE_NAMESPACE, "get", "services"]).items) uidsBefore.set(s.metadata.name, s.metadata.uid);
        },
      });
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("the echo Services were moved in place: the same objects (uid) at their new ClusterIPs", () => {
      for (const name of PROBED_SERVICES) {
        const service = kubectlJson(m, ["-n", PROBE_NAMESPACE, "get", "service", name]);
        assert.equal(service.metadata.uid, uidsBefore.get(name), `${name} kept its uid`);
        assert.ok(cidrContains(LAB_RANGES.serviceCidr.to, service.spec.clusterIP), `${name} at ${service.spec.clusterIP}, in the new range`);
      }
    });

    it("live traffic: no DNS lookup and no request by name failed from the first preview to the final verify", () => {
      const { pods, traffic } = trafficOf(m);
      assert.ok(pods >= 2, "the prober ran");
      assert.ok(traffic.total.dns.ok > 1000 && traffic.total.name.ok > 500, JSON.stringify(traffic.total));
      assert.deepEqual([traffic.total.dns.fail, traffic.total.name.fail], [0, 0], JSON.stringify(traffic.longest));
    });
  });

  describe("a worker's address changed in the same run (nodeAddresses, issue 16)", () => {
    let m: LabMigration;
    before(async () => {
      m = await migrateLab({ bridge: false, strategy: "reregister", moveAddresses: ["worker-2"], previewAgain: true });
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("worker-2 is at its new address only: the Node, its host-network pods, the node's own interface; a second run changes nothing", () => {
      movedNodes(m, { "worker-2": 2 });
    });
  });

  describe("a control-plane node's and a worker's addresses changed in the same run, on three control-plane nodes (issue 16)", () => {
    const site: LabSite = { ...defaultSite(), nodes: ["cp-1", "cp-2", "cp-3", "worker-1"] };
    let m: LabMigration;
    before(async () => {
      m = await migrateLab({ site, bridge: false, strategy: "reregister", moveAddresses: ["cp-3", "worker-1"], previewAgain: true });
    });
    after(async () => {
      if (process.env.CIDR_MIGRATION_LAB_KEEP !== "1") await labDown(site);
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("cp-3 (etcd, apiserver, controller-manager, scheduler) and worker-1 are at their new addresses only; a second run changes nothing", () => {
      // etcd, the apiserver, the controller-manager, the scheduler, kube-proxy and flannel; kube-proxy and flannel
      movedNodes(m, { "cp-3": 6, "worker-1": 2 });
      const etcd = kubectlJson(m, ["-n", "kube-system", "get", "pod", "etcd-cp-3"]);
      const [{ to }] = m.addressMoves;
      assert.ok(etcd.spec.containers[0].command.includes(`--advertise-client-urls=https://${to}:2379`), "cp-3's etcd advertises its new address");
    });
  });

  describe("addresses alone, no range move: a control-plane node's and a worker's, on three control-plane nodes (issue 16)", () => {
    const site: LabSite = { ...defaultSite(), nodes: ["cp-1", "cp-2", "cp-3", "worker-1"] };
    let m: LabMigration;
    let servicesBefore: string[] = [];
    const services = (kubeconfigPath: string) => kubectlJsonAt(kubeconfigPath, ["get", "services", "--all-namespaces"]).items
      .map((s) => `${s.metadata.namespace}/${s.metadata.name} ${s.metadata.uid} ${s.spec.clusterIP}`).sort();
    before(async () => {
      m = await migrateLab({
        site, bridge: false, addressesOnly: true, moveAddresses: ["cp-3", "worker-1"], previewAgain: true,
        beforeUp: (kubeconfigPath) => (servicesBefore = services(kubeconfigPath)),
      });
    });
    after(async () => {
      if (process.env.CIDR_MIGRATION_LAB_KEEP !== "1") await labDown(site);
    });

    it("runs and verifies clean; every Service as it was (uid, ClusterIP); every pod, podCIDR and cni0/flannel.1 still in the cluster's own pod range", () => {
      assert.equal(m.preview.exitCode, 0, `pulumi preview failed; see ${m.preview.logFile}`);
      assert.equal(m.up.exitCode, 0, `pulumi up failed; see ${m.up.logFile}`);
      assert.equal(m.verify.exitCode, 0, `cidr-migration verify failed; see ${m.verify.logFile}`);
      assert.ok(servicesBefore.length >= 4, `the Services were recorded before the run: ${servicesBefore.join(", ")}`);
      assert.deepEqual(services(m.lab.kubeconfigPath), servicesBefore);
      const oldPodRange = LAB_RANGES.podCidr.from;
      const nodes = kubectlJson(m, ["get", "nodes"]).items;
      assert.deepEqual(nodes.map((n) => n.metadata.name).sort(), m.lab.nodes.map((n) => n.name).sort(), "every node came back");
      for (const node of nodes) {
        assert.ok(cidrContains(oldPodRange, node.spec.podCIDR), `${node.metadata.name}'s podCIDR ${node.spec.podCIDR} is in ${oldPodRange}`);
        const flannel = deviceAddress(node.metadata.name, "flannel.1");
        assert.ok(flannel && cidrContains(node.spec.podCIDR, flannel.split("/")[0]), `flannel.1 ${flannel} on ${node.metadata.name} is in ${node.spec.podCIDR}`);
      }
      const pods = kubectlJson(m, ["get", "pods", "--all-namespaces"]).items.filter((p) => !p.spec.hostNetwork && p.status.podIP);
      for (const pod of pods) assert.ok(cidrContains(oldPodRange, pod.status.podIP), `${pod.metadata.namespace}/${pod.metadata.name} ${pod.status.podIP} is in ${oldPodRange}`);
      // nothing of a range move ran: the first step after the snapshot is a node's drain
      const steps = m.events.flatMap((e) => (e.event.resOutputsEvent?.metadata?.urn ?? "").split("::").slice(-1));
      assert.ok(steps.includes("nodes-worker-1-rejoin") && steps.includes("control-plane-address-cp-3-etcd-peer"), steps.join(", "));
      assert.deepEqual(steps.filter((s) => /^(services|control-plane|kube-proxy|flannel|cluster-config|enable-cidr-allocation)$/.test(s)), []);
    });

    it("cp-3 and worker-1 are at their new addresses only; a second run changes nothing", () => {
      movedNodes(m, { "cp-3": 6, "worker-1": 2 });
    });
  });

  describe("kubeadm-rejoin for the workers, with the old-ClusterIP bridge", () => {
    let m: LabMigration;
    before(async () => {
      m = await migrateLab({ bridge: true, strategy: "kubeadm-rejoin" });
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("the workers were reset and joined by kubeadm; the control plane re-registered", () => {
      const steps = m.events.flatMap((e) => (e.event.resOutputsEvent?.metadata?.urn ?? "").split("::").slice(-1));
      for (const worker of m.lab.nodes.filter((n) => n.role === "worker")) assert.ok(steps.includes(`nodes-${worker.name}-kubeadm-rejoin`), worker.name);
      const cp = m.lab.nodes.find((n) => n.role === "control-plane")!;
      assert.ok(!steps.includes(`nodes-${cp.name}-kubeadm-rejoin`), "no kubeadm reset on the control plane");
    });

    it("live traffic: no failed lookup or request by name; a client holding the old ClusterIP is answered until the bridges end", () => {
      bridgedTraffic(m);
    });
  });

  describe("kubeadm-rejoin on three control-plane nodes: cp-2 and cp-3 reset and joined again as control-plane nodes", () => {
    // cp-1 serves the controlPlaneEndpoint (the lab's kubeadm init), so it re-registers; the single worker holds
    // every pod (the control-plane nodes are tainted), so its drain stops them all: no traffic goal on this site
    const site: LabSite = { ...defaultSite(), nodes: ["cp-1", "cp-2", "cp-3", "worker-1"] };
    let m: LabMigration;
    let membersBefore: EtcdMember[] = [];
    before(async () => {
      m = await migrateLab({ site, bridge: false, strategy: "kubeadm-rejoin", beforeUp: (kubeconfigPath) => (membersBefore = etcdMembers(kubeconfigPath)) });
    });
    after(async () => {
      if (process.env.CIDR_MIGRATION_LAB_KEEP !== "1") await labDown(site);
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("cp-2 and cp-3 were checked, reset and joined by kubeadm as control-plane nodes, the worker too; cp-1 re-registered; etcd has three healthy members, cp-2's and cp-3's new", () => {
      const steps = m.events.flatMap((e) => (e.event.resOutputsEvent?.metadata?.urn ?? "").split("::").slice(-1));
      for (const name of ["cp-2", "cp-3"]) {
        for (const step of ["etcd-check", "kubeadm-rejoin", "kcm-allocation-off-write"]) assert.ok(steps.includes(`nodes-${name}-${step}`), `${name}: ${step}`);
      }
      assert.ok(steps.includes("nodes-worker-1-kubeadm-rejoin"), "worker-1: kubeadm-rejoin");
      assert.ok(steps.includes("nodes-cp-1-kubelet-start") && !steps.includes("nodes-cp-1-kubeadm-rejoin"), "cp-1 re-registered");
      const after = etcdMembers(m.lab.kubeconfigPath);
      assert.deepEqual(after.map((e) => e.name).sort(), ["cp-1", "cp-2", "cp-3"]);
      const idOf = (list: EtcdMember[], name: string) => list.find((e) => e.name === name)?.ID;
      assert.equal(idOf(after, "cp-1"), idOf(membersBefore, "cp-1"), "cp-1 kept its member");
      for (const name of ["cp-2", "cp-3"]) assert.notEqual(idOf(after, name), idOf(membersBefore, name), `${name}'s member was removed and added again`);
      assert.ok(after.every((e) => !e.isLearner), "no member left a learner");
      const health = JSON.parse(etcdctl(m.lab.kubeconfigPath, ["endpoint", "health", "--cluster", "-w", "json"])) as Array<{ endpoint: string; health: boolean }>;
      assert.equal(health.filter((h) => h.health).length, 3, JSON.stringify(health));
      for (const name of ["cp-2", "cp-3"]) {
        // the join wrote the control plane from kubeadm-config: the new ranges, allocation back on after the rollout
        const kcm = kubectlJson(m, ["-n", "kube-system", "get", "pod", `kube-controller-manager-${name}`]).spec.containers[0].command as string[];
        assert.ok(kcm.includes(`--cluster-cidr=${NEW_POD_RANGE}`) && kcm.includes("--allocate-node-cidrs=true"), `${name}'s KCM: ${kcm.join(" ")}`);
        const apiserver = kubectlJson(m, ["-n", "kube-system", "get", "pod", `kube-apiserver-${name}`]).spec.containers[0].command as string[];
        assert.ok(apiserver.includes(`--service-cluster-ip-range=${LAB_RANGES.serviceCidr.to}`), `${name}'s apiserver: ${apiserver.join(" ")}`);
        assert.match(inNode(name, ["openssl", "x509", "-in", "/etc/kubernetes/pki/apiserver.crt", "-noout", "-ext", "subjectAltName"], site), /IP Address:10\.112\.0\.1\b/, `${name}'s apiserver certificate names the new kubernetes Service IP`);
      }
      const { traffic } = trafficOf(m);
      console.log(`      pulumi up ${(m.up.millis / 1000).toFixed(1)} s; failed lookups ${traffic.total.dns.fail}, requests by name ${traffic.total.name.fail}`);
    });
  });

  describe("etcd-rewrite: Services and Node podCIDRs moved in etcd while the apiservers are stopped", () => {
    let m: LabMigration;
    let before_: { services: Array<Record<string, any>>; nodes: Array<Record<string, any>> };
    before(async () => {
      m = await migrateLab({
        bridge: true,
        servicesStrategy: "etcd-rewrite",
        beforeUp: (kubeconfigPath) => {
          before_ = { services: kubectlJsonAt(kubeconfigPath, ["get", "services", "--all-namespaces"]).items, nodes: kubectlJsonAt(kubeconfigPath, ["get", "nodes"]).items };
        },
      });
    });

    it("migrates the cluster: verify clean, every pod and podCIDR new, cni0 and flannel.1 on the new subnets, DNS at its final IP", () => {
      migratedCluster(m);
    });

    it("keeps every Service's and Node's uid and creation time; no Node was deleted and no Service re-created", () => {
      const after = { services: kubectlJson(m, ["get", "services", "--all-namespaces"]).items, nodes: kubectlJson(m, ["get", "nodes"]).items };
      const key = (o: Record<string, any>) => `${o.metadata.namespace ?? ""}/${o.metadata.name}`;
      for (const kind of ["services", "nodes"] as const) {
        const now = new Map(after[kind].map((o) => [key(o), o]));
        for (const old of before_[kind]) {
          const current = now.get(key(old));
          assert.ok(current, `${kind} ${key(old)} still exists`);
          assert.deepEqual([current.metadata.uid, current.metadata.creationTimestamp], [old.metadata.uid, old.metadata.creationTimestamp], `${kind} ${key(old)} kept its identity`);
        }
      }
      const steps = m.events.flatMap((e) => (e.event.resOutputsEvent?.metadata?.urn ?? "").split("::").slice(-1));
      assert.ok(steps.includes("etcd-rewrite"), "the rewrite ran");
      assert.deepEqual(steps.filter((s) => s.endsWith("-deregister") || s === "services"), [], "no Node delete, no Service re-create");
      // the bridges have ended: no Service still answers at an old address
      for (const service of after.services) assert.equal(service.metadata.annotations?.["cidr-migration.io/old-cluster-ip-bridge"], undefined, key(service));
    });

    it("live traffic: no failed lookup or request by name; a client holding the old ClusterIP is answered until the bridges end", () => {
      bridgedTraffic(m);
    });
  });

  describe("etcd-rewrite, pulumi up killed once every apiserver stopped, then recovered as the README says", () => {
    let m: LabMigration;
    let before_: Array<Record<string, any>>;
    before(async () => {
      m = await migrateLab({
        bridge: true,
        servicesStrategy: "etcd-rewrite",
        // the last stop: no apiserver answers until the re-run's start (a kill after the rewrite itself can land
        // once the first start is already under way on the node)
        killAfter: "control-plane-stop-cp-1",
        beforeUp: (kubeconfigPath) => {
          before_ = kubectlJsonAt(kubeconfigPath, ["get", "services", "--all-namespaces"]).items;
        },
      });
    });

    it("the re-run plans from the recorded cluster, starts the apiservers on the new flags and finishes the migration", () => {
      migratedCluster(m);
      const again = fs.readFileSync(m.up.logFile, "utf8");
      assert.match(again, /a run stopped the apiservers for the etcd rewrite: planning run/);
      const after = new Map(kubectlJson(m, ["get", "services", "--all-namespaces"]).items.map((o) => [`${o.metadata.namespace}/${o.metadata.name}`, o]));
      for (const old of before_) assert.equal(after.get(`${old.metadata.namespace}/${old.metadata.name}`)?.metadata.uid, old.metadata.uid, `${old.metadata.namespace}/${old.metadata.name} kept its uid`);
    });
  });
});
