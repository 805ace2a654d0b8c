// Seeds a control plane with what a kubeadm cluster running Calico holds in its
// old ranges: Services of every shape with their Deployments, kube-dns at the
// tenth IP, kubeadm's ConfigMaps, Calico's IPPool/IPAM objects and four nodes
// with podCIDRs from KCM. Returns a SeededWorkload built from what the API
// server answered (allocated IPs, nodePorts, podCIDRs), so discovery can be
// compared against it exactly. Runtime code of the sandbox: no mocha here.
import {
    ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions,
    V1CustomResourceDefinition, V1Deployment, V1Pod, V1Service, V1ServicePort,
} from "@kubernetes/client-node";
import * as fs from "fs";
import * as path from "path";
import { parse, parseDocument, stringify } from "yaml";
import { registerNode, waitForPodCIDR } from "./kubelet";
import { apiserverFeatureGates, resolveTestBedVersion } from "./kubeVersion";
import { sleep } from "./processes";

/** The old ranges the sandbox is seeded in (kubeadm's and Calico's/flannel's usual defaults). */
export const OLD_SERVICE_CIDR = "10.96.0.0/12";
export const OLD_POD_CIDR = "10.244.0.0/16";
export const OLD_NODE_CIDR_MASK_SIZE = 24;
/** kubeadm puts kube-dns at the tenth IP of the service range */
/** The version the test bed's binaries are, and what the seeded kubeadm objects say they run. */
export const KUBE_VERSION = `v${resolveTestBedVersion().kube}`;
export const OLD_CLUSTER_DNS_IP = "10.96.0.10";
export const CALICO_BLOCK_SIZE = 26;

const FIXTURES_DIR = path.join(__dirname, "..", "fixtures", "testbed");

export type ServiceShape =
    | "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName" | "Headless"
    | "ExternalTrafficPolicyLocal" | "PinnedClusterIP" | "MultiPortNamedTargetPorts" | "SessionAffinityClientIP"
    | "SelectorlessManualEndpoints" | "LastAppliedConfiguration" | "OwnerReferences" | "ClusterDNS" | "APIServer";

export const ALL_SERVICE_SHAPES: readonly ServiceShape[] = [
    "ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "Headless",
    "ExternalTrafficPolicyLocal", "PinnedClusterIP", "MultiPortNamedTargetPorts", "SessionAffinityClientIP",
    "SelectorlessManualEndpoints", "LastAppliedConfiguration", "OwnerReferences", "ClusterDNS", "APIServer",
];

export interface SeededServicePort {
    name?: string; protocol: string; port: number; targetPort?: number | string; nodePort?: number;
}

export interface SeededService {
    namespace: string;
    name: string;
    type: "ClusterIP" | "NodePort" | "LoadBalancer" | "ExternalName";
    shapes: ServiceShape[];
    /** an IP, "None" for headless, undefined for ExternalName */
    clusterIP?: string;
    clusterIPs?: string[];
    ports: SeededServicePort[];
    selector?: Record<string, string>;
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    sessionAffinity?: string;
    externalName?: string;
    loadBalancerIngressIPs?: string[];
    /** the Deployment whose pods the selector matches */
    deployment?: string;
    /** hand-made Endpoints of a selector-less Service */
    manualEndpoints?: { ips: string[]; ports: { name?: string; port: number; protocol: string }[] };
    /** "apiserver" for default/kubernetes, which the apiserver makes itself */
    createdBy: "seed" | "apiserver";
}

export interface SeededNode {
    name: string;
    internalIP: string;
    podCIDR: string;
    controlPlane: boolean;
    labels: Record<string, string>;
    taints: { key: string; value?: string; effect: string }[];
}

export interface SeededConfigMap { namespace: string; name: string; keys: string[]; }

export interface SeededIPPool {
    name: string; cidr: string; blockSize: number; ipipMode: string; vxlanMode: string; natOutgoing: boolean; nodeSelector: string;
}

export interface SeededWorkload {
    serviceCidr: string;
    podCidr: string;
    nodeCidrMaskSize: number;
    clusterDNS: string;
    namespaces: string[];
    services: SeededService[];
    deployments: { namespace: string; name: string; selector: Record<string, string> }[];
    configMaps: SeededConfigMap[];
    nodes: SeededNode[];
    calico: {
        crds: string[];
        ipPools: SeededIPPool[];
        ipamBlocks: { name: string; cidr: string; affinity: string }[];
        blockAffinities: { name: string; node: string; cidr: string; state: string }[];
    };
}

