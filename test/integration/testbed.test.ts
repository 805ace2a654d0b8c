// The test bed itself, against real processes: etcd, kube-apiserver and
// kube-controller-manager v1.20.2 on loopback. These tests also pin down the
// control-plane behaviour the migration relies on (or must avoid).
import { AppsV1Api, CoreV1Api, V1Service } from "@kubernetes/client-node";
import * as assert from "assert";
import * as fs from "fs";
import * as https from "https";
import { Address4 } from "ip-address";
import { httpGet } from "../testbed/etcd";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { defaultNodeLabels, registerNode, reregisterNode, waitForPodCIDR } from "../testbed/kubelet";
import { sleep } from "../testbed/processes";

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

    it("apiserver restarted on a new --service-cluster-ip-range keeps existing Services at their old IPs and gives new Services IPs in the new range", async function () {
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
        assertInRange(created.spec!.clusterIP!, NEW_SERVICE_CIDR, "new-svc clusterIP");
        // an old-range IP can no longer be asked for
        await assert.rejects(
            core.createNamespacedService({ namespace, body: { ...clusterIpService("pinned-old"), spec: { ...clusterIpService("pinned-old").spec, clusterIP: "10.96.100.100" } } }),
            (err: { code?: number; body?: unknown }) => err.code === 422 && /not in the valid range|provided IP is not in the valid range/.test(String(err.body)),
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
        assert.match(c.controllerManagerLog(), /Skipping "nodeipam"/);
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
