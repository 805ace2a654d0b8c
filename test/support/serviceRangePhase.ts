// The control-plane phase of a Service range move as the graph runs it: every apiserver restarted on the new
// --service-cluster-ip-range, then, where the apiserver keeps its ranges in ServiceCIDR objects (1.33+), the
// service-cidr-open step (a ServiceCIDR for the new range, the old default retired), without which no Service can
// be created at a planned address in the new range.
import { KubeConfig } from "@kubernetes/client-node";
import { MigrationConfig } from "../../lib/config/migrationConfig";
import { kubeRest } from "../../lib/serviceMove/kubeRest";
import { closeServiceCidrs, openServiceCidrs, planServiceCidrSwitch } from "../../lib/serviceMove/serviceCidrs";
import { TestCluster } from "../testbed/controlPlane";
import { apiserverFeatureGates } from "../testbed/kubeVersion";

/** 1.33 needs the gate preflight asks for (SERVICE_ALLOCATOR_DUAL_WRITE), as an operator would have set it. */
export const APISERVER_FEATURE_GATES = apiserverFeatureGates();

export async function servesServiceCidrs(kc: KubeConfig): Promise<boolean> {
    const rest = await kubeRest(kc, { maxSockets: 2 });
    try {
        return (await rest.getOptional("/apis/networking.k8s.io/v1/servicecidrs")) !== undefined;
    } catch {
        return false;
    } finally {
        rest.close();
    }
}

export async function enterNewServiceRange(cluster: TestCluster, from: string, to: string): Promise<void> {
    await cluster.restartApiserver({ serviceClusterIpRange: to, featureGates: APISERVER_FEATURE_GATES });
    if (!(await servesServiceCidrs(cluster.kubeConfig()))) return;
    const rest = await kubeRest(cluster.kubeConfig(), { maxSockets: 2 });
    try {
        await openServiceCidrs(rest, planServiceCidrSwitch(from, to));
    } finally {
        rest.close();
    }
}

/** service-cidr-close, where the API is served: the apiserver's new default replaces the old one. */
export async function leaveOldServiceRange(cluster: TestCluster, from: string, to: string): Promise<void> {
    if (!(await servesServiceCidrs(cluster.kubeConfig()))) return;
    const rest = await kubeRest(cluster.kubeConfig(), { maxSockets: 2 });
    try {
        await closeServiceCidrs(rest, planServiceCidrSwitch(from, to));
    } finally {
        rest.close();
    }
}

/** The stack config of a Service-range move on a test bed with one registered node (node-1) and no CNI. */
export function serviceMoveConfig(from: string, to: string, allowLoadBalancerRecreate = false): MigrationConfig {
    return {
        serviceCidr: { from, to },
        podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
        platform: "kubeadm",
    cni: "none",
        kubeconfig: {},
        etcd: { endpoints: ["http://127.0.0.1:2379"] },
        nodes: [{ name: "node-1", host: "127.0.0.1", role: "worker", port: 22, user: "root" }],
        nodeAddresses: [],
        ssh: { user: "root" },
        dns: { namespace: "kube-system", name: "kube-dns" },
        nodeRollout: { strategy: "reregister", maxUnavailable: 1, drainTimeoutSeconds: 60, dnsDisruptionBudget: true },
        services: { strategy: "recreate", parallelism: 4, allowLoadBalancerRecreate, bridgeOldIps: false, routeNewIpsFirst: true, moveInPlace: false },
        snapshot: { directory: "/unused", trigger: "t" },
    };
}