interface NodePlan { name: string; internalIP: string; controlPlane: boolean; zone?: string; calicoBlock: string; }

const NODES: NodePlan[] = [
    { name: "cp-1", internalIP: "192.168.50.10", controlPlane: true, calicoBlock: "10.244.235.192/26" },
    { name: "worker-1", internalIP: "192.168.50.11", controlPlane: false, zone: "zone-a", calicoBlock: "10.244.226.64/26" },
    { name: "worker-2", internalIP: "192.168.50.12", controlPlane: false, zone: "zone-b", calicoBlock: "10.244.133.0/26" },
    { name: "worker-3", internalIP: "192.168.50.13", controlPlane: false, zone: "zone-c", calicoBlock: "10.244.171.128/26" },
];
const CONTROL_PLANE_ENDPOINT = `${NODES[0].internalIP}:6443`;
const NAMESPACES = ["web", "payments", "monitoring", "ingress-nginx", "db"];
const CALICO_GROUP = "crd.projectcalico.org";
const CALICO_CRD_FILES = ["crd.projectcalico.org_ippools.yaml", "crd.projectcalico.org_ipamblocks.yaml", "crd.projectcalico.org_blockaffinities.yaml"];
const POD_CIDR_WAIT_MS = 60_000;
const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

function fixture(file: string): string {
    return fs.readFileSync(path.join(FIXTURES_DIR, file), "utf8");
}

/** A Service the seed creates, with the Deployment its selector points at (when it has one). */
interface ServicePlan {
    shapes: ServiceShape[];
    service: V1Service;
    deployment?: { containers: { name: string; ports: { name: string; containerPort: number; protocol?: string }[] }[] };
    manualEndpoints?: SeededService["manualEndpoints"];
    loadBalancerIngressIPs?: string[];
    ownedByDeployment?: boolean;
    lastApplied?: boolean;
}

function svc(namespace: string, name: string, spec: V1Service["spec"], labels: Record<string, string> = { app: name }): V1Service {
    return { apiVersion: "v1", kind: "Service", metadata: { namespace, name, labels }, spec };
}

function port(name: string | undefined, portNumber: number, targetPort: number | string, extra: Partial<V1ServicePort> = {}): V1ServicePort {
    return { ...(name ? { name } : {}), port: portNumber, targetPort: targetPort as never, protocol: "TCP", ...extra };
}

