// The test bed itself, against real processes: etcd, kube-apiserver and
// kube-controller-manager v1.20.2 on loopback. These tests also pin down the
// control-plane behaviour the migration relies on (or must avoid).
import { AppsV1Api, CoreV1Api, CustomObjectsApi, V1Service } from "@kubernetes/client-node";
import * as assert from "assert";
import { execFile } from "child_process";
import * as fs from "fs";
import * as https from "https";
import { Address4 } from "ip-address";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { parse as parseYaml } from "yaml";
import { httpGet } from "../testbed/etcd";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { defaultNodeLabels, registerNode, reregisterNode, waitForPodCIDR } from "../testbed/kubelet";
import { minorNumber } from "../testbed/kubeVersion";
import { pidAlive, sleep } from "../testbed/processes";
import {
    OLD_CLUSTER_DNS_IP, OLD_NODE_CIDR_MASK_SIZE, readSandboxSeed, SandboxInfo, SandboxStatus, sandboxDown, sandboxKubeConfig,
    sandboxStatus, sandboxUp,
} from "../testbed/sandbox";
import { ALL_SERVICE_SHAPES, SeededWorkload, ServiceShape } from "../testbed/seed";

const execFileAsync = promisify(execFile);

const OLD_SERVICE_CIDR = "10.96.0.0/12";
const OLD_POD_CIDR = "10.244.0.0/16";
const NEW_SERVICE_CIDR = "172.20.0.0/16";
const NEW_POD_CIDR = "10.200.0.0/16";
const POD_CIDR_WAIT_MS = 30_000;

function assertInRange(ipOrCidr: string, range: string, what: string): void {
    assert.ok(new Address4(ipOrCidr).isInSubnet(new Address4(range)), `${what} ${ipOrCidr} is not inside ${range}`);
}

function anonymousStatus(url: string, caCertPath: string): Promise<number> {
    return new Promise((resolve, reject) => {
        https.get(url, { ca: fs.readFileSync(caCertPath) }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
        }).on("error", reject);
    });
}

function clusterIpService(name: string): V1Service {
    return { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] } };
}

/** Polls until the Deployment controller has made a ReplicaSet for `name`: proof that KCM's controllers run. */
async function waitForReplicaSet(apps: AppsV1Api, namespace: string, name: string, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const list = await apps.listNamespacedReplicaSet({ namespace });
        const owned = list.items.find((rs) => rs.metadata?.ownerReferences?.some((ref) => ref.kind === "Deployment" && ref.name === name));
        if (owned?.metadata?.name) return owned.metadata.name;
        if (Date.now() > deadline) throw new Error(`no ReplicaSet for Deployment ${namespace}/${name} after ${timeoutMs} ms`);
        await sleep(200);
    }
}

