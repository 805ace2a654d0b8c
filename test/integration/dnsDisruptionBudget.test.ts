// The DNS pods' disruption budget (nodeRollout.dnsDisruptionBudget) against a real control plane of the test-bed
// version: KCM's disruption controller computes the budget, the product's own drain step evicts through the
// Eviction API, and the pod side of kubelet and scheduler is simulated (nodeRolloutSimulation.ts). The case is
// kubeadm's: both DNS replicas on the node that drains first.
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import * as assert from "assert";
import * as fs from "fs";
import { dnsDisruptionBudgetProvider } from "../../dynamic-providers/dnsDisruptionBudget";
import { nodeApiStepsProvider } from "../../dynamic-providers/nodeApiSteps";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";
import { eventually, PodSimulator, startPodSimulator } from "./nodeRolloutSimulation";

const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const POLICY = { group: "policy", version: "v1", plural: "poddisruptionbudgets" };
type Budget = { metadata: { name: string; uid: string; labels?: Record<string, string> }; spec: Record<string, unknown>; status?: { disruptionsAllowed?: number; currentHealthy?: number } };

describe("the DNS pods' disruption budget (real kube-apiserver + KCM's disruption controller)", function () {
    this.timeout(300_000);
    const cluster = useTestCluster({ serviceCidr: "10.96.0.0/12", podCidr: "10.244.0.0/16" });
    let kc: KubeConfig;
    let core: CoreV1Api;
    let custom: CustomObjectsApi;
    let kubeconfig: string;
    let sim: PodSimulator;
    const namespaces: string[] = [];

    async function budgets(namespace: string): Promise<Budget[]> {
        return ((await custom.listNamespacedCustomObject({ ...POLICY, namespace })) as { items: Budget[] }).items;
    }

    /** A DNS Deployment of two replicas, both on `node`, and its Service, as kubeadm deploys CoreDNS. */
    async function dnsOn(node: string): Promise<string> {
        const namespace = await freshNamespace(kc, "dns-budget");
        namespaces.push(namespace);
        await core.createNamespacedService({ namespace, body: { metadata: { name: "kube-dns" }, spec: { selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }] } } });
        await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
            namespace,
            body: {
                metadata: { name: "coredns" },
                spec: {
                    replicas: 2,
                    selector: { matchLabels: { "k8s-app": "kube-dns" } },
                    template: {
                        metadata: { labels: { "k8s-app": "kube-dns" } },
                        spec: { automountServiceAccountToken: false, nodeSelector: { "dns-budget.test/node": node }, containers: [{ name: "coredns", image: "registry.k8s.io/coredns/coredns:v1.14.6" }] },
                    },
                },
            },
        });
        await eventually("both DNS replicas Ready", async () => ((await readyDnsPods(namespace)).length === 2 ? true : undefined));
        return namespace;
    }

    async function readyDnsPods(namespace: string) {
        const pods = (await core.listNamespacedPod({ namespace, labelSelector: "k8s-app=kube-dns" })).items;
        return pods.filter((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
    }

    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async function step(step: "open" | "close", namespace: string): Promise<{ outs: Record<string, any> }> {
        const { outs } = await dnsDisruptionBudgetProvider.create!({ kubeconfig, step, namespace, name: "kube-dns", trigger: "run-1", version: "1" });
        return { outs: outs ?? {} };
    }

    before(async function () {
        kc = cluster().kubeConfig();
        core = kc.makeApiClient(CoreV1Api);
        custom = kc.makeApiClient(CustomObjectsApi);
        kubeconfig = fs.readFileSync(cluster().kubeconfigPath, "utf8");
        sim = startPodSimulator(kc, { namespaces });
        await registerNode(kc, { name: "node-a", internalIP: "192.168.60.10", labels: { "dns-budget.test/node": "a" } });
        await registerNode(kc, { name: "node-b", internalIP: "192.168.60.11", labels: { "dns-budget.test/node": "b" } });
    });

    after(async () => {
        await sim?.stop();
    });

    afterEach(() => {
        assert.deepStrictEqual(sim.errors, [], "the pod simulator hit API errors");
    });

    it("opened, the drain of the node with both replicas keeps one Ready at every moment; closed, the budget is gone", async () => {
        const namespace = await dnsOn("a");
        const { outs } = await step("open", namespace);
        assert.deepStrictEqual(outs.actions, [`added PodDisruptionBudget ${namespace}/kube-dns-cidr-migration (maxUnavailable 1 over the ${namespace}/kube-dns pods)`]);
        assert.strictEqual(outs.budget, `${namespace}/kube-dns-cidr-migration`);
        assert.strictEqual(outs.kubeconfig, undefined, "the kubeconfig is never an output");
        const [budget] = await budgets(namespace);
        assert.deepStrictEqual(budget.spec, { maxUnavailable: 1, selector: { matchLabels: { "k8s-app": "kube-dns" } } });
        assert.strictEqual(budget.status?.disruptionsAllowed, 1, "the open step returned once the disruption controller had computed it");

        // a re-run (an interrupted run's second `up`) keeps the same budget
        await step("open", namespace);
        assert.deepStrictEqual((await budgets(namespace)).map((b) => b.metadata.uid), [budget.metadata.uid]);

        // the replacements may only go to node-b: as when the drained node is the only one both replicas ran on
        await core.patchNode({ name: "node-b", body: { metadata: { labels: { "dns-budget.test/node": "a" } } } }, mergePatch());
        let fewestReady = 2;
        let sampling = true;
        const sampler = (async () => {
            while (sampling) {
                fewestReady = Math.min(fewestReady, (await readyDnsPods(namespace)).length);
                await new Promise((resolve) => setTimeout(resolve, 50));
            }
        })();
        try {
            const drained = await nodeApiStepsProvider.create!({ step: "drain", kubeconfig, node: "node-a", runId: "run-1", version: "1", plannedPodCIDR: "10.48.1.0/24", drainTimeoutSeconds: 120, evictionRetrySeconds: 1 });
            assert.strictEqual((drained.outs!.evicted as string[]).filter((p) => p.startsWith(`${namespace}/coredns-`)).length, 2, "both replicas were evicted");
            await eventually("two DNS replicas Ready on node-b", async () => {
                const ready = await readyDnsPods(namespace);
                return ready.length === 2 && ready.every((p) => p.spec?.nodeName === "node-b") ? true : undefined;
            });
        } finally {
            sampling = false;
            await sampler;
        }
        assert.strictEqual(fewestReady, 1, "one DNS replica was Ready at every moment of the drain, and the second waited for the first's replacement");

        const closed = await step("close", namespace);
        assert.deepStrictEqual(closed.outs.actions, [`removed PodDisruptionBudget ${namespace}/kube-dns-cidr-migration`]);
        assert.deepStrictEqual(await budgets(namespace), []);
        assert.deepStrictEqual((await step("close", namespace)).outs.actions, ["no budget of ours was left"], "closing again is a no-op");
        await core.patchNode({ name: "node-a", body: { spec: { unschedulable: false } } }, mergePatch());
        await core.patchNode({ name: "node-b", body: { metadata: { labels: { "dns-budget.test/node": "b" } } } }, mergePatch());
    });

    it("a budget of the user's over the DNS pods is left alone and none is added; close removes only ours", async () => {
        const namespace = await dnsOn("b");
        await custom.createNamespacedCustomObject({ ...POLICY, namespace, body: { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "coredns" }, spec: { minAvailable: 1, selector: { matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns"] }] } } } });
        const { outs } = await step("open", namespace);
        assert.deepStrictEqual(outs.actions, [`none added: PodDisruptionBudget ${namespace}/coredns already covers the ${namespace}/kube-dns pods`]);
        assert.deepStrictEqual((await step("close", namespace)).outs.actions, ["no budget of ours was left"]);
        assert.deepStrictEqual((await budgets(namespace)).map((b) => b.metadata.name), ["coredns"], "the user's budget stays");
    });

    it("a foreign budget under our name stops the open step with what to do, and is not touched", async () => {
        const namespace = await dnsOn("b");
        await custom.createNamespacedCustomObject({ ...POLICY, namespace, body: { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: "kube-dns-cidr-migration" }, spec: { maxUnavailable: 1, selector: { matchLabels: { app: "other" } } } } });
        await assert.rejects(step("open", namespace), new RegExp(`PodDisruptionBudget ${namespace}/kube-dns-cidr-migration exists and is not this tool's .*rename it`));
        assert.deepStrictEqual((await budgets(namespace)).map((b) => b.spec.selector), [{ matchLabels: { app: "other" } }]);
    });
});