function servicePlans(): ServicePlan[] {
    const http = (containerPort: number, name = "http") => ({ name, containerPort });
    return [
        {
            shapes: ["ClusterIP", "ClusterDNS", "PinnedClusterIP"],
            // as kubeadm's CoreDNS addon creates it
            service: {
                apiVersion: "v1", kind: "Service",
                metadata: {
                    namespace: "kube-system", name: "kube-dns",
                    labels: { "k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS" },
                    annotations: { "prometheus.io/port": "9153", "prometheus.io/scrape": "true" },
                },
                spec: {
                    clusterIP: OLD_CLUSTER_DNS_IP,
                    selector: { "k8s-app": "kube-dns" },
                    ports: [
                        port("dns", 53, 53, { protocol: "UDP" }),
                        port("dns-tcp", 53, 53),
                        port("metrics", 9153, 9153),
                    ],
                },
            },
            deployment: { containers: [{ name: "coredns", ports: [
                { name: "dns", containerPort: 53, protocol: "UDP" }, { name: "dns-tcp", containerPort: 53 }, { name: "metrics", containerPort: 9153 },
            ] }] },
        },
        {
            shapes: ["ClusterIP", "PinnedClusterIP"],
            service: svc("payments", "payments-api", { clusterIP: "10.96.100.100", selector: { app: "payments-api" }, ports: [port("http", 80, 8080)] }),
            deployment: { containers: [{ name: "api", ports: [http(8080)] }] },
        },
        {
            shapes: ["ClusterIP"],
            service: svc("web", "frontend", { selector: { app: "frontend" }, ports: [port("http", 80, 8080)] }),
            deployment: { containers: [{ name: "frontend", ports: [http(8080)] }] },
        },
        {
            shapes: ["NodePort"],
            service: svc("web", "storefront", {
                type: "NodePort", selector: { app: "storefront" },
                ports: [port("http", 80, 8080, { nodePort: 30080 }), port("https", 443, 8443, { nodePort: 30443 })],
            }),
            deployment: { containers: [{ name: "storefront", ports: [http(8080), { name: "https", containerPort: 8443 }] }] },
        },
        {
            shapes: ["LoadBalancer"],
            service: svc("web", "public-api", { type: "LoadBalancer", selector: { app: "public-api" }, ports: [port("https", 443, 8443)] }),
            deployment: { containers: [{ name: "api", ports: [{ name: "https", containerPort: 8443 }] }] },
            // what MetalLB would have written; nothing here implements LoadBalancers
            loadBalancerIngressIPs: ["192.168.50.241"],
        },
        {
            shapes: ["LoadBalancer", "ExternalTrafficPolicyLocal", "MultiPortNamedTargetPorts"],
            service: svc("ingress-nginx", "ingress-nginx-controller", {
                type: "LoadBalancer", externalTrafficPolicy: "Local",
                selector: { "app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller" },
                ports: [port("http", 80, "http"), port("https", 443, "https")],
            }, { "app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller" }),
            deployment: { containers: [{ name: "controller", ports: [http(80), { name: "https", containerPort: 443 }] }] },
            loadBalancerIngressIPs: ["192.168.50.240"],
        },
        {
            shapes: ["Headless", "MultiPortNamedTargetPorts"],
            // kube-prometheus kubeStateMetrics-service.yaml
            service: svc("monitoring", "kube-state-metrics", {
                clusterIP: "None", selector: { "app.kubernetes.io/name": "kube-state-metrics" },
                ports: [port("https-main", 8443, "https-main"), port("https-self", 9443, "https-self")],
            }, { "app.kubernetes.io/name": "kube-state-metrics" }),
            deployment: { containers: [{ name: "kube-rbac-proxy-main", ports: [{ name: "https-main", containerPort: 8443 }] },
                { name: "kube-rbac-proxy-self", ports: [{ name: "https-self", containerPort: 9443 }] }] },
        },
        {
            shapes: ["ClusterIP", "MultiPortNamedTargetPorts", "SessionAffinityClientIP"],
            // kube-prometheus alertmanager-service.yaml
            service: svc("monitoring", "alertmanager-main", {
                sessionAffinity: "ClientIP",
                selector: { "app.kubernetes.io/name": "alertmanager", alertmanager: "main" },
                ports: [port("web", 9093, "web"), port("reloader-web", 8080, "reloader-web")],
            }, { "app.kubernetes.io/name": "alertmanager" }),
            deployment: { containers: [{ name: "alertmanager", ports: [{ name: "web", containerPort: 9093 }] },
                { name: "config-reloader", ports: [{ name: "reloader-web", containerPort: 8080 }] }] },
        },
        {
            shapes: ["ClusterIP", "SessionAffinityClientIP"],
            service: svc("web", "cart", {
                sessionAffinity: "ClientIP", sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
                selector: { app: "cart" }, ports: [port("http", 80, 8080)],
            }),
            deployment: { containers: [{ name: "cart", ports: [http(8080)] }] },
        },
        {
            shapes: ["ExternalName"],
            service: svc("db", "external-db", { type: "ExternalName", externalName: "database.example.com" }),
        },
        {
            shapes: ["ClusterIP", "SelectorlessManualEndpoints"],
            service: svc("db", "legacy-mysql", { ports: [port(undefined, 3306, 3306)] }),
            manualEndpoints: { ips: ["192.168.0.1"], ports: [{ port: 3306, protocol: "TCP" }] },
        },
        {
            shapes: ["ClusterIP", "LastAppliedConfiguration"],
            service: svc("web", "checkout", { selector: { app: "checkout" }, ports: [port("http", 80, 8080)] }),
            deployment: { containers: [{ name: "checkout", ports: [http(8080)] }] },
            lastApplied: true,
        },
        {
            shapes: ["ClusterIP", "OwnerReferences"],
            service: svc("payments", "payments-worker-metrics", { selector: { app: "payments-worker-metrics" }, ports: [port("metrics", 9100, 9100)] }),
            deployment: { containers: [{ name: "worker", ports: [{ name: "metrics", containerPort: 9100 }] }] },
            ownedByDeployment: true,
        },
    ];
}