describe("test bed: a real control plane on loopback", function () {
    const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });

    it("comes up with TLS and client-cert auth, and /readyz answers ok", async () => {
        const c = cluster();
        assert.match(c.server, /^https:\/\/127\.0\.0\.1:\d+$/);
        const admin = { caCertPath: c.pki.caCertPath, certPath: `${c.pki.dir}/admin.crt`, keyPath: `${c.pki.dir}/admin.key` };
        const ready = await httpGet(`${c.server}/readyz`, admin);
        assert.strictEqual(ready.status, 200);
        assert.strictEqual(ready.body.trim(), "ok");
        // without a client cert the request is anonymous, and RBAC refuses it
        assert.strictEqual(await anonymousStatus(`${c.server}/api/v1/namespaces`, c.pki.caCertPath), 403);
        const kubernetes = await c.kubeConfig().makeApiClient(CoreV1Api).readNamespacedService({ name: "kubernetes", namespace: "default" });
        assert.strictEqual(kubernetes.spec?.clusterIP, "10.96.0.1", "the kubernetes Service takes the first IP of --service-cluster-ip-range");
    });

    it("gives a Node created through the API a podCIDR from KCM, inside --cluster-cidr with the node mask", async () => {
        const kc = cluster().kubeConfig();
        await kc.makeApiClient(CoreV1Api).createNode({ body: { metadata: { name: "api-node" } } });
        const podCIDR = await waitForPodCIDR(kc, "api-node", POD_CIDR_WAIT_MS);
        assertInRange(podCIDR, OLD_POD_CIDR, "podCIDR of api-node");
        assert.strictEqual(new Address4(podCIDR).subnetMask, 24);
    });

    it("simulated kubelet: registers like a kubelet, and a re-registered Node loses operator changes and gets a podCIDR again", async () => {
        const kc = cluster().kubeConfig();
        const core = kc.makeApiClient(CoreV1Api);
        const registered = await registerNode(kc, { name: "kubelet-node", internalIP: "192.168.50.11", labels: { "node-role.kubernetes.io/worker": "" } });
        assert.deepStrictEqual(registered.metadata?.labels, { ...defaultNodeLabels("kubelet-node"), "node-role.kubernetes.io/worker": "" });
        assert.deepStrictEqual(registered.status?.addresses?.map(({ type, address }) => ({ type, address })), [
            { type: "InternalIP", address: "192.168.50.11" }, { type: "Hostname", address: "kubelet-node" },
        ]);
        assert.strictEqual(registered.status?.conditions?.find((cond) => cond.type === "Ready")?.status, "True");
        assert.strictEqual(registered.status?.capacity?.pods, "110");
        const firstPodCIDR = await waitForPodCIDR(kc, "kubelet-node", POD_CIDR_WAIT_MS);
        assertInRange(firstPodCIDR, OLD_POD_CIDR, "first podCIDR of kubelet-node");

        // what an operator adds after registration, and a node move throws away
        const node = await core.readNode({ name: "kubelet-node" });
        node.metadata!.labels = { ...node.metadata!.labels, "team": "payments" };
        node.spec!.taints = [{ key: "dedicated", value: "payments", effect: "NoSchedule" }];
        await core.replaceNode({ name: "kubelet-node", body: node });

        const again = await reregisterNode(kc, "kubelet-node", "192.168.50.11");
        assert.notStrictEqual(again.metadata?.uid, registered.metadata?.uid, "re-registration makes a new Node object");
        assert.deepStrictEqual(again.metadata?.labels, defaultNodeLabels("kubelet-node"));
        assert.strictEqual(again.spec?.taints, undefined);
        const secondPodCIDR = await waitForPodCIDR(kc, "kubelet-node", POD_CIDR_WAIT_MS);
        assertInRange(secondPodCIDR, OLD_POD_CIDR, "podCIDR of re-registered kubelet-node");
    });

    it("hands out uniquely named fresh namespaces", async () => {
        const first = await freshNamespace(cluster());
        const second = await freshNamespace(cluster());
        assert.notStrictEqual(first, second);
        const namespace = await cluster().kubeConfig().makeApiClient(CoreV1Api).readNamespace({ name: first });
        assert.strictEqual(namespace.metadata?.name, first);
    });
});

