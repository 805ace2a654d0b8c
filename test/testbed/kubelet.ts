// A simulated kubelet: there is no kubelet on these machines, so tests create
// the Node object the way a kubelet v1.20 does when it registers (name, default
// labels, addresses, capacity, then a Ready status through the status
// subresource). Re-registering drops whatever an operator had added (extra
// labels, taints), which the migration must restore after a node move.
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, V1Node, V1NodeCondition } from "@kubernetes/client-node";
import { sleep } from "./processes";

export const SIMULATED_KUBELET_VERSION = "v1.20.2";

export interface RegisterNodeOptions {
    name: string;
    internalIP: string;
    /** added on top of the kubelet's default labels (as --node-labels would) */
    labels?: Record<string, string>;
    /** wait until KCM has lifted the not-ready taint (default true; needs a running KCM) */
    waitReady?: boolean;
}

const NOT_READY_TAINT = "node.kubernetes.io/not-ready";
const READY_TIMEOUT_MS = 30_000;

/** The labels a kubelet puts on its Node by itself (kubelet_node_status.go). */
export function defaultNodeLabels(name: string): Record<string, string> {
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
    };
}

function readyConditions(now: Date): V1NodeCondition[] {
    const condition = (type: string, status: string, reason: string, message: string): V1NodeCondition => ({
        type, status, reason, message, lastHeartbeatTime: now, lastTransitionTime: now,
    });
    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ];
}

function isNotFound(err: unknown): boolean {
    return (err as { code?: number }).code === 404;
}

export async function registerNode(kc: KubeConfig, opts: RegisterNodeOptions): Promise<V1Node> {
    const core = kc.makeApiClient(CoreV1Api);
    const resources = { cpu: "2", memory: "4026372Ki", pods: "110", "ephemeral-storage": "20511312Ki", "hugepages-2Mi": "0" };
    await core.createNode({
        body: {
            apiVersion: "v1",
            kind: "Node",
            metadata: {
                name: opts.name,
                labels: { ...defaultNodeLabels(opts.name), ...(opts.labels ?? {}) },
                annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" },
            },
            spec: {},
            // a kubelet sends its initial status with the create; conditions follow in its first status update
            status: {
                addresses: [{ type: "InternalIP", address: opts.internalIP }, { type: "Hostname", address: opts.name }],
                capacity: resources,
                allocatable: { ...resources, cpu: "2", memory: "3923972Ki", "ephemeral-storage": "18903225108" },
                daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
                nodeInfo: {
                    architecture: "amd64", operatingSystem: "linux", osImage: "Debian GNU/Linux 12 (bookworm)",
                    kernelVersion: "6.1.0-testbed", containerRuntimeVersion: "containerd://1.6.20",
                    kubeletVersion: SIMULATED_KUBELET_VERSION, kubeProxyVersion: SIMULATED_KUBELET_VERSION,
                    machineID: "", systemUUID: "", bootID: "",
                },
            },
        },
    });
    // merge patch on the status subresource: no resourceVersion, so no conflict with
    // KCM setting spec.podCIDR at the same moment
    await core.patchNodeStatus(
        { name: opts.name, body: { status: { conditions: readyConditions(new Date()) } } },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    if (opts.waitReady === false) return core.readNode({ name: opts.name });
    return waitUntilSchedulable(kc, opts.name, READY_TIMEOUT_MS);
}

/**
 * The apiserver taints a new Node node.kubernetes.io/not-ready; KCM's node
 * lifecycle controller lifts it once the Node reports Ready. Waiting for that
 * returns the Node as it looks in a live cluster.
 */
async function waitUntilSchedulable(kc: KubeConfig, name: string, timeoutMs: number): Promise<V1Node> {
    const core = kc.makeApiClient(CoreV1Api);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const node = await core.readNode({ name });
        if (!(node.spec?.taints ?? []).some((taint) => taint.key === NOT_READY_TAINT)) return node;
        if (Date.now() > deadline) {
            throw new Error(`node ${name} still has the ${NOT_READY_TAINT} taint after ${timeoutMs} ms: is kube-controller-manager running (node lifecycle controller)?`);
        }
        await sleep(100);
    }
}

/** Polls until KCM has set spec.podCIDR on the Node; rejects after timeoutMs naming the node. */
export async function waitForPodCIDR(kc: KubeConfig, name: string, timeoutMs: number): Promise<string> {
    const core = kc.makeApiClient(CoreV1Api);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const node = await core.readNode({ name }).catch((err) => {
            if (isNotFound(err)) return undefined;
            throw err;
        });
        const podCIDR = node?.spec?.podCIDR;
        if (podCIDR) return podCIDR;
        if (Date.now() > deadline) {
            throw new Error(`node ${name} got no spec.podCIDR within ${timeoutMs} ms (${node ? "node exists" : "node not found"}): is kube-controller-manager running with --allocate-node-cidrs=true?`);
        }
        await sleep(100);
    }
}

/** What a node move does: the Node object is deleted, then its kubelet registers it afresh (default labels only). */
export async function reregisterNode(kc: KubeConfig, name: string, internalIP: string): Promise<V1Node> {
    const core = kc.makeApiClient(CoreV1Api);
    await core.deleteNode({ name }).catch((err) => {
        if (!isNotFound(err)) throw err;
    });
    // wait until the old object is gone, or the create below would hit AlreadyExists
    for (;;) {
        const exists = await core.readNode({ name }).then(() => true, (err) => {
            if (isNotFound(err)) return false;
            throw err;
        });
        if (!exists) break;
        await sleep(100);
    }
    return registerNode(kc, { name, internalIP });
}
