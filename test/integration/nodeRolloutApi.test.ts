// The API side of a node move against a real control plane (etcd + kube-apiserver + kube-controller-manager
// of the test-bed version, on loopback), with the kubelet's registration simulated (test/testbed/kubelet.ts) and a scheduler plus the
// pod side of kubelet/CNI simulated through the API (nodeRolloutSimulation.ts). KCM's own controllers do the rest:
// ReplicaSets re-create evicted pods, the disruption controller computes the PDBs, DaemonSets re-create pods for
// the re-registered Node. KCM runs with --allocate-node-cidrs=false and the new --cluster-cidr during the moves,
// as the control-plane sequence requires, and with allocation back on at the end.
//
// The provider is driven directly (its create(), as the tests of a library would) and, for the crash and the
// registration tests, through the SDK's dynamic-provider host exactly as `pulumi up` drives it.
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, DiscoveryV1Api, KubeConfig, PatchStrategy, setHeaderOptions, V1CustomResourceDefinition, V1Node, V1Pod } from "@kubernetes/client-node";
import * as assert from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { NodeDrain, NodeRejoin, nodeApiStepsProvider } from "../../dynamic-providers/nodeApiSteps";
import { backupConfigMapName, BACKUP_NAMESPACE, decodeBackup } from "../../lib/nodeMove/backupRecord";
import { cidrContains } from "../../lib/net/cidr";
import { isSecret, PROVIDER_KEY, Props, ProviderHost, registrationOf, serializeDynamicProvider, startProviderHost, urnOf } from "../support/providerHost";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { defaultNodeLabels, registerNode } from "../testbed/kubelet";
import { eventually, LAMEDUCK_ANNOTATION, PodSimulator, startPodSimulator } from "./nodeRolloutSimulation";
import { HANDED_OFF_LABEL } from "../../lib/nodeMove/apiSteps/dnsHandoff";

/** The provider's create, with its outputs as the tests read them (each step reports its own fields). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function createStep(news: Record<string, unknown>): Promise<{ id: string; outs: Record<string, any> }> {
    const { id, outs } = await nodeApiStepsProvider.create!(news);
    return { id, outs: outs ?? {} };
}

const OLD_SERVICE_CIDR = "10.96.0.0/12";
const OLD_POD_CIDR = "10.244.0.0/16";
const NEW_POD_CIDR = "10.48.0.0/16";
const RUN_ID = "2024-05-01-podcidr";
const FIXTURES = path.join(__dirname, "..", "fixtures", "nodeRollout");
const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** What an operator and kubeadm put on a node beyond the kubelet's registration. */
const OPERATOR = {
    labels: { "topology.kubernetes.io/zone": "zone-b", "example.com/tier": "db", "node-role.kubernetes.io/worker": "" },
    annotations: {
        "kubeadm.alpha.kubernetes.io/cri-socket": "/run/containerd/containerd.sock",
        "example.com/owner": "team-data",
        "example.com/json": "{\"racks\":[\"r1\",\"r2\"]}",
        // calico-node's tunnel address in the old pool: must not come back on the moved node
        "projectcalico.org/IPv4IPIPTunnelAddr": "10.244.9.1",
    },
    taints: [
        { key: "example.com/dedicated", value: "db", effect: "NoSchedule" },
        { key: "example.com/maintenance-window", effect: "PreferNoSchedule" },
    ],
};

