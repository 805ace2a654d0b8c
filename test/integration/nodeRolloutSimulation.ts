// The parts of a live cluster that these machines lack, for the node-rollout tests: a scheduler, and the pod
// side of the kubelet and the CNI. It drives the real kube-apiserver and controller-manager only through the API,
// as those components would: it binds Pending pods (pods/binding), reports bound pods Running and Ready with an
// address from their node's spec.podCIDR (the CNI's IPAM), and finishes graceful deletions (the kubelet's final
// delete with grace 0 once containers stopped). ReplicaSet, DaemonSet, disruption (PDB) and pod-GC controllers are
// KCM's own. Only pods in the namespaces it is given are touched.
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, V1Node, V1Pod } from "@kubernetes/client-node";
import { Address4 } from "ip-address";
import { sleep } from "../testbed/processes";

/** Milliseconds a terminating pod keeps running before the simulated kubelet's final delete. */
export const LAMEDUCK_ANNOTATION = "cidr-migration.test/lameduck-ms";

export interface PodSimulatorOptions {
    namespaces: string[];
    /** Nodes whose CNI still hands out addresses from this (old) range: a failed CNI cleanup. */
    staleCni?: Map<string, string>;
    intervalMs?: number;
}

export interface PodSimulator {
    stop(): Promise<void>;
    /** Unexpected API failures seen by the loop (a test asserts this stays empty). */
    errors: string[];
}

const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** The node a DaemonSet pod is pinned to (since 1.12 the DaemonSet controller uses node affinity, not nodeName). */
function affinityNode(pod: V1Pod): string | undefined {
    const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
    for (const term of terms) {
        const field = term.matchFields?.find((f) => f.key === "metadata.name" && f.operator === "In");
        if (field?.values?.length) return field.values[0];
    }
    return undefined;
}

function schedulable(node: V1Node, pod: V1Pod): boolean {
    if (node.spec?.unschedulable) return false;
    const labels = node.metadata?.labels ?? {};
    if (Object.entries(pod.spec?.nodeSelector ?? {}).some(([key, value]) => labels[key] !== value)) return false;
    return !(node.spec?.taints ?? []).some((t) => t.effect === "NoSchedule" || t.effect === "NoExecute");
}

function isNotFound(err: unknown): boolean {
    return (err as { code?: number }).code === 404;
}

export function startPodSimulator(kc: KubeConfig, opts: PodSimulatorOptions): PodSimulator {
    const core = kc.makeApiClient(CoreV1Api);
    const errors: string[] = [];
    const nextHost = new Map<string, number>();
    const terminatingSince = new Map<string, number>();
    let running = true;

    function addressIn(range: string, key: string): string {
        const n = (nextHost.get(key) ?? 1) + 1;
        nextHost.set(key, n);
        const base = new Address4(range).startAddress().bigInt();
        return Address4.fromBigInt(base + BigInt(n)).correctForm();
    }

    async function tick(): Promise<void> {
        const nodes = new Map((await core.listNode()).items.map((n) => [n.metadata!.name!, n]));
        for (const namespace of opts.namespaces) {
            const pods = (await core.listNamespacedPod({ namespace })).items;
            for (const pod of pods) {
                const name = pod.metadata!.name!;
                const nodeName = pod.spec?.nodeName;
                try {
                    if (pod.metadata?.deletionTimestamp) {
                        // a pod annotated with LAMEDUCK_ANNOTATION runs on that long after its deletion began (CoreDNS's lameduck)
                        const uid = pod.metadata.uid!;
                        if (!terminatingSince.has(uid)) terminatingSince.set(uid, Date.now());
                        if (Date.now() - terminatingSince.get(uid)! < Number(pod.metadata.annotations?.[LAMEDUCK_ANNOTATION] ?? 0)) continue;
                        // the kubelet stopped the containers: the final delete
                        if (nodeName) await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
                        continue;
                    }
                    if (!nodeName) {
                        const pinned = affinityNode(pod);
                        const target = pinned
                            ? (nodes.has(pinned) ? pinned : undefined)
                            : [...nodes.values()].find((n) => schedulable(n, pod))?.metadata?.name;
                        if (target) {
                            await core.createNamespacedPodBinding({ name, namespace, body: { metadata: { name, namespace }, target: { kind: "Node", name: target } } });
                        }
                        continue;
                    }
                    const node = nodes.get(nodeName);
                    if (pod.status?.phase === "Running" || !node) continue;
                    const hostIP = node.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
                    const range = opts.staleCni?.get(nodeName) ?? node.spec?.podCIDR;
                    if (!pod.spec?.hostNetwork && !range) continue; // no subnet yet: the CNI cannot start the sandbox
                    const podIP = pod.spec?.hostNetwork ? hostIP : addressIn(range!, `${nodeName}/${range}`);
                    const now = new Date();
                    const condition = (type: string) => ({ type, status: "True", lastTransitionTime: now });
                    await core.patchNamespacedPodStatus({
                        name, namespace,
                        body: {
                            status: {
                                phase: "Running", hostIP, podIP, podIPs: podIP ? [{ ip: podIP }] : [], startTime: now,
                                conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map(condition),
                            },
                        },
                    }, mergePatch());
                } catch (err) {
                    if (!isNotFound(err) && (err as { code?: number }).code !== 409) errors.push(`${namespace}/${name}: ${(err as Error).message.split("\n")[0]}`);
                }
            }
        }
    }

    const loop = (async () => {
        while (running) {
            await tick().catch((err) => { errors.push(`tick: ${(err as Error).message.split("\n")[0]}`); });
            await sleep(opts.intervalMs ?? 150);
        }
    })();

    return {
        errors,
        async stop() {
            running = false;
            await loop;
        },
    };
}

/** Polls the API until `probe` returns a value; rejects naming `what` after timeoutMs. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
        await sleep(100);
    }
}