function deploymentFor(plan: ServicePlan): V1Deployment {
    const meta = plan.service.metadata!;
    const selector = plan.service.spec!.selector!;
    return {
        apiVersion: "apps/v1", kind: "Deployment",
        metadata: { namespace: meta.namespace, name: meta.name === "kube-dns" ? "coredns" : meta.name, labels: { ...selector } },
        spec: {
            replicas: 2,
            selector: { matchLabels: { ...selector } },
            template: {
                metadata: { labels: { ...selector } },
                spec: {
                    containers: plan.deployment!.containers.map((c) => ({
                        name: c.name,
                        image: meta.name === "kube-dns" ? "k8s.gcr.io/coredns:1.7.0" : "registry.example.com/app:1.0",
                        ports: c.ports.map((p) => ({ name: p.name, containerPort: p.containerPort, protocol: p.protocol ?? "TCP" })),
                    })),
                },
            },
        },
    };
}

async function createCalicoCrds(kc: KubeConfig): Promise<string[]> {
    const api = kc.makeApiClient(ApiextensionsV1Api);
    const names: string[] = [];
    for (const file of CALICO_CRD_FILES) {
        const crd = parse(fixture(file)) as V1CustomResourceDefinition;
        await api.createCustomResourceDefinition({ body: crd });
        names.push(crd.metadata!.name!);
    }
    // custom objects can only be created once their CRDs are Established
    const deadline = Date.now() + 30_000;
    for (const name of names) {
        for (;;) {
            const crd = await api.readCustomResourceDefinition({ name });
            if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
            if (Date.now() > deadline) throw new Error(`seed: CRD ${name} not Established after 30 s`);
            await sleep(100);
        }
    }
    return names;
}

async function registerNodes(kc: KubeConfig): Promise<SeededNode[]> {
    const core = kc.makeApiClient(CoreV1Api);
    const seeded: SeededNode[] = [];
    for (const plan of NODES) {
        await registerNode(kc, { name: plan.name, internalIP: plan.internalIP });
        // what kubeadm init/join and the operator add after the kubelet registered
        const labels: Record<string, string> = plan.controlPlane
            ? { "node-role.kubernetes.io/control-plane": "" }
            : { "topology.kubernetes.io/zone": plan.zone! };
        await core.patchNode({
            name: plan.name,
            body: {
                metadata: { labels, annotations: { "kubeadm.alpha.kubernetes.io/cri-socket": "/run/containerd/containerd.sock" } },
                ...(plan.controlPlane ? { spec: { taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }] } } : {}),
            },
        }, mergePatch());
        const podCIDR = await waitForPodCIDR(kc, plan.name, POD_CIDR_WAIT_MS);
        const node = await core.readNode({ name: plan.name });
        seeded.push({
            name: plan.name,
            internalIP: plan.internalIP,
            podCIDR,
            controlPlane: plan.controlPlane,
            labels: { ...node.metadata!.labels },
            taints: (node.spec?.taints ?? []).map((t) => ({ key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect })),
        });
    }
    return seeded;
}