describe("node move API steps (real kube-apiserver + KCM of the test-bed version)", function () {
    this.timeout(300_000);
    const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
    let kc: KubeConfig;
    let core: CoreV1Api;
    let apps: AppsV1Api;
    let custom: CustomObjectsApi;
    let kubeconfig: string;
    let namespace: string;
    let sim: PodSimulator;
    const staleCni = new Map<string, string>();
    const nodeIPs = new Map<string, string>();
    const hosts: ProviderHost[] = [];

    async function addNode(name: string, labels: Record<string, string> = {}): Promise<V1Node> {
        const ip = `192.168.50.${nodeIPs.size + 10}`;
        nodeIPs.set(name, ip);
        await registerNode(kc, { name, internalIP: ip, labels });
        return eventually(`podCIDR for ${name}`, async () => {
            const node = await core.readNode({ name });
            return node.spec?.podCIDR ? node : undefined;
        });
    }

    /** What the kubelet does when it starts after the Node object was deleted. */
    async function kubeletRegistersAgain(name: string): Promise<void> {
        await registerNode(kc, { name, internalIP: nodeIPs.get(name)!, waitReady: false });
    }

    async function daemonSetPodOn(node: string): Promise<V1Pod | undefined> {
        const pods = await core.listNamespacedPod({ namespace, fieldSelector: `spec.nodeName=${node}`, labelSelector: "app=node-agent" });
        return pods.items.find((p) => !p.metadata?.deletionTimestamp && p.status?.phase === "Running");
    }

    async function workload(name: string, replicas: number, nodeSelector: Record<string, string>, budget: { minAvailable?: number; maxUnavailable?: number }): Promise<V1Pod[]> {
        await apps.createNamespacedReplicaSet({
            namespace,
            body: {
                metadata: { name },
                spec: {
                    replicas,
                    selector: { matchLabels: { app: name } },
                    template: {
                        metadata: { labels: { app: name } },
                        spec: {
                            // no token controller runs on the test bed, so no token could be mounted
                            automountServiceAccountToken: false,
                            nodeSelector,
                            containers: [{ name: "app", image: "registry.k8s.io/pause:3.2", volumeMounts: [{ name: "scratch", mountPath: "/scratch" }] }],
                            volumes: [{ name: "scratch", emptyDir: {} }],
                        },
                    },
                },
            },
        });
        await custom.createNamespacedCustomObject({
            group: "policy", version: "v1", namespace, plural: "poddisruptionbudgets",
            body: { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name }, spec: { selector: { matchLabels: { app: name } }, ...budget } },
        });
        const expectAllowed = budget.maxUnavailable ?? replicas - (budget.minAvailable ?? replicas);
        // the disruption controller has seen all replicas healthy
        await eventually(`PDB ${name} status`, async () => {
            const pdb = (await custom.getNamespacedCustomObject({ group: "policy", version: "v1", namespace, plural: "poddisruptionbudgets", name })) as { status?: { currentHealthy?: number; disruptionsAllowed?: number } };
            return pdb.status?.currentHealthy === replicas && pdb.status.disruptionsAllowed === expectAllowed ? true : undefined;
        });
        return (await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` })).items;
    }

    function inputs(step: string, node: string, extra: Props = {}): Props {
        return { step, kubeconfig, node, runId: RUN_ID, version: "1", ...extra };
    }

    async function backupOf(node: string) {
        const name = backupConfigMapName(RUN_ID, node);
        const cm = await core.readNamespacedConfigMap({ namespace: BACKUP_NAMESPACE, name });
        return decodeBackup(cm.data, name, { runId: RUN_ID, node });
    }

    async function assertControllerManagerHealthy(): Promise<void> {
        assert.strictEqual(cluster().controllerManagerExited(), false, `kube-controller-manager exited:\n${cluster().controllerManagerLog().split("\n").slice(-10).join("\n")}`);
        await cluster().waitControllerManagerHealthy();
    }

    before(async function () {
        kc = cluster().kubeConfig();
        core = kc.makeApiClient(CoreV1Api);
        apps = kc.makeApiClient(AppsV1Api);
        custom = kc.makeApiClient(CustomObjectsApi);
        kubeconfig = fs.readFileSync(cluster().kubeconfigPath, "utf8");
        namespace = await freshNamespace(kc, "node-move");
        sim = startPodSimulator(kc, { namespaces: [namespace], staleCni });

        for (const file of ["crd.projectcalico.org_ipamblocks.yaml", "crd.projectcalico.org_blockaffinities.yaml"]) {
            const crd = parse(fs.readFileSync(path.join(FIXTURES, file), "utf8")) as V1CustomResourceDefinition;
            await kc.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({ body: crd });
            await eventually(`CRD ${crd.metadata!.name} Established`, async () => {
                const live = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: crd.metadata!.name! });
                return live.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
            });
        }

        // nodes registered while KCM still allocates from the old range
        await addNode("worker-a");
        await core.patchNode({ name: "worker-a", body: { metadata: { labels: OPERATOR.labels, annotations: OPERATOR.annotations }, spec: { taints: OPERATOR.taints } } }, mergePatch());
        await addNode("worker-b");
        await addNode("worker-c", { pool: "drain-test" });
        await addNode("worker-d", { pool: "drain-test" });
        await addNode("worker-e");
        await addNode("worker-f", { "example.com/crash-test": "yes" });
        await addNode("worker-addr");
        await addNode("worker-dns-1", { pool: "dns-test" });
        await addNode("worker-dns-2", { pool: "dns-test" });

        // a node agent on every node (pod network, like a CNI-managed DaemonSet such as a log shipper)
        await apps.createNamespacedDaemonSet({
            namespace,
            body: {
                metadata: { name: "node-agent" },
                spec: {
                    selector: { matchLabels: { app: "node-agent" } },
                    template: {
                        metadata: { labels: { app: "node-agent" } },
                        spec: { automountServiceAccountToken: false, tolerations: [{ operator: "Exists" }], containers: [{ name: "agent", image: "registry.k8s.io/pause:3.2" }] },
                    },
                },
            },
        });
        for (const node of nodeIPs.keys()) await eventually(`node-agent pod on ${node}`, () => daemonSetPodOn(node));

        // the control-plane sequence: no allocation during the rollout, the new range configured
        await cluster().restartControllerManager({ allocateNodeCidrs: false, clusterCidr: NEW_POD_CIDR });
        await cluster().waitControllerManagerHealthy();
    });

    after(async function () {
        await sim?.stop();
        for (const host of hosts) await host.stop();
    });

    afterEach(() => {
        assert.deepStrictEqual(sim.errors, [], "the pod simulator hit API errors");
    });

    it("drain against a PodDisruptionBudget that blocks fails with a clear timeout, forcing nothing", async () => {
        const before = await core.readNode({ name: "worker-b" });
        const pods = await workload("blocked", 2, { "kubernetes.io/hostname": "worker-b" }, { minAvailable: 2 });
        assert.ok(pods.every((p) => p.spec?.nodeName === "worker-b"));

        await assert.rejects(
            createStep(inputs("drain", "worker-b", { plannedPodCIDR: "10.48.2.0/24", drainTimeoutSeconds: 3, evictionRetrySeconds: 1 })),
            (err: Error) => {
                assert.match(err.message, /^node worker-b: drain timed out after 3s with 2 pod\(s\) left: /);
                assert.match(err.message, new RegExp(`PodDisruptionBudget ${namespace}/blocked \\(0 disruptions allowed\\)`));
                assert.match(err.message, /Nothing was forced; the node stays cordoned/);
                assert.ok(!err.message.includes("client-key-data") && !err.message.includes("\n"), "one line, no kubeconfig");
                return true;
            },
        );
        const after = (await core.listNamespacedPod({ namespace, labelSelector: "app=blocked" })).items;
        assert.deepStrictEqual(after.map((p) => p.metadata!.uid).sort(), pods.map((p) => p.metadata!.uid).sort(), "the same pods still run");
        assert.ok(after.every((p) => !p.metadata?.deletionTimestamp), "no pod was deleted");
        assert.strictEqual((await core.readNode({ name: "worker-b" })).spec?.unschedulable, true);

        // the backup was taken before the cordon, and a re-run (once the budget allows it) keeps that first backup
        const { record, phase } = await backupOf("worker-b");
        assert.strictEqual(phase, "backed-up");
        assert.strictEqual(record.metadata.unschedulable, false);
        assert.strictEqual(record.nodeUid, before.metadata!.uid);
        await custom.deleteNamespacedCustomObject({ group: "policy", version: "v1", namespace, plural: "poddisruptionbudgets", name: "blocked" });
        const outs = await createStep(inputs("drain", "worker-b", { plannedPodCIDR: "10.48.2.0/24", drainTimeoutSeconds: 30, evictionRetrySeconds: 1 }));
        assert.strictEqual(outs.outs.evicted.length, 2);
        assert.strictEqual((await backupOf("worker-b")).record.metadata.unschedulable, false, "the re-run did not overwrite the pre-cordon backup");
    });

    it("drain through a PodDisruptionBudget that allows one disruption evicts every pod, leaves the DaemonSet pod", async () => {
        const pods = await workload("allowed", 2, { pool: "drain-test" }, { maxUnavailable: 1 });
        assert.ok(pods.every((p) => p.spec?.nodeName === "worker-c"), `pods on ${pods.map((p) => p.spec?.nodeName)}`);
        const agent = await daemonSetPodOn("worker-c");

        const { id, outs } = await createStep(inputs("drain", "worker-c", { plannedPodCIDR: "10.48.3.0/24", drainTimeoutSeconds: 120, evictionRetrySeconds: 1 }));
        assert.strictEqual(id, `${RUN_ID}/worker-c/drain`);
        assert.deepStrictEqual(outs.evicted, pods.map((p) => `${namespace}/${p.metadata!.name}`).sort());
        assert.deepStrictEqual(outs.ignored, [`${namespace}/${agent!.metadata!.name} (DaemonSet node-agent)`]);
        assert.deepStrictEqual(outs.daemonSets, [`${namespace}/node-agent`]);
        assert.strictEqual(outs.kubeconfig, undefined, "the kubeconfig is never an output");

        // the ReplicaSet replaces both and the scheduler binds them, after the drain returned (late on a busy machine)
        const now = await eventually("both replacements scheduled", async () => {
            const items = (await core.listNamespacedPod({ namespace, labelSelector: "app=allowed" })).items;
            return items.length === 2 && items.every((p) => p.spec?.nodeName) ? items : undefined;
        });
        assert.strictEqual(now.length, 2, "the ReplicaSet replaced both");
        assert.ok(now.every((p) => p.spec?.nodeName === "worker-d" && !pods.some((old) => old.metadata!.uid === p.metadata!.uid)), `replacements on ${now.map((p) => p.spec?.nodeName)}`);
        assert.strictEqual((await daemonSetPodOn("worker-c"))?.metadata?.uid, agent!.metadata!.uid, "the DaemonSet pod stays");
        assert.strictEqual((await core.readNode({ name: "worker-c" })).spec?.unschedulable, true);
    });

    it("dnsService: each evicted DNS pod leaves its Service while it still runs (its lameduck), so kube-proxy drops the flows that lead to it; other pods keep their labels", async () => {
        const dnsLabels = { "k8s-app": "sim-dns" };
        await apps.createNamespacedDeployment({
            namespace,
            body: {
                metadata: { name: "sim-dns" },
                spec: {
                    replicas: 2,
                    selector: { matchLabels: dnsLabels },
                    template: {
                        metadata: { labels: { ...dnsLabels, tier: "dns" }, annotations: { [LAMEDUCK_ANNOTATION]: "6000" } },
                        spec: { automountServiceAccountToken: false, nodeSelector: { pool: "dns-test" }, containers: [{ name: "dns", image: "registry.k8s.io/pause:3.2" }] },
                    },
                },
            },
        });
        await core.createNamespacedService({ namespace, body: { metadata: { name: "sim-dns" }, spec: { selector: dnsLabels, ports: [{ name: "dns", port: 53, protocol: "UDP" }] } } });
        const other = await workload("beside-dns", 1, { pool: "dns-test" }, { maxUnavailable: 1 });
        const dnsPods = await eventually("both DNS pods running", async () => {
            const items = (await core.listNamespacedPod({ namespace, labelSelector: "k8s-app=sim-dns" })).items;
            return items.length === 2 && items.every((p) => p.status?.podIP) ? items : undefined;
        });
        const node = dnsPods[0].spec!.nodeName!;
        const onNode = dnsPods.filter((p) => p.spec?.nodeName === node);
        const besides = other.filter((p) => p.spec?.nodeName === node);
        assert.strictEqual(onNode.length + besides.length, 3, "the simulated scheduler put both DNS pods and the other pod on one node");
        const sliceAddresses = async () => (await kc.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({ namespace, labelSelector: "kubernetes.io/service-name=sim-dns" })).items
            .flatMap((slice) => (slice.endpoints ?? []).flatMap((e) => e.addresses));
        await eventually("the DNS Service's slices list its pods", async () => ((await sliceAddresses()).length === 2 ? true : undefined));

        const drained = createStep(inputs("drain", node, { plannedPodCIDR: "10.48.9.0/24", evictionRetrySeconds: 1, dnsService: { namespace, name: "sim-dns" } }));
        for (const pod of onNode) {
            // while the drain waits for it: terminating (answering, in the simulated lameduck), out of the Service,
            // labelled by us, its other labels kept
            const name = pod.metadata!.name!;
            const live = await eventually(`${name} handed off while it runs`, async () => {
                const found = (await core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` })).items[0];
                assert.ok(found, `${name} was deleted before it left its Service`);
                return found.metadata?.labels?.[HANDED_OFF_LABEL] ? found : undefined;
            }, 10_000);
            assert.ok(live.metadata?.deletionTimestamp, "evicted first");
            assert.strictEqual(live.metadata?.labels?.["k8s-app"], undefined, "the selector's label is gone");
            assert.strictEqual(live.metadata?.labels?.tier, "dns", "its other labels stay");
            await eventually(`${pod.status!.podIP} out of the Service's slices`, async () => ((await sliceAddresses()).includes(pod.status!.podIP!) ? undefined : true), 10_000);
            assert.strictEqual((await core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${name}` })).items.length, 1, "out of the slices while the pod still runs");
        }
        const { outs } = await drained;
        assert.ok(onNode.every((p) => outs.evicted.includes(`${namespace}/${p.metadata!.name}`)), `evicted ${outs.evicted}`);
        assert.ok(outs.evicted.includes(`${namespace}/${besides[0].metadata!.name}`));
        const live = (await core.listNamespacedPod({ namespace, fieldSelector: `metadata.name=${besides[0].metadata!.name}` })).items[0];
        if (live) assert.deepStrictEqual(live.metadata?.labels, besides[0].metadata?.labels, "a pod outside the DNS Service keeps its labels");
        await apps.deleteNamespacedDeployment({ namespace, name: "sim-dns" });
        await core.deleteNamespacedService({ namespace, name: "sim-dns" });
    });

    it("a pod without a controller stops the drain before the node is touched, unless unmanagedPods is evict", async () => {
        await core.createNamespacedPod({ namespace, body: { metadata: { name: "bare" }, spec: { nodeName: "worker-e", automountServiceAccountToken: false, containers: [{ name: "c", image: "registry.k8s.io/pause:3.2" }] } } });
        await assert.rejects(
            createStep(inputs("drain", "worker-e", { plannedPodCIDR: "10.48.5.0/24" })),
            new RegExp(`^Error: node worker-e: cannot drain, 1 pod\\(s\\) have no controller and would not come back: ${namespace}/bare; `),
        );
        const node = await core.readNode({ name: "worker-e" });
        assert.notStrictEqual(node.spec?.unschedulable, true, "not cordoned");
        await assert.rejects(core.readNamespacedConfigMap({ namespace: BACKUP_NAMESPACE, name: backupConfigMapName(RUN_ID, "worker-e") }), (err: { code?: number }) => err.code === 404);

        const { outs } = await createStep(inputs("drain", "worker-e", { plannedPodCIDR: "10.48.5.0/24", unmanagedPods: "evict", evictionRetrySeconds: 1 }));
        assert.deepStrictEqual(outs.evicted, [`${namespace}/bare`]);
        await eventually("bare pod gone", async () => (await core.listNamespacedPod({ namespace, fieldSelector: "metadata.name=bare" })).items.length === 0 ? true : undefined);
    });

    it("moves a node: delete, re-register, planned podCIDR, metadata restored exactly, old-pool IPAM released", async () => {
        const planned = "10.48.1.0/24";
        const before = await core.readNode({ name: "worker-a" });
        const oldAgent = await daemonSetPodOn("worker-a");
        assert.ok(cidrContains(before.spec!.podCIDR!, oldAgent!.status!.podIP!), "the agent starts in the old subnet");
        // Calico's per-node IPAM: worker-a's block and affinity in the old pool, plus objects that must stay
        const calico = { group: "crd.projectcalico.org", version: "v1" };
        const block = (name: string, cidr: string, node: string) => custom.createClusterCustomObject({ ...calico, plural: "ipamblocks", body: { apiVersion: "crd.projectcalico.org/v1", kind: "IPAMBlock", metadata: { name }, spec: { cidr, affinity: `host:${node}`, strictAffinity: false, allocations: [0, null], unallocated: [1], attributes: [{ handle_id: `ipip-tunnel-addr-${node}` }], deleted: false } } });
        const affinity = (name: string, cidr: string, node: string) => custom.createClusterCustomObject({ ...calico, plural: "blockaffinities", body: { apiVersion: "crd.projectcalico.org/v1", kind: "BlockAffinity", metadata: { name }, spec: { node, cidr, state: "confirmed", deleted: "false" } } });
        await block("10-244-9-0-26", "10.244.9.0/26", "worker-a");
        await affinity("worker-a-10-244-9-0-26", "10.244.9.0/26", "worker-a");
        await block("10-48-1-0-26", "10.48.1.0/26", "worker-a");
        await affinity("worker-a-10-48-1-0-26", "10.48.1.0/26", "worker-a");
        await block("10-244-10-0-26", "10.244.10.0/26", "worker-b");
        await affinity("worker-b-10-244-10-0-26", "10.244.10.0/26", "worker-b");

        await createStep(inputs("drain", "worker-a", { plannedPodCIDR: planned, oldPodCIDR: before.spec!.podCIDR }));
        await assertControllerManagerHealthy();
        // (remote: CNI cleanup, kubelet stop)
        const deleted = await createStep(inputs("delete-node", "worker-a"));
        assert.strictEqual(deleted.outs.result, "deleted");
        await assert.rejects(core.readNode({ name: "worker-a" }), (err: { code?: number }) => err.code === 404);
        const released = await createStep(inputs("release-calico-ipam", "worker-a", { oldPoolCidrs: [OLD_POD_CIDR] }));
        assert.deepStrictEqual(released.outs.releasedBlocks, ["10-244-9-0-26"]);
        assert.deepStrictEqual(released.outs.releasedAffinities, ["worker-a-10-244-9-0-26"]);
        const names = async (plural: string) => ((await custom.listClusterCustomObject({ ...calico, plural })) as { items: Array<{ metadata: { name: string } }> }).items.map((i) => i.metadata.name).sort();
        assert.deepStrictEqual(await names("ipamblocks"), ["10-244-10-0-26", "10-48-1-0-26"]);
        assert.deepStrictEqual(await names("blockaffinities"), ["worker-a-10-48-1-0-26", "worker-b-10-244-10-0-26"]);

        // (remote: kubelet start) → the kubelet registers with its default labels only
        await kubeletRegistersAgain("worker-a");
        const fresh = await core.readNode({ name: "worker-a" });
        assert.deepStrictEqual(fresh.metadata?.labels, defaultNodeLabels("worker-a"));
        assert.ok(!fresh.spec?.podCIDR, "KCM allocates nothing (--allocate-node-cidrs=false)");

        const rejoined = await createStep(inputs("rejoin", "worker-a", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 60 }));
        assert.strictEqual(rejoined.outs.podCIDR, planned);
        assert.strictEqual(rejoined.outs.assignedPodCIDR, true);
        assert.deepStrictEqual(rejoined.outs.replacedPods, [`${namespace}/${oldAgent!.metadata!.name}`]);

        const after = await core.readNode({ name: "worker-a" });
        assert.notStrictEqual(after.metadata!.uid, before.metadata!.uid, "a new Node object");
        assert.strictEqual(after.spec?.podCIDR, planned);
        assert.deepStrictEqual(after.spec?.podCIDRs, [planned]);
        // field by field against the Node before the move
        assert.deepStrictEqual(after.metadata?.labels, before.metadata?.labels);
        const cniOwned = "projectcalico.org/IPv4IPIPTunnelAddr";
        for (const [key, value] of Object.entries(before.metadata!.annotations!)) {
            if (key === cniOwned) continue;
            assert.strictEqual(after.metadata!.annotations![key], value, `annotation ${key}`);
        }
        assert.strictEqual(after.metadata!.annotations![cniOwned], undefined, "the old-pool tunnel address is not restored");
        const userTaints = (n: V1Node) => (n.spec?.taints ?? []).filter((t) => !t.key.startsWith("node.kubernetes.io/")).map((t) => ({ key: t.key, value: t.value, effect: t.effect }));
        assert.deepStrictEqual(userTaints(after), userTaints(before));
        assert.deepStrictEqual(userTaints(after), OPERATOR.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })));
        assert.strictEqual(after.spec?.unschedulable ?? false, before.spec?.unschedulable ?? false);

        const agent = await daemonSetPodOn("worker-a");
        assert.notStrictEqual(agent!.metadata!.uid, oldAgent!.metadata!.uid);
        assert.ok(cidrContains(planned, agent!.status!.podIP!), `agent ${agent!.status!.podIP} in ${planned}`);
        assert.strictEqual((await backupOf("worker-a")).phase, "restored");
        await assertControllerManagerHealthy();

        // a re-run of every step (pulumi up after a partial failure) changes nothing
        const uid = after.metadata!.uid;
        assert.strictEqual((await createStep(inputs("drain", "worker-a", { plannedPodCIDR: planned }))).outs.evicted.length, 0);
        assert.strictEqual((await createStep(inputs("delete-node", "worker-a"))).outs.result, "already-re-registered");
        await createStep(inputs("rejoin", "worker-a", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 60 }));
        const again = await core.readNode({ name: "worker-a" });
        assert.strictEqual(again.metadata!.uid, uid);
        assert.deepStrictEqual(again.metadata?.labels, before.metadata?.labels);
    });

    it("a CNI that still hands out old addresses fails the rejoin naming the pod; fixed, a re-run converges", async () => {
        const planned = "10.48.5.0/24";
        // worker-e was drained above
        await createStep(inputs("delete-node", "worker-e"));
        staleCni.set("worker-e", OLD_POD_CIDR);
        await kubeletRegistersAgain("worker-e");
        await assert.rejects(
            createStep(inputs("rejoin", "worker-e", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 5 })),
            new RegExp(`^Error: node worker-e: the node's pods coming back in the new subnet did not happen within 5s: pods outside ${planned.replace(/\./g, "\\.")}: ${namespace}/node-agent-[a-z0-9]+ 10\\.244\\.0\\.\\d+ \\(the CNI still hands out old addresses: check its cleanup\\)$`),
        );
        staleCni.delete("worker-e");
        const { outs } = await createStep(inputs("rejoin", "worker-e", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 60 }));
        assert.strictEqual(outs.podCIDR, planned);
        assert.ok(cidrContains(planned, (await daemonSetPodOn("worker-e"))!.status!.podIP!));
    });

    it("a worker whose address moves (nodeAddresses): the rejoin waits until the Node reports the new InternalIP, naming what it reports meanwhile", async () => {
        const planned = "10.48.7.0/24";
        const oldIp = nodeIPs.get("worker-addr")!;
        const newIp = "192.168.60.70";
        await createStep(inputs("drain", "worker-addr", { plannedPodCIDR: planned }));
        await createStep(inputs("delete-node", "worker-addr"));
        // a kubelet whose --node-ip was not moved registers at the old address
        await kubeletRegistersAgain("worker-addr");
        await assert.rejects(
            createStep(inputs("rejoin", "worker-addr", { plannedPodCIDR: planned, internalIP: newIp, rejoinTimeoutSeconds: 3 })),
            new RegExp(`node worker-addr: InternalIP ${newIp.replace(/\./g, "\\.")} on the Node did not happen within 3s: the kubelet does not report InternalIP ${newIp.replace(/\./g, "\\.")} \\(it reports ${oldIp.replace(/\./g, "\\.")}\\); check --node-ip`),
        );
        // once the kubelet runs with the new --node-ip it reports that address
        await core.patchNodeStatus({ name: "worker-addr", body: { status: { addresses: [{ type: "InternalIP", address: newIp }, { type: "Hostname", address: "worker-addr" }] } } }, mergePatch());
        const { outs } = await createStep(inputs("rejoin", "worker-addr", { plannedPodCIDR: planned, internalIP: newIp, rejoinTimeoutSeconds: 60 }));
        assert.strictEqual(outs.podCIDR, planned);
        const after = await core.readNode({ name: "worker-addr" });
        assert.deepStrictEqual(after.status?.addresses?.filter((a) => a.type === "InternalIP").map((a) => a.address), [newIp]);
        const check = await nodeApiStepsProvider.check!({}, inputs("rejoin", "worker-addr", { plannedPodCIDR: planned, internalIP: "192.168.60.070" }));
        assert.match(JSON.stringify(check.failures), /internalIP .* must be the node's new address in normal form/);
    });

    it("registers like pulumi.dynamic.Resource: the SDK's serialized provider, the kubeconfig as a secret", async () => {
        const drain = await registrationOf(() => new NodeDrain("worker-f-drain", { kubeconfig, node: "worker-f", runId: RUN_ID, plannedPodCIDR: "10.48.6.0/24" }));
        assert.strictEqual(drain.type, "pulumi-nodejs:dynamic/cidr-migration:NodeDrain");
        assert.strictEqual(drain.inputs[PROVIDER_KEY], await serializeDynamicProvider(nodeApiStepsProvider));
        assert.ok(isSecret(drain.inputs.kubeconfig), "kubeconfig goes to the engine as a secret");
        assert.ok(drain.additionalSecretOutputs.includes("kubeconfig"));
        const rejoin = await registrationOf(() => new NodeRejoin("worker-f-rejoin", { kubeconfig, node: "worker-f", runId: RUN_ID, plannedPodCIDR: "10.48.6.0/24" }));
        assert.strictEqual(rejoin.type, "pulumi-nodejs:dynamic/cidr-migration:NodeRejoin");
        assert.strictEqual(rejoin.inputs.step, "rejoin");
    });

    it("a crash between Node delete and re-registration, then a re-run in a new provider host, converges from the durable backup", async () => {
        const planned = "10.48.6.0/24";
        const before = await core.readNode({ name: "worker-f" });
        const provider = await serializeDynamicProvider(nodeApiStepsProvider);
        const props = (step: string, extra: Props = {}): Props => ({ ...inputs(step, "worker-f", extra), [PROVIDER_KEY]: provider });
        const urn = (step: string) => urnOf(`pulumi-nodejs:dynamic/cidr-migration:${step}`, `worker-f-${step}`);

        const first = await startProviderHost();
        hosts.push(first);
        for (const [step, extra] of [["drain", { plannedPodCIDR: planned }], ["delete-node", {}]] as const) {
            const checked = await first.check(urn(step), {}, props(step, extra));
            assert.deepStrictEqual(checked.failures, []);
            await first.create(urn(step), checked.inputs);
        }
        await assert.rejects(core.readNode({ name: "worker-f" }), (err: { code?: number }) => err.code === 404);
        // pulumi up starts the rejoin and dies while it waits for the kubelet
        const pending = first.create(urn("rejoin"), props("rejoin", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 120 })).catch((err: Error) => err);
        await eventually("the rejoin step waiting", async () => (first.output().includes("node worker-f rejoin") ? true : undefined));
        process.kill(first.pid, "SIGKILL");
        assert.ok((await pending) instanceof Error, "the first run did not finish");
        assert.match(first.output(), /node worker-f drain \+[\d.]+s: backed up 6 labels, 0 taints, \d+ annotations to ConfigMap kube-system\/cidr-migration-backup-worker-f-[0-9a-f]{8}/);
        assert.match(first.output(), /node worker-f delete-node \+[\d.]+s: deleted Node \(uid /);
        assert.ok(!first.output().includes("client-key-data"), "the kubeconfig is not in the host's output");

        // the node came back meanwhile, with none of its labels
        await kubeletRegistersAgain("worker-f");
        const fresh = await core.readNode({ name: "worker-f" });
        assert.strictEqual(fresh.metadata?.labels?.["example.com/crash-test"], undefined);

        // the re-run: the engine retries the pending rejoin; even a repeated delete step must not delete the new Node
        const second = await startProviderHost();
        hosts.push(second);
        const redelete = await second.create(urn("delete-node"), props("delete-node"));
        assert.strictEqual(redelete.outputs.result, "already-re-registered");
        assert.strictEqual((await core.readNode({ name: "worker-f" })).metadata!.uid, fresh.metadata!.uid);
        const rejoined = await second.create(urn("rejoin"), props("rejoin", { plannedPodCIDR: planned, rejoinTimeoutSeconds: 60 }));
        assert.strictEqual(rejoined.outputs.podCIDR, planned);
        assert.strictEqual(rejoined.outputs.kubeconfig, undefined);
        const after = await core.readNode({ name: "worker-f" });
        assert.deepStrictEqual(after.metadata?.labels, before.metadata?.labels);
        assert.strictEqual(after.spec?.podCIDR, planned);
        assert.match(second.output(), /node worker-f rejoin \+[\d.]+s: verified: podCIDR 10\.48\.6\.0\/24, metadata as before the move, 1 DaemonSet pod\(s\) back/);
        await assertControllerManagerHealthy();
    });

    it("with every node in the new range, KCM runs with --allocate-node-cidrs=true again and allocates around the planned subnets", async () => {
        // the drain-only test nodes never left the old range: in a real rollout they would move too
        for (const name of ["worker-b", "worker-c", "worker-d", "worker-dns-1", "worker-dns-2"]) await core.deleteNode({ name });
        const nodes = (await core.listNode()).items;
        assert.ok(nodes.every((n) => cidrContains(NEW_POD_CIDR, n.spec!.podCIDR!)), nodes.map((n) => `${n.metadata!.name} ${n.spec?.podCIDR}`).join(", "));
        await cluster().restartControllerManager({ allocateNodeCidrs: true, clusterCidr: NEW_POD_CIDR });
        await assertControllerManagerHealthy();
        const added = await addNode("worker-g");
        assert.ok(cidrContains(NEW_POD_CIDR, added.spec!.podCIDR!));
        assert.ok(!nodes.some((n) => n.spec!.podCIDR === added.spec!.podCIDR), `new node got ${added.spec!.podCIDR}, already planned for another`);
        await assertControllerManagerHealthy();
    });

    it("addresses alone: KCM keeps allocating, and the rejoin takes the subnet it gives the re-registered Node, inside the pod range", async () => {
        const newIp = "192.168.60.71";
        await eventually("node-agent pod on worker-g", () => daemonSetPodOn("worker-g"));
        const before = await core.readNode({ name: "worker-g" });
        await createStep(inputs("drain", "worker-g", { plannedPodCIDR: NEW_POD_CIDR, oldPodCIDR: before.spec!.podCIDR }));
        await createStep(inputs("delete-node", "worker-g"));
        nodeIPs.set("worker-g", newIp);
        await kubeletRegistersAgain("worker-g");
        const { outs } = await createStep(inputs("rejoin", "worker-g", { plannedPodCIDR: NEW_POD_CIDR, podCidrFromController: true, internalIP: newIp, rejoinTimeoutSeconds: 60 }));
        const after = await core.readNode({ name: "worker-g" });
        assert.notStrictEqual(after.metadata!.uid, before.metadata!.uid, "re-registered");
        assert.strictEqual(outs.podCIDR, after.spec!.podCIDR, "the step reports the subnet the Node holds");
        assert.ok(cidrContains(NEW_POD_CIDR, outs.podCIDR as string) && outs.podCIDR !== NEW_POD_CIDR, `${outs.podCIDR} is a node subnet of ${NEW_POD_CIDR}`);
        assert.strictEqual(outs.assignedPodCIDR, false, "KCM gave it, the step did not");
        assert.ok(cidrContains(outs.podCIDR as string, (await daemonSetPodOn("worker-g"))!.status!.podIP!), "its DaemonSet pod back in that subnet");
        assert.deepStrictEqual(after.metadata?.labels?.pool, before.metadata?.labels?.pool);
        await assertControllerManagerHealthy();
    });

    it("address-agents, once the old address is gone: the node's host-network DaemonSet pods restart, and the step waits until the CNI's annotation names the new address", async () => {
        const [oldIp, newIp] = ["192.168.50.16", "192.168.60.71"];
        await apps.createNamespacedDaemonSet({
            namespace,
            body: {
                metadata: { name: "cni-agent" },
                spec: {
                    selector: { matchLabels: { app: "cni-agent" } },
                    template: {
                        metadata: { labels: { app: "cni-agent" } },
                        spec: { hostNetwork: true, automountServiceAccountToken: false, tolerations: [{ operator: "Exists" }], containers: [{ name: "agent", image: "registry.k8s.io/pause:3.2" }] },
                    },
                },
            },
        });
        const agentOn = async () => (await core.listNamespacedPod({ namespace, fieldSelector: "spec.nodeName=worker-g", labelSelector: "app=cni-agent" }))
            .items.find((p) => !p.metadata?.deletionTimestamp && p.status?.phase === "Running");
        const first = await eventually("cni-agent on worker-g", agentOn);
        const podNetworkAgent = (await daemonSetPodOn("worker-g"))!.metadata!.uid;
        // what an agent started while both addresses were on the node detected
        const annotate = (ip: string) => core.patchNode({ name: "worker-g", body: { metadata: { annotations: { "flannel.alpha.coreos.com/public-ip": ip } } } }, mergePatch());
        await annotate(oldIp);
        const args = { internalIP: newIp, oldInternalIP: oldIp };
        await assert.rejects(
            createStep(inputs("address-agents", "worker-g", { ...args, rejoinTimeoutSeconds: 3 })),
            /the node's agents on 192\.168\.60\.71 did not happen within 3s: the Node's flannel\.alpha\.coreos\.com\/public-ip names 192\.168\.50\.16 \(the old address\): the CNI agent does not detect 192\.168\.60\.71/,
        );
        const second = await eventually("a new cni-agent pod", async () => { const p = await agentOn(); return p && p.metadata!.uid !== first.metadata!.uid ? p : undefined; });
        // the agent that starts now finds only the new address on the node, and writes it
        const step = createStep(inputs("address-agents", "worker-g", { ...args, rejoinTimeoutSeconds: 60 }));
        const third = await eventually("the agent restarted again", async () => { const p = await agentOn(); return p && p.metadata!.uid !== second.metadata!.uid ? p : undefined; });
        await annotate(newIp);
        const { outs } = await step;
        assert.deepStrictEqual(outs.replacedPods, [`${namespace}/${second.metadata!.name}`]);
        assert.deepStrictEqual(outs.cniAnnotations, ["flannel.alpha.coreos.com/public-ip"]);
        assert.strictEqual((await agentOn())!.metadata!.uid, third.metadata!.uid);
        assert.strictEqual((await daemonSetPodOn("worker-g"))!.metadata!.uid, podNetworkAgent, "a pod on the pod network keeps running");
    });
});
