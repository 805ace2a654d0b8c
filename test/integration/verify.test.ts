// `cidr-migration verify` against a real control plane (etcd + kube-apiserver + kube-controller-manager v1.20.2 on
// loopback): a migrated-looking cluster passes; each leftover, seeded alone, fails with exactly its finding; and a
// cluster moved by hand from the old ranges fails halfway with the full list, then passes once the move is finished.
import { CoreV1Api, CustomObjectsApi, KubeConfig, V1Pod } from "@kubernetes/client-node";
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { discoverInventory } from "../../lib/plan/discovery";
import { Finding, FindingReport, sortFindings } from "../../lib/report/findings";
import { buildPlan } from "../../lib/plan/plan";
import { runVerify } from "../../lib/verify";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { registerNode, waitForPodCIDR } from "../testbed/kubelet";
import { waitFor } from "../testbed/processes";
import { minorNumber } from "../testbed/kubeVersion";
import { enterNewServiceRange, leaveOldServiceRange } from "../support/serviceRangePhase";
import {
  controlPlaneMirrorPods,
  createCalicoObject,
  createRunningPod,
  deleteCalicoObject,
  installCalicoCrds,
  kubeadmConfigMap,
  kubeletConfigMap,
  KUBELET_CONFIG_NAME,
  kubeProxyConfigMap,
  migrationConfig,
  NEW_POD_CIDR,
  NEW_SERVICE_CIDR,
  NODES,
  OLD_POD_CIDR,
  OLD_SERVICE_CIDR,
  runCli,
  seedKubeadmShape,
  stackValues,
  writeStackFile,
} from "./preflightSeed";

const brief = (f: Finding) => (f.path === undefined ? { code: f.code, object: f.object } : { code: f.code, object: f.object, path: f.path });
const NOW = { gracePeriodSeconds: 0 };
/** 1.33+: verify also checks the ServiceCIDR and IPAddress objects. */
const SERVES_SERVICE_CIDR = minorNumber() >= 33;
const ignoreNotFound = (err: { code?: number }) => {
  if (err.code !== 404) throw err;
};

/** Calico's view of a node: its block in the pool and the block's affinity. */
async function seedCalico(kc: KubeConfig, pool: string, blocks: { node: string; cidr: string }[]): Promise<void> {
  await createCalicoObject(kc, "IPPool", pool === NEW_POD_CIDR ? "new-ipv4-ippool" : "default-ipv4-ippool", { cidr: pool, blockSize: 26, ipipMode: "Always", natOutgoing: true });
  for (const b of blocks) {
    const name = b.cidr.replace(/[./]/g, "-");
    await createCalicoObject(kc, "IPAMBlock", name, { cidr: b.cidr, affinity: `host:${b.node}` });
    await createCalicoObject(kc, "BlockAffinity", `${b.node}-${name}`, { cidr: b.cidr, node: b.node, state: "confirmed" });
  }
}