async function createCalicoObjects(kc: KubeConfig): Promise<Omit<SeededWorkload["calico"], "crds">> {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const create = (plural: string, body: object) => custom.createClusterCustomObject({ group: CALICO_GROUP, version: "v1", plural, body });
    const pool: SeededIPPool = {
        name: "default-ipv4-ippool", cidr: OLD_POD_CIDR, blockSize: CALICO_BLOCK_SIZE,
        ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()",
    };
    await create("ippools", {
        apiVersion: `${CALICO_GROUP}/v1`, kind: "IPPool", metadata: { name: pool.name },
        spec: { cidr: pool.cidr, blockSize: pool.blockSize, ipipMode: pool.ipipMode, vxlanMode: pool.vxlanMode, natOutgoing: pool.natOutgoing, nodeSelector: pool.nodeSelector },
    });
    const ipamBlocks: SeededWorkload["calico"]["ipamBlocks"] = [];
    const blockAffinities: SeededWorkload["calico"]["blockAffinities"] = [];
    const blockIPs = 2 ** (32 - CALICO_BLOCK_SIZE);
    for (const node of NODES) {
        const blockName = node.calicoBlock.replace(/[./]/g, "-");
        const affinity = `host:${node.name}`;
        // index 0 holds the node's tunnel address (ipipMode Always), as calico-node allocates it
        const allocations: (number | null)[] = Array.from({ length: blockIPs }, (_, i) => (i === 0 ? 0 : null));
        await create("ipamblocks", {
            apiVersion: `${CALICO_GROUP}/v1`, kind: "IPAMBlock", metadata: { name: blockName },
            spec: {
                cidr: node.calicoBlock, affinity, strictAffinity: false, deleted: false,
                allocations, unallocated: Array.from({ length: blockIPs - 1 }, (_, i) => i + 1),
                attributes: [{ handle_id: `ipip-tunnel-addr-${node.name}`, secondary: { node: node.name, type: "ipipTunnelAddress" } }],
            },
        });
        ipamBlocks.push({ name: blockName, cidr: node.calicoBlock, affinity });
        const affinityName = `${node.name}-${blockName}`;
        await create("blockaffinities", {
            apiVersion: `${CALICO_GROUP}/v1`, kind: "BlockAffinity", metadata: { name: affinityName },
            spec: { node: node.name, cidr: node.calicoBlock, state: "confirmed", deleted: "false" },
        });
        blockAffinities.push({ name: affinityName, node: node.name, cidr: node.calicoBlock, state: "confirmed" });
    }
    return { ipPools: [pool], ipamBlocks, blockAffinities };
}