describe("test bed: control-plane behaviour when CIDR flags change", function () {
    const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });

    // 1.33+: the default ServiceCIDR, made from the first flag, keeps allocating (lib/serviceMove/serviceCidrs.ts)
    const servesServiceCidr = minorNumber() >= 33;

    it(`apiserver restarted on a new --service-cluster-ip-range keeps existing Services at their old IPs and gives new Services IPs in the ${servesServiceCidr ? "OLD range (the default ServiceCIDR is not updated)" : "new range"}`, async function () {
        this.timeout(180_000);
        const c = cluster();
        const namespace = await freshNamespace(c, "svc");
        const before = await c.kubeConfig().makeApiClient(CoreV1Api).createNamespacedService({ namespace, body: clusterIpService("old-svc") });
        const oldIP = before.spec!.clusterIP!;
        assertInRange(oldIP, OLD_SERVICE_CIDR, "old-svc clusterIP");

        await c.restartApiserver({ serviceClusterIpRange: NEW_SERVICE_CIDR });
        assert.strictEqual(c.currentFlags().serviceClusterIpRange, NEW_SERVICE_CIDR);

        const core = c.kubeConfig().makeApiClient(CoreV1Api);
        const kept = await core.readNamespacedService({ name: "old-svc", namespace });
        assert.strictEqual(kept.spec?.clusterIP, oldIP);
        assert.deepStrictEqual(kept.spec?.clusterIPs, [oldIP]);
        const created = await core.createNamespacedService({ namespace, body: clusterIpService("new-svc") });
        assertInRange(created.spec!.clusterIP!, servesServiceCidr ? OLD_SERVICE_CIDR : NEW_SERVICE_CIDR, "new-svc clusterIP");
        // legacy: an old-range IP can no longer be asked for; ServiceCIDR: a new-range one cannot be, yet
        const refusedIp = servesServiceCidr ? "172.20.100.100" : "10.96.100.100";
        await assert.rejects(
            core.createNamespacedService({ namespace, body: { ...clusterIpService("pinned"), spec: { ...clusterIpService("pinned").spec, clusterIP: refusedIp } } }),
            (err: { code?: number; body?: unknown }) => err.code === 422 && /not in the valid range|does not match the current range/.test(String(err.body)),
        );
    });

    it("KCM restarted on a new --cluster-cidr while Nodes still hold old podCIDRs exits fatally, as the runbooks warn", async function () {
        this.timeout(180_000);
        const c = cluster();
        const kc = c.kubeConfig();
        await registerNode(kc, { name: "old-range-node", internalIP: "192.168.50.21" });
        const oldPodCIDR = await waitForPodCIDR(kc, "old-range-node", POD_CIDR_WAIT_MS);
        assertInRange(oldPodCIDR, OLD_POD_CIDR, "podCIDR of old-range-node");

        await c.restartControllerManager({ clusterCidr: NEW_POD_CIDR });
        await assert.rejects(c.waitControllerManagerHealthy(), /exited with code/);
        const exitCode = await c.waitControllerManagerExit();
        assert.notStrictEqual(exitCode, 0);
        assert.ok(c.controllerManagerExited());
        const log = c.controllerManagerLog();
        assert.match(log, /failed to mark cidr\[[0-9./]+\] at idx \[\d+\] as occupied for node: [\w-]+: cidr [0-9./]+ is out the range of cluster cidr 10\.200\.0\.0\/16/);
    });

    it("KCM with --allocate-node-cidrs=false on the new --cluster-cidr stays up and keeps running its other controllers", async function () {
        this.timeout(180_000);
        const c = cluster();
        const kc = c.kubeConfig();
        const core = kc.makeApiClient(CoreV1Api);
        const heldBefore = (await core.listNode()).items.filter((n) => n.spec?.podCIDR).map((n) => [n.metadata!.name!, n.spec!.podCIDR!]);
        assert.ok(heldBefore.length > 0, "the previous test left a node holding an old podCIDR");

        await c.restartControllerManager({ clusterCidr: NEW_POD_CIDR, allocateNodeCidrs: false });
        await c.waitControllerManagerHealthy();
        if (minorNumber() >= 24) assert.doesNotMatch(c.controllerManagerLog(), /"Starting ipam controller"/, "the node IPAM controller did not start");
        else assert.match(c.controllerManagerLog(), /Skipping "nodeipam"/);
        assert.strictEqual(c.controllerManagerExited(), false);

        // its other controllers work: the Deployment controller makes a ReplicaSet
        const namespace = await freshNamespace(c, "kcm");
        const apps = kc.makeApiClient(AppsV1Api);
        await apps.createNamespacedDeployment({
            namespace,
            body: {
                metadata: { name: "web" },
                spec: {
                    replicas: 1,
                    selector: { matchLabels: { app: "web" } },
                    template: { metadata: { labels: { app: "web" } }, spec: { containers: [{ name: "web", image: "nginx:1.25" }] } },
                },
            },
        });
        await waitForReplicaSet(apps, namespace, "web", 60_000);
        assert.strictEqual(c.controllerManagerExited(), false);
        const heldAfter = (await core.listNode()).items.filter((n) => n.spec?.podCIDR).map((n) => [n.metadata!.name!, n.spec!.podCIDR!]);
        assert.deepStrictEqual(heldAfter, heldBefore, "nodes keep their old podCIDRs");
    });
});