describe("verify against a real control plane", function () {
  describe("a migrated-looking cluster", () => {
    const cluster = useTestCluster({ serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR });
    let kc: KubeConfig;
    let core: CoreV1Api;
    let ns: string;
    let work: string;
    const cleanups: Array<() => Promise<unknown>> = [];

    before(async function () {
      this.timeout(120_000);
      kc = cluster().kubeConfig();
      core = kc.makeApiClient(CoreV1Api);
      work = fs.mkdtempSync(path.join(os.tmpdir(), "verify-it-"));
      await seedKubeadmShape(kc, { serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR, dnsIP: "10.112.0.10" });
      await installCalicoCrds(kc);
      await seedCalico(kc, NEW_POD_CIDR, [{ node: "cp-1", cidr: "10.48.0.0/26" }, { node: "worker-1", cidr: "10.48.1.0/26" }]);
      ns = await freshNamespace(kc, "apps");
      await createRunningPod(kc, ns, { metadata: { name: "web-1" }, spec: { nodeName: "worker-1", containers: [{ name: "web", image: "nginx" }] } }, "10.48.1.5");
    });
    afterEach(async function () {
      this.timeout(60_000);
      for (const undo of cleanups.splice(0).reverse()) await undo();
    });
    after(() => fs.rmSync(work, { recursive: true, force: true }));

    const findings = async () => (await runVerify({ config: migrationConfig(stackValues(cluster(), work)), kubeConfig: kc })).findings.map(brief);

    it("passes: exit 0 and no findings, from the CLI", async () => {
      const stack = writeStackFile(work, "migrated", stackValues(cluster(), work));
      const json = await runCli(["verify", "--config", stack, "--json"]);
      assert.strictEqual(json.code, 0, json.stdout + json.stderr);
      assert.deepStrictEqual(JSON.parse(json.stdout), { command: "verify", exitCode: 0, summary: { blocker: 0, warning: 0, info: 0 }, findings: [] });
      const table = await runCli(["verify", "--config", stack]);
      assert.strictEqual(table.stdout, "verify: 0 blockers, 0 warnings, 0 info: clean (exit 0)\n");
    });

    it("a Pod still on an old IP", async () => {
      await createRunningPod(kc, ns, { metadata: { name: "stale" }, spec: { nodeName: "worker-1", containers: [{ name: "web", image: "nginx" }] } }, "10.244.1.9");
      cleanups.push(() => core.deleteNamespacedPod({ namespace: ns, name: "stale", ...NOW }));
      assert.deepStrictEqual(await findings(), [{ code: "POD_IP_IN_OLD_RANGE", object: `Pod ${ns}/stale`, path: "status.podIPs[0].ip" }]);
    });

    it("a Node still holding an old podCIDR", async () => {
      await core.createNode({ body: { metadata: { name: "worker-old" }, spec: { podCIDR: "10.244.5.0/24", podCIDRs: ["10.244.5.0/24"] } } });
      cleanups.push(() => core.deleteNode({ name: "worker-old" }));
      assert.deepStrictEqual(await findings(), [{ code: "NODE_PODCIDR_IN_OLD_RANGE", object: "Node worker-old", path: "spec.podCIDRs[0]" }]);
    });

    it("Calico: the old pool, a block and its affinity", async () => {
      await seedCalico(kc, OLD_POD_CIDR, [{ node: "worker-1", cidr: "10.244.1.0/26" }]);
      cleanups.push(
        () => deleteCalicoObject(kc, "IPPool", "default-ipv4-ippool"),
        () => deleteCalicoObject(kc, "IPAMBlock", "10-244-1-0-26"),
        () => deleteCalicoObject(kc, "BlockAffinity", "worker-1-10-244-1-0-26"),
      );
      assert.deepStrictEqual(await findings(), [
        { code: "CALICO_AFFINITY_IN_OLD_RANGE", object: "BlockAffinity worker-1-10-244-1-0-26", path: "spec.cidr" },
        { code: "CALICO_BLOCK_IN_OLD_RANGE", object: "IPAMBlock 10-244-1-0-26", path: "spec.cidr" },
        { code: "CALICO_POOL_IN_OLD_RANGE", object: "IPPool default-ipv4-ippool", path: "spec.cidr" },
      ]);
    });

    it("kube-proxy clusterCIDR, kubeadm-config and kubelet-config clusterDNS still old", async () => {
      const replace = async (body: { metadata: { name: string }; data: Record<string, string> }, original: typeof body) => {
        await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: body.metadata.name, body });
        cleanups.push(() => core.replaceNamespacedConfigMap({ namespace: "kube-system", name: original.metadata.name, body: original }));
      };
      await replace(kubeProxyConfigMap(OLD_POD_CIDR), kubeProxyConfigMap(NEW_POD_CIDR));
      await replace(kubeadmConfigMap({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR }), kubeadmConfigMap({ serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR }));
      await replace(kubeletConfigMap("10.96.0.10"), kubeletConfigMap("10.112.0.10"));
      assert.deepStrictEqual(await findings(), [
        { code: "KUBEADM_POD_SUBNET_OLD", object: "ConfigMap kube-system/kubeadm-config", path: 'data["ClusterConfiguration"] networking.podSubnet' },
        { code: "KUBEADM_SERVICE_SUBNET_OLD", object: "ConfigMap kube-system/kubeadm-config", path: 'data["ClusterConfiguration"] networking.serviceSubnet' },
        { code: "KUBELET_CLUSTER_DNS_OLD", object: `ConfigMap kube-system/${KUBELET_CONFIG_NAME}`, path: 'data["kubelet"] clusterDNS[0]' },
        { code: "KUBE_PROXY_CLUSTER_CIDR_OLD", object: "ConfigMap kube-system/kube-proxy", path: 'data["config.conf"] clusterCIDR' },
      ]);
    });

    it("a control-plane static pod still running with the old --cluster-cidr", async () => {
      const [, fresh] = controlPlaneMirrorPods(NODES[0], { serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR });
      const [, stale] = controlPlaneMirrorPods(NODES[0], { serviceCidr: NEW_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
      await core.deleteNamespacedPod({ namespace: "kube-system", name: fresh.metadata!.name!, ...NOW });
      await core.createNamespacedPod({ namespace: "kube-system", body: stale });
      cleanups.push(async () => {
        await core.deleteNamespacedPod({ namespace: "kube-system", name: stale.metadata!.name!, ...NOW });
        await core.createNamespacedPod({ namespace: "kube-system", body: fresh });
      });
      assert.deepStrictEqual(await findings(), [{ code: "CONTROL_PLANE_FLAG_OLD", object: "Pod kube-system/kube-controller-manager-cp-1", path: "--cluster-cidr" }]);
    });

    it("the DNS Service at another address than the reviewed plan's, and missing", async () => {
      const plan = path.join(work, "plan.json");
      // The reviewed plan as `cidr-migration plan --json` wrote it, with the DNS Service planned elsewhere.
      const values = stackValues(cluster(), work);
      const reviewed = buildPlan(migrationConfig(values), await discoverInventory(kc));
      fs.writeFileSync(plan, JSON.stringify({ ...reviewed, dns: { ...reviewed.dns, newClusterIP: "10.112.0.53" } }));
      const stack = writeStackFile(work, "migrated", values);
      const moved = await runCli(["verify", "--config", stack, "--plan", plan, "--json"]);
      assert.strictEqual(moved.code, 1, moved.stderr);
      const report = JSON.parse(moved.stdout) as FindingReport;
      assert.deepStrictEqual(report.findings.map(brief), [
        { code: "DNS_SERVICE_NOT_AT_PLANNED_IP", object: "Service kube-system/kube-dns", path: "spec.clusterIP" },
        { code: "KUBELET_CLUSTER_DNS_MISMATCH", object: `ConfigMap kube-system/${KUBELET_CONFIG_NAME}`, path: 'data["kubelet"] clusterDNS' },
      ]);
      assert.strictEqual(report.findings[0].message, `ClusterIP is 10.112.0.10, but the plan file ${plan} puts it at 10.112.0.53; kubelets resolve through that address`);

      const dns = await core.readNamespacedService({ namespace: "kube-system", name: "kube-dns" });
      await core.deleteNamespacedService({ namespace: "kube-system", name: "kube-dns" });
      cleanups.push(() => core.createNamespacedService({ namespace: "kube-system", body: { metadata: { name: "kube-dns", labels: dns.metadata!.labels }, spec: { clusterIP: dns.spec!.clusterIP, selector: dns.spec!.selector, ports: dns.spec!.ports } } }));
      assert.deepStrictEqual(await findings(), [{ code: "DNS_SERVICE_MISSING", object: "Service kube-system/kube-dns" }]);
      const invalid = await runCli(["verify", "--config", stack, "--plan", path.join(work, "no-plan.json")]);
      assert.strictEqual(invalid.code, 2);
      assert.match(invalid.stderr, /^cidr-migration: --plan .*no-plan\.json: cannot read the file \(ENOENT\); check the path\n$/);
      fs.writeFileSync(path.join(work, "partial.json"), JSON.stringify({ dns: { newClusterIP: "10.112.0.53" } }));
      const partial = await runCli(["verify", "--config", stack, "--plan", path.join(work, "partial.json")]);
      assert.strictEqual(partial.code, 2);
      assert.match(partial.stderr, /^cidr-migration: .*partial\.json: not a plan \(no serviceCidr, podCidr, services, nodes, phases, estimate\); write it with: cidr-migration plan --stack NAME --json > /);
    });
  });

  describe("a cluster moved by hand from the old ranges", () => {
    const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
    let kc: KubeConfig;
    let core: CoreV1Api;
    let ns: string;
    let work: string;
    let stack: string;
    let planFile: string;
    let plannedDns: string;
    const webPod = (ip: string): [V1Pod, string] => [{ metadata: { name: "web-1", labels: { app: "web" } }, spec: { nodeName: "worker-1", containers: [{ name: "web", image: "nginx" }] } }, ip];

    before(async function () {
      this.timeout(120_000);
      kc = cluster().kubeConfig();
      core = kc.makeApiClient(CoreV1Api);
      work = fs.mkdtempSync(path.join(os.tmpdir(), "verify-moved-"));
      await seedKubeadmShape(kc, { serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, dnsIP: "10.96.0.10" });
      await installCalicoCrds(kc);
      const nodes = await core.listNode();
      await seedCalico(kc, OLD_POD_CIDR, nodes.items.map((n) => ({ node: n.metadata!.name!, cidr: n.spec!.podCIDR!.replace("/24", "/26") })));
      ns = await freshNamespace(kc, "apps");
      await core.createNamespacedService({ namespace: ns, body: { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } } });
      await createRunningPod(kc, ns, ...webPod("10.244.1.5"));
      const values = stackValues(cluster(), work);
      stack = writeStackFile(work, "prod", values);
      // the plan an operator reviews before the run
      const plan = buildPlan(migrationConfig(values), await discoverInventory(kc));
      plannedDns = plan.dns.newClusterIP;
      planFile = path.join(work, "plan.json");
      fs.writeFileSync(planFile, JSON.stringify(plan));
    });
    after(() => fs.rmSync(work, { recursive: true, force: true }));

    describe("halfway: only the control plane runs on the new ranges", () => {
      before(async function () {
        this.timeout(180_000);
        await enterNewServiceRange(cluster(), OLD_SERVICE_CIDR, NEW_SERVICE_CIDR);
        await cluster().restartControllerManager({ clusterCidr: NEW_POD_CIDR, serviceClusterIpRange: NEW_SERVICE_CIDR, allocateNodeCidrs: false });
        await cluster().waitControllerManagerHealthy();
      });

      it("verify exits 1 and lists every leftover", async () => {
        const result = await runCli(["verify", "--config", stack, "--plan", planFile, "--json"]);
        assert.strictEqual(result.code, 1, result.stderr);
        const report = JSON.parse(result.stdout) as FindingReport;
        const nodeBlocks = (await core.listNode()).items.map((n) => n.spec!.podCIDR!.replace("/24", "/26").replace(/[./]/g, "-")).sort();
        const web = await core.readNamespacedService({ namespace: ns, name: "web" });
        // 1.33+: the old default ServiceCIDR is retired but still holds the addresses of the Services not moved yet
        const serviceCidrLeftovers = SERVES_SERVICE_CIDR ? [
          { code: "DEFAULT_SERVICE_CIDR_NOT_NEW_RANGE", object: "ServiceCIDR kubernetes", path: "spec.cidrs" },
          ...["10.96.0.1", "10.96.0.10", web.spec!.clusterIP!].map((ip) => ({ code: "IPADDRESS_IN_OLD_RANGE", object: `IPAddress ${ip}` })),
        ] : [];
        const ordered = (list: Array<{ code: string; object: string; path?: string }>) =>
          sortFindings(list.map((f) => ({ ...f, severity: "blocker" as const, message: "", action: "" }))).map(brief);
        assert.deepStrictEqual(report.findings.map(brief), ordered([
          ...serviceCidrLeftovers,
          { code: "CALICO_AFFINITY_IN_OLD_RANGE", object: `BlockAffinity cp-1-${nodeBlocks[0]}`, path: "spec.cidr" },
          { code: "CALICO_AFFINITY_IN_OLD_RANGE", object: `BlockAffinity worker-1-${nodeBlocks[1]}`, path: "spec.cidr" },
          { code: "CALICO_BLOCK_IN_OLD_RANGE", object: `IPAMBlock ${nodeBlocks[0]}`, path: "spec.cidr" },
          { code: "CALICO_BLOCK_IN_OLD_RANGE", object: `IPAMBlock ${nodeBlocks[1]}`, path: "spec.cidr" },
          { code: "CALICO_POOL_IN_OLD_RANGE", object: "IPPool default-ipv4-ippool", path: "spec.cidr" },
          { code: "CONTROL_PLANE_FLAG_OLD", object: "Pod kube-system/kube-apiserver-cp-1", path: "--service-cluster-ip-range" },
          { code: "CONTROL_PLANE_FLAG_OLD", object: "Pod kube-system/kube-controller-manager-cp-1", path: "--cluster-cidr" },
          { code: "CONTROL_PLANE_FLAG_OLD", object: "Pod kube-system/kube-controller-manager-cp-1", path: "--service-cluster-ip-range" },
          { code: "DNS_SERVICE_NOT_AT_PLANNED_IP", object: "Service kube-system/kube-dns", path: "spec.clusterIP" },
          { code: "KUBEADM_POD_SUBNET_OLD", object: "ConfigMap kube-system/kubeadm-config", path: 'data["ClusterConfiguration"] networking.podSubnet' },
          { code: "KUBEADM_SERVICE_SUBNET_OLD", object: "ConfigMap kube-system/kubeadm-config", path: 'data["ClusterConfiguration"] networking.serviceSubnet' },
          { code: "KUBELET_CLUSTER_DNS_OLD", object: `ConfigMap kube-system/${KUBELET_CONFIG_NAME}`, path: 'data["kubelet"] clusterDNS[0]' },
          { code: "KUBERNETES_SERVICE_NOT_AT_NEW_FIRST_IP", object: "Service default/kubernetes", path: "spec.clusterIP" },
          { code: "KUBE_PROXY_CLUSTER_CIDR_OLD", object: "ConfigMap kube-system/kube-proxy", path: 'data["config.conf"] clusterCIDR' },
          { code: "NODE_PODCIDR_IN_OLD_RANGE", object: "Node cp-1", path: "spec.podCIDRs[0]" },
          { code: "NODE_PODCIDR_IN_OLD_RANGE", object: "Node worker-1", path: "spec.podCIDRs[0]" },
          { code: "POD_IP_IN_OLD_RANGE", object: `Pod ${ns}/web-1`, path: "status.podIPs[0].ip" },
          { code: "SERVICE_IN_OLD_RANGE", object: `Service ${ns}/web`, path: "spec.clusterIPs[0]" },
          { code: "SERVICE_IN_OLD_RANGE", object: "Service default/kubernetes", path: "spec.clusterIPs[0]" },
          { code: "SERVICE_IN_OLD_RANGE", object: "Service kube-system/kube-dns", path: "spec.clusterIPs[0]" },
        ]));
        assert.ok(report.findings.every((f) => f.severity === "blocker"));
        assert.match(report.findings.find((f) => f.object === `Service ${ns}/web`)!.message, new RegExp(`^ClusterIP ${web.spec!.clusterIP!.replace(/\./g, "\\.")} is still in the old Service range 10\\.96\\.0\\.0/12$`));
      });
    });

    describe("after the rest of the move", () => {
      before(async function () {
        this.timeout(180_000);
        // Services: re-created in the new range; the DNS Service at its planned address; kubernetes by the apiserver
        await core.deleteNamespacedService({ namespace: ns, name: "web" });
        await core.createNamespacedService({ namespace: ns, body: { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } } });
        await core.deleteNamespacedService({ namespace: "kube-system", name: "kube-dns" });
        await core.createNamespacedService({ namespace: "kube-system", body: { metadata: { name: "kube-dns", labels: { "k8s-app": "kube-dns" } }, spec: { clusterIP: plannedDns, selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }] } } });
        await core.deleteNamespacedService({ namespace: "default", name: "kubernetes" });
        await waitFor("the kubernetes Service re-created by the apiserver", async () => {
          const svc = await core.readNamespacedService({ namespace: "default", name: "kubernetes" }).catch(() => undefined);
          return svc?.spec?.clusterIP === "10.112.0.1" ? true : undefined;
        });
        await leaveOldServiceRange(cluster(), OLD_SERVICE_CIDR, NEW_SERVICE_CIDR);
        // cluster config
        await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kube-proxy", body: kubeProxyConfigMap(NEW_POD_CIDR) });
        await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config", body: kubeadmConfigMap({ serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR }) });
        await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: KUBELET_CONFIG_NAME, body: kubeletConfigMap(plannedDns) });
        // nodes leave and re-register; KCM with allocation on hands out subnets of the new range
        for (const n of NODES) await core.deleteNode({ name: n.name });
        await waitFor("nodes gone", async () => ((await core.listNode()).items.length === 0 ? true : undefined));
        await cluster().restartControllerManager({ allocateNodeCidrs: true });
        await cluster().waitControllerManagerHealthy();
        for (const n of NODES) {
          await registerNode(kc, { name: n.name, internalIP: n.internalIP, labels: n.controlPlane ? { "node-role.kubernetes.io/master": "" } : {} });
          await waitForPodCIDR(kc, n.name, 30_000);
        }
        // static pods with the new flags, pods re-created on the new range, Calico's new pool and blocks
        for (const body of controlPlaneMirrorPods(NODES[0], { serviceCidr: NEW_SERVICE_CIDR, podCidr: NEW_POD_CIDR })) {
          await core.deleteNamespacedPod({ namespace: "kube-system", name: body.metadata!.name!, ...NOW }).catch(ignoreNotFound);
          await waitFor(`${body.metadata!.name} gone`, async () => ((await core.readNamespacedPod({ namespace: "kube-system", name: body.metadata!.name! }).catch(() => undefined)) ? undefined : true));
          await core.createNamespacedPod({ namespace: "kube-system", body });
        }
        await core.deleteNamespacedPod({ namespace: ns, name: "web-1", ...NOW }).catch(ignoreNotFound);
        await waitFor("web-1 gone", async () => ((await core.readNamespacedPod({ namespace: ns, name: "web-1" }).catch(() => undefined)) ? undefined : true));
        await createRunningPod(kc, ns, ...webPod("10.48.1.5"));
        const custom = kc.makeApiClient(CustomObjectsApi);
        for (const plural of ["ipamblocks", "blockaffinities", "ippools"]) {
          const list = (await custom.listClusterCustomObject({ group: "crd.projectcalico.org", version: "v1", plural })) as { items: { metadata: { name: string } }[] };
          for (const o of list.items) await custom.deleteClusterCustomObject({ group: "crd.projectcalico.org", version: "v1", plural, name: o.metadata.name });
        }
        const nodes = await core.listNode();
        await seedCalico(kc, NEW_POD_CIDR, nodes.items.map((n) => ({ node: n.metadata!.name!, cidr: n.spec!.podCIDR!.replace("/24", "/26") })));
      });

      it("verify exits 0 with no findings", async () => {
        const result = await runCli(["verify", "--config", stack, "--plan", planFile]);
        assert.strictEqual(result.code, 0, result.stdout + result.stderr);
        assert.strictEqual(result.stdout, "verify: 0 blockers, 0 warnings, 0 info: clean (exit 0)\n");
      });
    });
  });
});