/** kubeadm's kube-proxy ConfigMap: the fixture's config.conf plus the kubeconfig.conf kubeadm writes beside it. */
function kubeProxyConfigMap(ranges?: SeededRanges): { data: Record<string, string>; labels: Record<string, string> } {
    const source = parse(fixture("kube-proxy-cm-trimmed-clustercidr.yaml")) as { data: Record<string, string> };
    if (ranges) {
        const conf = parseDocument(source.data["config.conf"]);
        conf.set("clusterCIDR", ranges.podSubnet);
        source.data["config.conf"] = conf.toString();
    }
    const kubeconfig = stringify({
        apiVersion: "v1", kind: "Config",
        clusters: [{ cluster: { "certificate-authority": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", server: `https://${CONTROL_PLANE_ENDPOINT}` }, name: "default" }],
        contexts: [{ context: { cluster: "default", namespace: "default", user: "default" }, name: "default" }],
        "current-context": "default",
        users: [{ name: "default", user: { tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token" } }],
    });
    return { data: { "config.conf": source.data["config.conf"], "kubeconfig.conf": kubeconfig }, labels: { app: "kube-proxy" } };
}

/** kubeadm's kubeadm-config: the fixture's ClusterConfiguration, pointed at this cluster's endpoint and version. */
function kubeadmConfigMap(ranges?: SeededRanges): { data: Record<string, string>; labels: Record<string, string> } {
    const source = parse(fixture("kubeadm-config-cm-v1beta3-v1.28.yaml")) as { data: Record<string, string> };
    const clusterConfiguration = parse(source.data.ClusterConfiguration) as Record<string, unknown>;
    if (ranges) Object.assign(clusterConfiguration.networking as Record<string, unknown>, ranges);
    clusterConfiguration.controlPlaneEndpoint = CONTROL_PLANE_ENDPOINT;
    clusterConfiguration.kubernetesVersion = KUBE_VERSION;
    return { data: { ClusterConfiguration: stringify(clusterConfiguration) }, labels: {} };
}

/** kubeadm's kubelet-config: the on-node config.yaml fixture under the "kubelet" key, byte for byte. */
function kubeletConfigMap(): { data: Record<string, string>; labels: Record<string, string> } {
    return { data: { kubelet: fixture("var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml") }, labels: {} };
}

/** The ranges kubeadm-config and kube-proxy list, when not the sandbox's own (a dual-stack pair, comma-separated). */
export interface SeededRanges { serviceSubnet: string; podSubnet: string }

/** kubeadm's three ConfigMaps in kube-system, on the sandbox's ranges or `ranges`. */
export async function createConfigMaps(kc: KubeConfig, ranges?: SeededRanges): Promise<SeededConfigMap[]> {
    const core = kc.makeApiClient(CoreV1Api);
    const maps = { "kube-proxy": kubeProxyConfigMap(ranges), "kubeadm-config": kubeadmConfigMap(ranges), "kubelet-config": kubeletConfigMap() };
    const seeded: SeededConfigMap[] = [];
    for (const [name, { data, labels }] of Object.entries(maps)) {
        await core.createNamespacedConfigMap({ namespace: "kube-system", body: { metadata: { name, namespace: "kube-system", labels }, data } });
        seeded.push({ namespace: "kube-system", name, keys: Object.keys(data).sort() });
    }
    return seeded;
}

function toSeededPort(p: V1ServicePort): SeededServicePort {
    return {
        ...(p.name ? { name: p.name } : {}),
        protocol: p.protocol ?? "TCP",
        port: p.port,
        ...(p.targetPort !== undefined ? { targetPort: p.targetPort as number | string } : {}),
        ...(p.nodePort !== undefined ? { nodePort: p.nodePort } : {}),
    };
}

function describeService(live: V1Service, shapes: ServiceShape[], createdBy: SeededService["createdBy"], extra: Partial<SeededService> = {}): SeededService {
    const spec = live.spec!;
    return {
        namespace: live.metadata!.namespace!,
        name: live.metadata!.name!,
        type: (spec.type ?? "ClusterIP") as SeededService["type"],
        shapes,
        ...(spec.clusterIP !== undefined ? { clusterIP: spec.clusterIP } : {}),
        ...(spec.clusterIPs !== undefined ? { clusterIPs: [...spec.clusterIPs] } : {}),
        ports: (spec.ports ?? []).map(toSeededPort),
        ...(spec.selector ? { selector: { ...spec.selector } } : {}),
        ...(spec.externalTrafficPolicy ? { externalTrafficPolicy: spec.externalTrafficPolicy } : {}),
        ...(spec.healthCheckNodePort ? { healthCheckNodePort: spec.healthCheckNodePort } : {}),
        ...(spec.sessionAffinity ? { sessionAffinity: spec.sessionAffinity } : {}),
        ...(spec.externalName ? { externalName: spec.externalName } : {}),
        createdBy,
        ...extra,
    };
}

async function createServices(kc: KubeConfig): Promise<{ services: SeededService[]; deployments: SeededWorkload["deployments"] }> {
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    const services: SeededService[] = [];
    const deployments: SeededWorkload["deployments"] = [];
    // pinned IPs first, so no dynamically allocated IP can take them
    const plans = servicePlans().sort((a, b) => Number(b.shapes.includes("PinnedClusterIP")) - Number(a.shapes.includes("PinnedClusterIP")));
    for (const plan of plans) {
        const namespace = plan.service.metadata!.namespace!;
        const body: V1Service = structuredClone(plan.service);
        let deploymentName: string | undefined;
        if (plan.deployment) {
            const deployment = await apps.createNamespacedDeployment({ namespace, body: deploymentFor(plan) });
            deploymentName = deployment.metadata!.name!;
            deployments.push({ namespace, name: deploymentName, selector: { ...deployment.spec!.selector.matchLabels! } });
            if (plan.ownedByDeployment) {
                // as an operator or Helm post-renderer would make it: owned, and garbage-collected with its Deployment
                body.metadata!.ownerReferences = [{
                    apiVersion: "apps/v1", kind: "Deployment", name: deploymentName, uid: deployment.metadata!.uid!,
                    controller: true, blockOwnerDeletion: true,
                }];
            }
        }
        if (plan.lastApplied) {
            // what `kubectl apply -f` records: the manifest as applied, without server-set fields
            body.metadata!.annotations = { ...body.metadata!.annotations, "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify(plan.service) + "\n" };
        }
        let live = await core.createNamespacedService({ namespace, body });
        if (plan.loadBalancerIngressIPs) {
            live = await core.patchNamespacedServiceStatus({
                name: live.metadata!.name!, namespace,
                body: { status: { loadBalancer: { ingress: plan.loadBalancerIngressIPs.map((ip) => ({ ip })) } } },
            }, mergePatch());
        }
        if (plan.manualEndpoints) {
            await core.createNamespacedEndpoints({
                namespace,
                body: {
                    metadata: { name: live.metadata!.name!, namespace },
                    subsets: [{ addresses: plan.manualEndpoints.ips.map((ip) => ({ ip })), ports: plan.manualEndpoints.ports }],
                },
            });
        }
        services.push(describeService(live, plan.shapes, "seed", {
            ...(deploymentName ? { deployment: deploymentName } : {}),
            ...(plan.manualEndpoints ? { manualEndpoints: structuredClone(plan.manualEndpoints) } : {}),
            ...(plan.loadBalancerIngressIPs ? { loadBalancerIngressIPs: [...plan.loadBalancerIngressIPs] } : {}),
        }));
    }
    const kubernetes = await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
    services.push(describeService(kubernetes, ["ClusterIP", "APIServer"], "apiserver"));
    return { services, deployments };
}

/** Seeds the workload into an empty control plane started with the old ranges. */
/**
 * The mirror pods the kubelet of a kubeadm control-plane node publishes for its static pods
 * (/etc/kubernetes/manifests), with the range flags the components run with: how preflight and verify see the
 * control plane through the API.
 */
export function controlPlaneMirrorPods(
    node: { name: string; internalIP: string },
    opts: { serviceCidr: string; podCidr: string; nodeMaskSize: number },
): V1Pod[] {
    const mirror = (component: string, command: string[]): V1Pod => ({
        metadata: {
            name: `${component}-${node.name}`,
            labels: { component, tier: "control-plane" },
            annotations: { "kubernetes.io/config.mirror": `${component}-${node.name}-hash`, "kubernetes.io/config.source": "file" },
        },
        spec: { nodeName: node.name, priorityClassName: "system-node-critical", containers: [{ name: component, image: `k8s.gcr.io/${component}:${KUBE_VERSION}`, command }] },
    });
    const featureGates = apiserverFeatureGates();
    return [
        mirror("kube-apiserver", [
            "kube-apiserver",
            `--advertise-address=${node.internalIP}`,
            "--authorization-mode=Node,RBAC",
            "--etcd-servers=https://127.0.0.1:2379",
            "--secure-port=6443",
            `--service-cluster-ip-range=${opts.serviceCidr}`,
            ...(featureGates ? [`--feature-gates=${featureGates}`] : []),
        ]),
        mirror("kube-controller-manager", [
            "kube-controller-manager",
            "--allocate-node-cidrs=true",
            `--cluster-cidr=${opts.podCidr}`,
            `--node-cidr-mask-size=${opts.nodeMaskSize}`,
            `--service-cluster-ip-range=${opts.serviceCidr}`,
            "--use-service-account-credentials=true",
        ]),
    ];
}

async function createControlPlaneMirrorPods(kc: KubeConfig, nodeMaskSize: number): Promise<void> {
    const core = kc.makeApiClient(CoreV1Api);
    const ranges = { serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize };
    for (const node of NODES.filter((n) => n.controlPlane)) {
        for (const body of controlPlaneMirrorPods(node, ranges)) await core.createNamespacedPod({ namespace: "kube-system", body });
    }
}

/** `nodeMaskSize`: the KCM mask the cluster was started with (default 24; bench:engine seeds 1,000 nodes with 26). */
export async function seedWorkload(kc: KubeConfig, opts: { nodeMaskSize?: number } = {}): Promise<SeededWorkload> {
    const nodeMaskSize = opts.nodeMaskSize ?? OLD_NODE_CIDR_MASK_SIZE;
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of NAMESPACES) {
        await core.createNamespace({ body: { metadata: { name } } });
    }
    const crds = await createCalicoCrds(kc);
    const nodes = await registerNodes(kc);
    await createControlPlaneMirrorPods(kc, nodeMaskSize);
    const calico = await createCalicoObjects(kc);
    const configMaps = await createConfigMaps(kc);
    const { services, deployments } = await createServices(kc);
    return {
        serviceCidr: OLD_SERVICE_CIDR,
        podCidr: OLD_POD_CIDR,
        nodeCidrMaskSize: nodeMaskSize,
        clusterDNS: OLD_CLUSTER_DNS_IP,
        namespaces: [...NAMESPACES],
        services,
        deployments,
        configMaps,
        nodes,
        calico: { crds, ...calico },
    };
}