describe("test bed: the sandbox, seeded in the old ranges", function () {
    let stateDir: string;
    let previousSandboxDir: string | undefined;
    let info: SandboxInfo;
    let seed: SeededWorkload;

    before(async function () {
        this.timeout(300_000);
        previousSandboxDir = process.env.CIDR_MIGRATION_SANDBOX_DIR;
        stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-sandbox-test-"));
        process.env.CIDR_MIGRATION_SANDBOX_DIR = stateDir;
        info = await sandboxUp();
        seed = readSandboxSeed();
    });

    after(async function () {
        this.timeout(60_000);
        await sandboxDown();
        fs.rmSync(stateDir, { recursive: true, force: true });
        if (previousSandboxDir === undefined) delete process.env.CIDR_MIGRATION_SANDBOX_DIR;
        else process.env.CIDR_MIGRATION_SANDBOX_DIR = previousSandboxDir;
    });

    it("runs detached, is found by another process through state.json, and a second up returns the same sandbox", async function () {
        this.timeout(120_000);
        assert.strictEqual(info.stateDir, stateDir);
        assert.ok(fs.existsSync(path.join(stateDir, "state.json")));
        const status = await sandboxStatus();
        assert.strictEqual(status.running, true);
        const again = await sandboxUp();
        assert.deepStrictEqual(again.pids, info.pids);
        assert.strictEqual(again.kubeconfigPath, info.kubeconfigPath);

        const script = `require(${JSON.stringify(path.join(__dirname, "..", "testbed", "sandbox.ts"))}).sandboxStatus()` +
            ".then((s) => { process.stdout.write(JSON.stringify(s)); })";
        const { stdout } = await execFileAsync(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], {
            env: { ...process.env, CIDR_MIGRATION_SANDBOX_DIR: stateDir },
        });
        const seenElsewhere = JSON.parse(stdout) as SandboxStatus;
        assert.strictEqual(seenElsewhere.running, true);
        assert.ok(seenElsewhere.running && seenElsewhere.kubeconfigPath === info.kubeconfigPath);
        assert.ok(!/PRIVATE KEY|BEGIN CERTIFICATE/.test(stdout), "status carries paths, never key material");
    });

    it("seeds Services of every shape, each exactly as the API server holds it, in the old service range", async () => {
        const kc = sandboxKubeConfig();
        const core = kc.makeApiClient(CoreV1Api);
        const apps = kc.makeApiClient(AppsV1Api);
        const shapes = new Set(seed.services.flatMap((s) => s.shapes));
        assert.deepStrictEqual(ALL_SERVICE_SHAPES.filter((shape) => !shapes.has(shape)), [], "every shape is seeded");

        const live = (await core.listServiceForAllNamespaces()).items;
        const liveNames = live.map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`).sort();
        assert.deepStrictEqual(liveNames, seed.services.map((s) => `${s.namespace}/${s.name}`).sort(), "nothing more, nothing less");

        for (const seeded of seed.services) {
            const svc = live.find((s) => s.metadata!.namespace === seeded.namespace && s.metadata!.name === seeded.name)!;
            const what = `${seeded.namespace}/${seeded.name}`;
            assert.strictEqual(svc.spec!.type, seeded.type, what);
            assert.strictEqual(svc.spec!.clusterIP, seeded.clusterIP, what);
            assert.deepStrictEqual(svc.spec!.ports?.map((p) => p.port) ?? [], seeded.ports.map((p) => p.port), what);
            assert.deepStrictEqual(svc.spec!.ports?.map((p) => p.nodePort) ?? [], seeded.ports.map((p) => p.nodePort), what);
            if (seeded.clusterIP && seeded.clusterIP !== "None") assertInRange(seeded.clusterIP, OLD_SERVICE_CIDR, `${what} clusterIP`);
            if (seeded.deployment) {
                const deployment = await apps.readNamespacedDeployment({ name: seeded.deployment, namespace: seeded.namespace });
                assert.deepStrictEqual(deployment.spec!.selector.matchLabels, seeded.selector, `${what} selects its Deployment's pods`);
            } else {
                assert.ok(seeded.type === "ExternalName" || seeded.shapes.includes("SelectorlessManualEndpoints") || seeded.createdBy === "apiserver", `${what} has no Deployment`);
            }
        }

        const byShape = (shape: ServiceShape) => seed.services.filter((s) => s.shapes.includes(shape));
        const kubeDns = byShape("ClusterDNS")[0];
        assert.deepStrictEqual([kubeDns.namespace, kubeDns.name, kubeDns.clusterIP], ["kube-system", "kube-dns", OLD_CLUSTER_DNS_IP]);
        assert.deepStrictEqual(kubeDns.ports.map((p) => `${p.port}/${p.protocol}`), ["53/UDP", "53/TCP", "9153/TCP"]);
        assert.deepStrictEqual(kubeDns.selector, { "k8s-app": "kube-dns" });
        assert.strictEqual(kubeDns.deployment, "coredns");
        assert.deepStrictEqual(byShape("APIServer").map((s) => s.clusterIP), ["10.96.0.1"]);
        assert.deepStrictEqual(byShape("NodePort").flatMap((s) => s.ports.map((p) => p.nodePort)), [30080, 30443]);
        assert.deepStrictEqual(byShape("PinnedClusterIP").map((s) => s.clusterIP).sort(), [OLD_CLUSTER_DNS_IP, "10.96.100.100"]);
        assert.deepStrictEqual(byShape("Headless").map((s) => s.clusterIP), ["None"]);
        assert.deepStrictEqual(byShape("ExternalName").map((s) => [s.clusterIP, s.externalName]), [[undefined, "database.example.com"]]);
        for (const s of byShape("ExternalTrafficPolicyLocal")) {
            assert.strictEqual(s.externalTrafficPolicy, "Local");
            assert.ok(s.healthCheckNodePort && s.healthCheckNodePort >= 30000, `${s.name} got a healthCheckNodePort`);
        }
        for (const s of byShape("MultiPortNamedTargetPorts")) {
            assert.ok(s.ports.length > 1 && s.ports.every((p) => typeof p.targetPort === "string"), `${s.name} has several named targetPorts`);
        }
        for (const s of byShape("SessionAffinityClientIP")) assert.strictEqual(s.sessionAffinity, "ClientIP");
        for (const s of byShape("LoadBalancer")) {
            const status = await core.readNamespacedServiceStatus({ name: s.name, namespace: s.namespace });
            assert.deepStrictEqual(status.status?.loadBalancer?.ingress?.map((i) => i.ip), s.loadBalancerIngressIPs);
        }
        const [selectorless] = byShape("SelectorlessManualEndpoints");
        assert.strictEqual(selectorless.selector, undefined);
        const endpoints = await core.readNamespacedEndpoints({ name: selectorless.name, namespace: selectorless.namespace });
        assert.deepStrictEqual(endpoints.subsets?.flatMap((sub) => sub.addresses?.map((a) => a.ip) ?? []), selectorless.manualEndpoints!.ips);
        const [applied] = byShape("LastAppliedConfiguration");
        const appliedLive = await core.readNamespacedService({ name: applied.name, namespace: applied.namespace });
        const lastApplied = JSON.parse(appliedLive.metadata!.annotations!["kubectl.kubernetes.io/last-applied-configuration"]);
        assert.strictEqual(lastApplied.metadata.name, applied.name);
        assert.strictEqual(lastApplied.spec.clusterIP, undefined, "kubectl records the manifest, not the allocated IP");
        const [owned] = byShape("OwnerReferences");
        const ownedLive = await core.readNamespacedService({ name: owned.name, namespace: owned.namespace });
        const owner = await apps.readNamespacedDeployment({ name: owned.deployment!, namespace: owned.namespace });
        assert.deepStrictEqual(ownedLive.metadata!.ownerReferences?.map((r) => [r.kind, r.name, r.uid]), [["Deployment", owned.deployment, owner.metadata!.uid]]);
    });

    it("seeds kubeadm's kube-proxy, kubeadm-config and kubelet-config ConfigMaps with the old ranges", async () => {
        const core = sandboxKubeConfig().makeApiClient(CoreV1Api);
        const read = (name: string) => core.readNamespacedConfigMap({ name, namespace: "kube-system" });
        const kubeProxy = parseYaml((await read("kube-proxy")).data!["config.conf"]);
        assert.strictEqual(kubeProxy.kind, "KubeProxyConfiguration");
        assert.strictEqual(kubeProxy.clusterCIDR, OLD_POD_CIDR);
        const kubeadm = parseYaml((await read("kubeadm-config")).data!.ClusterConfiguration);
        assert.deepStrictEqual([kubeadm.networking.podSubnet, kubeadm.networking.serviceSubnet], [OLD_POD_CIDR, OLD_SERVICE_CIDR]);
        const kubelet = parseYaml((await read("kubelet-config")).data!.kubelet);
        assert.strictEqual(kubelet.kind, "KubeletConfiguration");
        assert.deepStrictEqual(kubelet.clusterDNS, [OLD_CLUSTER_DNS_IP]);
        assert.deepStrictEqual(seed.configMaps.map((c) => `${c.namespace}/${c.name}`), ["kube-system/kube-proxy", "kube-system/kubeadm-config", "kube-system/kubelet-config"]);
    });

    it("registers cp-1 and worker-1..3 through the simulated kubelet, each with its own podCIDR from KCM in the old pod range", async () => {
        const core = sandboxKubeConfig().makeApiClient(CoreV1Api);
        const nodes = (await core.listNode()).items;
        assert.deepStrictEqual(nodes.map((n) => n.metadata!.name).sort(), ["cp-1", "worker-1", "worker-2", "worker-3"]);
        assert.deepStrictEqual(seed.nodes.map((n) => n.name).sort(), ["cp-1", "worker-1", "worker-2", "worker-3"]);
        for (const seeded of seed.nodes) {
            const node = nodes.find((n) => n.metadata!.name === seeded.name)!;
            assert.strictEqual(node.spec!.podCIDR, seeded.podCIDR);
            assertInRange(seeded.podCIDR, OLD_POD_CIDR, `${seeded.name} podCIDR`);
            assert.strictEqual(new Address4(seeded.podCIDR).subnetMask, OLD_NODE_CIDR_MASK_SIZE);
            assert.deepStrictEqual(node.metadata!.labels, seeded.labels);
            assert.strictEqual(node.status!.addresses!.find((a) => a.type === "InternalIP")!.address, seeded.internalIP);
            assert.strictEqual(node.status!.conditions!.find((c) => c.type === "Ready")!.status, "True");
        }
        assert.strictEqual(new Set(seed.nodes.map((n) => n.podCIDR)).size, 4, "podCIDRs are distinct");
        const cp = seed.nodes.find((n) => n.name === "cp-1")!;
        assert.strictEqual(cp.controlPlane, true);
        assert.strictEqual(cp.labels["node-role.kubernetes.io/control-plane"], "");
        assert.deepStrictEqual(cp.taints, [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }]);
        for (const worker of seed.nodes.filter((n) => !n.controlPlane)) assert.deepStrictEqual(worker.taints, []);
    });

    it("seeds Calico's CRDs, a default IPPool over the old pod range, and an IPAM block with its affinity per node", async () => {
        const custom = sandboxKubeConfig().makeApiClient(CustomObjectsApi);
        const list = async (plural: string) => ((await custom.listClusterCustomObject({ group: "crd.projectcalico.org", version: "v1", plural })) as { items: { metadata: { name: string }; spec: Record<string, unknown> }[] }).items;
        const pools = await list("ippools");
        assert.deepStrictEqual(pools.map((p) => [p.metadata.name, p.spec.cidr, p.spec.blockSize, p.spec.ipipMode, p.spec.natOutgoing, p.spec.nodeSelector]),
            [["default-ipv4-ippool", OLD_POD_CIDR, 26, "Always", true, "all()"]]);
        assert.deepStrictEqual(seed.calico.ipPools.map((p) => p.cidr), [OLD_POD_CIDR]);
        const blocks = await list("ipamblocks");
        assert.deepStrictEqual(blocks.map((b) => [b.metadata.name, b.spec.cidr, b.spec.affinity]).sort(),
            seed.calico.ipamBlocks.map((b) => [b.name, b.cidr, b.affinity]).sort());
        for (const block of seed.calico.ipamBlocks) assertInRange(block.cidr, OLD_POD_CIDR, `IPAM block ${block.name}`);
        const affinities = await list("blockaffinities");
        assert.deepStrictEqual(affinities.map((a) => [a.spec.node, a.spec.cidr, a.spec.state]).sort(),
            seed.calico.blockAffinities.map((a) => [a.node, a.cidr, a.state]).sort());
        assert.deepStrictEqual(seed.calico.blockAffinities.map((a) => a.node).sort(), seed.nodes.map((n) => n.name).sort());
    });

    it("sandbox down stops every process by pid and removes its state; status then says not running", async function () {
        this.timeout(60_000);
        await sandboxDown();
        for (const pid of Object.values(info.pids)) assert.strictEqual(pidAlive(pid), false, `pid ${pid} is gone`);
        assert.strictEqual(fs.existsSync(path.join(stateDir, "state.json")), false);
        assert.strictEqual(fs.existsSync(info.clusterDir), false);
        const status = await sandboxStatus();
        assert.strictEqual(status.running, false);
    });
});
