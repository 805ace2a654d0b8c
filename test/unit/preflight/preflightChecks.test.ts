import * as assert from "assert";
import { V1ConfigMap, V1Node, V1Pod, V1Service } from "@kubernetes/client-node";
import { validateConfig } from "../../../lib/config/config";
import { Finding } from "../../../lib/report/findings";
import { MigrationConfig } from "../../../lib/config/migrationConfig";
import { preflightFindings } from "../../../lib/preflight";
import { checkCapacityAndVersions } from "../../../lib/preflight/capacityAndVersions";
import { PreflightInput } from "../../../lib/preflight/checkInput";
import { ClusterObjects, emptyClusterObjects, EndpointSliceObject } from "../../../lib/preflight/clusterObjects";
import { checkClusterKind } from "../../../lib/preflight/clusterKind";
import { parseFlags } from "../../../lib/preflight/controlPlanePods";
import { checkDrains } from "../../../lib/preflight/drains";
import { checkDnsReplicas } from "../../../lib/preflight/dnsReplicas";
import { checkEtcd } from "../../../lib/preflight/etcd";
import { EtcdProbe } from "../../../lib/preflight/etcdProbe";
import { checkHardCodedAddresses } from "../../../lib/preflight/hardCodedAddresses";
import { checkServices } from "../../../lib/preflight/services";
import { checkSizeAndShape, MANY_FIXED_IP_DEPENDENCIES } from "../../../lib/preflight/sizeAndShape";

// Pure checks over hand-made objects; test/integration/preflight.test.ts seeds the same problems in a real cluster.

function config(values: Record<string, unknown> = {}): MigrationConfig {
  return validateConfig({
    values: {
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      etcd: { endpoints: ["http://127.0.0.1:2379"] },
      nodes: [
        { name: "cp-1", host: "192.168.50.10", role: "control-plane" },
        { name: "worker-1", host: "192.168.50.11", role: "worker" },
      ],
      ...values,
    },
  });
}

function input(cluster: Partial<ClusterObjects>, opts: { config?: MigrationConfig; allowSecretValues?: boolean; etcd?: EtcdProbe } = {}): PreflightInput {
  return {
    config: opts.config ?? config(),
    cluster: { ...emptyClusterObjects(), serverVersion: { major: "1", minor: "20", gitVersion: "v1.20.2" }, ...cluster },
    allowSecretValues: opts.allowSecretValues ?? false,
    etcd: opts.etcd,
  };
}

const brief = (fs: Finding[]) => fs.map((f) => ({ code: f.code, severity: f.severity, object: f.object, path: f.path }));

function node(name: string, podCIDR?: string, labels: Record<string, string> = {}): V1Node {
  return { metadata: { name, labels }, spec: podCIDR ? { podCIDR, podCIDRs: [podCIDR] } : {}, status: { capacity: { pods: "110" } } };
}

function mirrorPod(component: string, nodeName: string, flags: string[]): V1Pod {
  return {
    metadata: { namespace: "kube-system", name: `${component}-${nodeName}`, labels: { component, tier: "control-plane" }, annotations: { "kubernetes.io/config.mirror": "hash" } },
    spec: { nodeName, containers: [{ name: component, command: [component, ...flags] }] },
  };
}

function service(namespace: string, name: string, spec: V1Service["spec"], meta: Partial<V1Service["metadata"]> = {}): V1Service {
  return { metadata: { namespace, name, ...meta }, spec };
}

const kubeadmConfig = { metadata: { namespace: "kube-system", name: "kubeadm-config" }, data: { ClusterConfiguration: "kubernetesVersion: v1.20.2\nnetworking:\n  podSubnet: 10.244.0.0/16\n" } };
const controlPlane = [
  mirrorPod("kube-apiserver", "cp-1", ["--service-cluster-ip-range=10.96.0.0/12", "--advertise-address=192.168.50.10"]),
  mirrorPod("kube-controller-manager", "cp-1", ["--cluster-cidr=10.244.0.0/16", "--service-cluster-ip-range=10.96.0.0/12", "--allocate-node-cidrs=true"]),
];

describe("preflight checks (pure)", () => {
  describe("cluster kind", () => {
    it("a kubeadm cluster with its static pods is one info finding", () => {
      const found = checkClusterKind(input({ configMaps: [kubeadmConfig], pods: controlPlane }));
      assert.deepStrictEqual(brief(found), [{ code: "KUBEADM_CLUSTER", severity: "info", object: "cluster", path: undefined }]);
      assert.match(found[0].message, /kubernetesVersion v1\.20\.2; kube-apiserver static pods on cp-1/);
    });

    it("no kubeadm-config and no static pods: two blockers", () => {
      assert.deepStrictEqual(brief(checkClusterKind(input({}))).map((f) => [f.code, f.object]), [
        ["NOT_KUBEADM", "ConfigMap kube-system/kubeadm-config"],
        ["CONTROL_PLANE_PODS_MISSING", "Namespace kube-system"],
      ]);
    });

    it("names a managed control plane from the server version or the node labels", () => {
      const eks = checkClusterKind(input({ serverVersion: { major: "1", minor: "29", gitVersion: "v1.29.1-eks-b9c9ed7" } }));
      assert.match(eks.find((f) => f.code === "MANAGED_CONTROL_PLANE")!.message, /Amazon EKS/);
      const aks = checkClusterKind(input({ nodes: [node("aks-1", undefined, { "kubernetes.azure.com/cluster": "x" })] }));
      assert.match(aks.find((f) => f.code === "MANAGED_CONTROL_PLANE")!.message, /Azure AKS/);
      const k3s = checkClusterKind(input({ serverVersion: { major: "1", minor: "28", gitVersion: "v1.28.5+k3s1" } }));
      assert.ok(k3s.some((f) => f.code === "NOT_KUBEADM" && f.object === "cluster" && /k3s/.test(f.message)));
    });

    it("a node running kube-apiserver that the config does not list as control-plane is a blocker", () => {
      const pods = [...controlPlane, mirrorPod("kube-apiserver", "cp-2", ["--service-cluster-ip-range=10.96.0.0/12"])];
      const found = checkClusterKind(input({ configMaps: [kubeadmConfig], pods }));
      assert.deepStrictEqual(brief(found.filter((f) => f.severity === "blocker")), [{ code: "CONTROL_PLANE_NODE_NOT_CONFIGURED", severity: "blocker", object: "Node cp-2", path: undefined }]);
    });
  });

  describe("hard-coded addresses", () => {
    it("reports a ConfigMap key with its line, naming the Service whose ClusterIP it is", () => {
      const cluster = {
        services: [service("monitoring", "prometheus", { clusterIP: "10.96.5.5", selector: { app: "p" } })],
        configMaps: [{ metadata: { namespace: "monitoring", name: "prom" }, data: { "prometheus.yml": "global: {}\nscrape:\n  - targets: ['http://10.96.5.5:9090']\n" } }],
      };
      const [f, ...rest] = checkHardCodedAddresses(input(cluster));
      assert.strictEqual(rest.length, 0);
      assert.deepStrictEqual(brief([f]), [{ code: "HARDCODED_SERVICE_IP", severity: "warning", object: "ConfigMap monitoring/prom", path: 'data["prometheus.yml"] line 3' }]);
      assert.strictEqual(f.message, "10.96.5.5 is in the old Service range 10.96.0.0/12 (now the ClusterIP of Service monitoring/prometheus)");
      assert.match(f.action, /prometheus\.monitoring\.svc/);
    });

    it("walks workload env, args, command, hostAliases, dnsConfig and annotations, with exact paths", () => {
      const deployment = {
        metadata: { namespace: "web", name: "api", annotations: { "backend": "10.244.7.7" } },
        spec: {
          selector: {},
          template: {
            metadata: { annotations: { "prometheus.io/target": "10.96.0.77:9100" } },
            spec: {
              initContainers: [{ name: "init", command: ["sh", "-c", "until nc -z 10.96.0.30 5432; do sleep 1; done"] }],
              containers: [{ name: "app", args: ["--db", "10.96.0.30"], env: [{ name: "A", value: "x" }, { name: "B", value: "y" }, { name: "UPSTREAM", value: "http://10.96.5.5:8080" }] }],
              hostAliases: [{ ip: "10.96.0.31", hostnames: ["legacy"] }],
              dnsConfig: { nameservers: ["10.96.0.10"] },
            },
          },
        },
      };
      const found = checkHardCodedAddresses(input({ deployments: [deployment] }));
      assert.deepStrictEqual(found.map((f) => [f.code, f.object, f.path]), [
        ["HARDCODED_POD_IP", "Deployment web/api", 'metadata.annotations["backend"]'],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", 'spec.template.metadata.annotations["prometheus.io/target"]'],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", "spec.template.spec.initContainers[0].command[2]"],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", "spec.template.spec.containers[0].args[1]"],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", "spec.template.spec.containers[0].env[2].value"],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", "spec.template.spec.hostAliases[0].ip"],
        ["HARDCODED_SERVICE_IP", "Deployment web/api", "spec.template.spec.dnsConfig.nameservers[0]"],
      ]);
    });

    it("scans bare pods but not replicas of a scanned controller, control-plane static pods or CNI annotations", () => {
      const env = [{ name: "X", value: "10.96.0.40" }];
      const pods: V1Pod[] = [
        { metadata: { namespace: "a", name: "bare" }, spec: { containers: [{ name: "c", env }] } },
        { metadata: { namespace: "a", name: "replica", ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", uid: "1", controller: true }] }, spec: { containers: [{ name: "c", env }] } },
        { metadata: { namespace: "a", name: "calico", annotations: { "cni.projectcalico.org/podIP": "10.244.1.2/32" } }, spec: { containers: [{ name: "c" }] } },
        ...controlPlane,
      ];
      assert.deepStrictEqual(checkHardCodedAddresses(input({ pods })).map((f) => [f.object, f.path]), [["Pod a/bare", "spec.containers[0].env[0].value"]]);
    });

    it("reports CIDR literals, and leaves alone the ConfigMaps the migration rewrites itself", () => {
      const configMaps: V1ConfigMap[] = [
        { metadata: { namespace: "kube-system", name: "kube-proxy" }, data: { "config.conf": "clusterCIDR: 10.244.0.0/16" } },
        { metadata: { namespace: "kube-system", name: "kubelet-config-1.20" }, data: { kubelet: "clusterDNS:\n- 10.96.0.10" } },
        { metadata: { namespace: "kube-system", name: "kubeadm-config" }, data: { ClusterConfiguration: "serviceSubnet: 10.96.0.0/12" } },
        { metadata: { namespace: "netpol", name: "allow" }, data: { ranges: "10.244.0.0/16" } },
      ];
      assert.deepStrictEqual(brief(checkHardCodedAddresses(input({ configMaps }))), [{ code: "HARDCODED_POD_CIDR", severity: "warning", object: "ConfigMap netpol/allow", path: 'data["ranges"]' }]);
    });

    it("reads Endpoints and EndpointSlices of selector-less Services only, and skips mirrored slices", () => {
      const services = [service("db", "external", { clusterIP: "10.96.0.50", ports: [{ port: 5432 }] }), service("db", "managed", { clusterIP: "10.96.0.51", selector: { app: "pg" } })];
      const endpoints = [
        { metadata: { namespace: "db", name: "external" }, subsets: [{ addresses: [{ ip: "192.168.9.9" }, { ip: "10.244.3.3" }], notReadyAddresses: [{ ip: "10.244.3.4" }] }] },
        { metadata: { namespace: "db", name: "managed" }, subsets: [{ addresses: [{ ip: "10.244.3.5" }] }] },
      ];
      const endpointSlices: EndpointSliceObject[] = [
        { metadata: { namespace: "db", name: "external-abc", labels: { "kubernetes.io/service-name": "external", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io" } }, endpoints: [{ addresses: ["10.244.3.3"] }] },
        { metadata: { namespace: "db", name: "external-hand", labels: { "kubernetes.io/service-name": "external" } }, endpoints: [{ addresses: ["10.1.1.1"] }, { addresses: ["10.244.3.6"] }] },
      ];
      assert.deepStrictEqual(checkHardCodedAddresses(input({ services, endpoints, endpointSlices })).map((f) => [f.object, f.path]), [
        ["Endpoints db/external", "subsets[0].addresses[1].ip"],
        ["Endpoints db/external", "subsets[0].notReadyAddresses[0].ip"],
        ["EndpointSlice db/external-hand", "endpoints[1].addresses[0]"],
      ]);
    });

    it("walks Ingress specs and Service annotations (a pinned IP in kubectl's last-applied-configuration)", () => {
      const ingresses = [{ metadata: { namespace: "web", name: "ing" }, spec: { rules: [{ host: "a", http: { paths: [{ backend: { serviceName: "10.96.0.60" } }] } }] } }];
      const services = [service("web", "s", { clusterIP: "10.96.0.61", selector: { a: "b" } }, { annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"spec":{"clusterIP":"10.96.0.61"}}' } })];
      assert.deepStrictEqual(checkHardCodedAddresses(input({ ingresses, services })).map((f) => [f.object, f.path]), [
        ["Ingress web/ing", "spec.rules[0].http.paths[0].backend.serviceName"],
        ["Service web/s", 'metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]'],
      ]);
    });

    it("counts addresses in a Secret without showing them, unless secret values are allowed", () => {
      const secrets = [{ metadata: { namespace: "app", name: "creds" }, data: { "db.url": Buffer.from("postgres://u:p@10.96.0.30:5432/x\nreplica=10.244.1.1").toString("base64"), other: Buffer.from("nothing").toString("base64") } }];
      const counted = checkHardCodedAddresses(input({ secrets }));
      assert.deepStrictEqual(brief(counted), [{ code: "HARDCODED_IN_SECRET", severity: "warning", object: "Secret app/creds", path: undefined }]);
      assert.strictEqual(counted[0].message, "holds 2 addresses in the old Service or Pod range (values and keys not shown)");
      assert.ok(!JSON.stringify(counted).includes("10.96.0.30") && !JSON.stringify(counted).includes("db.url"));
      const shown = checkHardCodedAddresses(input({ secrets }, { allowSecretValues: true }));
      assert.deepStrictEqual(shown.map((f) => [f.code, f.path]), [["HARDCODED_SERVICE_IP", 'data["db.url"] line 1'], ["HARDCODED_POD_IP", 'data["db.url"] line 2']]);
    });
  });

  describe("services", () => {
    const pinnedFields = [{ manager: "kubectl-create", operation: "Update", fieldsV1: { "f:spec": { "f:clusterIP": {}, "f:ports": {} } } }];
    it("LoadBalancer: a blocker without consent, a warning with it", () => {
      const services = [service("web", "lb", { type: "LoadBalancer", clusterIP: "10.96.1.1", selector: { a: "b" } })];
      assert.deepStrictEqual(brief(checkServices(input({ services }))), [{ code: "LOADBALANCER_NEEDS_CONSENT", severity: "blocker", object: "Service web/lb", path: undefined }]);
      const consent = config({ services: { allowLoadBalancerRecreate: true } });
      assert.deepStrictEqual(brief(checkServices(input({ services }, { config: consent }))).map((f) => f.code), ["LOADBALANCER_RECREATE"]);
    });

    it("NodePort, pinned ClusterIP (by managedFields or last-applied), selector-less, externalIPs", () => {
      const services = [
        service("default", "kubernetes", { clusterIP: "10.96.0.1" }, { managedFields: [{ manager: "kube-apiserver", fieldsV1: { "f:spec": { "f:clusterIP": {} } } }] }),
        service("kube-system", "kube-dns", { clusterIP: "10.96.0.10", selector: { k: "dns" } }, { managedFields: pinnedFields }),
        service("web", "np", { type: "NodePort", clusterIP: "10.96.1.2", selector: { a: "b" }, ports: [{ port: 80, nodePort: 30080 }] }),
        service("web", "pinned", { clusterIP: "10.96.1.3", selector: { a: "b" } }, { managedFields: pinnedFields }),
        service("web", "applied", { clusterIP: "10.96.1.4", selector: { a: "b" } }, { annotations: { "kubectl.kubernetes.io/last-applied-configuration": '{"spec":{"clusterIP":"10.96.1.4"}}' } }),
        service("web", "auto", { clusterIP: "10.96.1.5", selector: { a: "b" } }, { managedFields: [{ manager: "helm", fieldsV1: { "f:spec": { "f:ports": {} } } }] }),
        service("db", "nosel", { clusterIP: "10.96.1.6" }),
        service("web", "ext", { clusterIP: "10.96.1.7", selector: { a: "b" }, externalIPs: ["203.0.113.5", "10.244.9.9", "10.48.0.5"] }),
      ];
      assert.deepStrictEqual(brief(checkServices(input({ services }))), [
        { code: "NODEPORT_SERVICE", severity: "info", object: "Service web/np", path: undefined },
        { code: "PINNED_CLUSTER_IP", severity: "warning", object: "Service web/pinned", path: "spec.clusterIP" },
        { code: "PINNED_CLUSTER_IP", severity: "warning", object: "Service web/applied", path: "spec.clusterIP" },
        { code: "SELECTORLESS_SERVICE", severity: "info", object: "Service db/nosel", path: undefined },
        { code: "EXTERNAL_IPS", severity: "info", object: "Service web/ext", path: "spec.externalIPs[0]" },
        { code: "EXTERNAL_IP_IN_OLD_RANGE", severity: "warning", object: "Service web/ext", path: "spec.externalIPs[1]" },
        { code: "EXTERNAL_IP_IN_NEW_RANGE", severity: "blocker", object: "Service web/ext", path: "spec.externalIPs[2]" },
      ]);
    });
  });

  describe("drains", () => {
    it("PDBs that allow no eviction now or ever, and bare pods; not mirror or finished pods", () => {
      const podDisruptionBudgets = [
        { metadata: { namespace: "db", name: "pg" }, spec: { minAvailable: 1 }, status: { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 } },
        { metadata: { namespace: "db", name: "never" }, spec: { maxUnavailable: 0 } },
        { metadata: { namespace: "db", name: "all" }, spec: { minAvailable: "100%" } },
        { metadata: { namespace: "web", name: "fine" }, spec: { minAvailable: 1 }, status: { disruptionsAllowed: 1, currentHealthy: 2, desiredHealthy: 1, expectedPods: 2 } },
        { metadata: { namespace: "web", name: "empty" }, spec: { minAvailable: 1 }, status: { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 0 } },
        { metadata: { namespace: "web", name: "covers-nothing" }, spec: { maxUnavailable: 0 }, status: { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 } },
      ];
      const pods: V1Pod[] = [
        { metadata: { namespace: "a", name: "bare" }, spec: { nodeName: "worker-1", containers: [] }, status: { phase: "Running" } },
        { metadata: { namespace: "a", name: "done" }, spec: { containers: [] }, status: { phase: "Succeeded" } },
        ...controlPlane,
      ];
      const found = checkDrains(input({ podDisruptionBudgets, pods }));
      assert.deepStrictEqual(found.map((f) => [f.code, f.object]), [
        ["PDB_BLOCKS_DRAIN", "PodDisruptionBudget db/pg"],
        ["PDB_BLOCKS_DRAIN", "PodDisruptionBudget db/never"],
        ["PDB_BLOCKS_DRAIN", "PodDisruptionBudget db/all"],
        ["BARE_POD_BLOCKS_DRAIN", "Pod a/bare"],
      ]);
      assert.match(found[0].message, /wait 300 s and fail: it allows 0 disruptions now \(1 healthy, 1 required, 1 expected\)/);
    });
  });

  describe("DNS replicas", () => {
    const dnsService = service("kube-system", "kube-dns", { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" } });
    const dnsPod = (name: string, nodeName: string, ready = true): V1Pod => ({
      metadata: { namespace: "kube-system", name, labels: { "k8s-app": "kube-dns", "pod-template-hash": "x" } },
      spec: { nodeName, containers: [] },
      status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
    });
    const moving = [node("cp-1", "10.244.0.0/24"), node("worker-1", "10.244.1.0/24")];

    it("one Ready DNS pod while nodes move: a warning naming its node and how to scale up; two Ready, or none: nothing", () => {
      const found = checkDnsReplicas(input({ services: [dnsService], nodes: moving, pods: [dnsPod("coredns-a", "cp-1"), dnsPod("coredns-b", "worker-1", false)] }));
      assert.deepStrictEqual(brief(found), [{ code: "DNS_SINGLE_REPLICA", severity: "warning", object: "Service kube-system/kube-dns", path: undefined }]);
      assert.match(found[0].message, /one Ready DNS pod behind it: every DNS lookup in the cluster fails while node cp-1 drains/);
      assert.match(found[0].action, /--replicas=2/);
      assert.deepStrictEqual(checkDnsReplicas(input({ services: [dnsService], nodes: moving, pods: [dnsPod("coredns-a", "cp-1"), dnsPod("coredns-b", "cp-1")] })), []);
      assert.deepStrictEqual(checkDnsReplicas(input({ services: [dnsService], nodes: moving, pods: [dnsPod("coredns-a", "cp-1", false)] })), [], "none Ready: DNS is served elsewhere or not at all; no drain changes that");
    });

    it("no node moves (a pod-range expansion, or only Services): no drain, no warning", () => {
      const expansion = config({ podCidr: { from: "10.244.0.0/16", to: "10.244.0.0/15", nodeMaskSize: 24 } });
      assert.deepStrictEqual(checkDnsReplicas(input({ services: [dnsService], nodes: moving, pods: [dnsPod("coredns-a", "cp-1")] }, { config: expansion })), []);
    });
  });

  describe("capacity and versions", () => {
    const base = { configMaps: [kubeadmConfig], pods: controlPlane, nodes: [node("cp-1", "10.244.0.0/24"), node("worker-1", "10.244.1.0/24")] };
    it("a fitting cluster gives capacity and version facts only", () => {
      assert.deepStrictEqual(brief(checkCapacityAndVersions(input(base))).map((f) => [f.code, f.severity]), [
        ["SERVICE_RANGE_CAPACITY", "info"],
        ["POD_RANGE_CAPACITY", "info"],
        ["APISERVER_VERSION", "info"],
      ]);
    });

    it("new ranges too small, and node subnets too small for maxPods", () => {
      const small = config({ serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/30" }, podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/25", nodeMaskSize: 26 } });
      const services = ["a", "b", "c"].map((n, i) => service("x", n, { clusterIP: `10.96.0.${i + 1}` }));
      const nodes = ["cp-1", "worker-1", "worker-2"].map((n) => node(n));
      const codes = brief(checkCapacityAndVersions(input({ ...base, services, nodes }, { config: small }))).map((f) => [f.code, f.object]);
      assert.deepStrictEqual(codes.slice(0, 5), [
        ["SERVICE_RANGE_TOO_SMALL", "cluster"],
        ["POD_RANGE_TOO_SMALL", "cluster"],
        ["NODE_SUBNET_TOO_SMALL", "Node cp-1"],
        ["NODE_SUBNET_TOO_SMALL", "Node worker-1"],
        ["NODE_SUBNET_TOO_SMALL", "Node worker-2"],
      ]);
    });

    it("predicts the KCM crash for a Node outside the new range that the rollout does not move", () => {
      const nodes = [...base.nodes, node("worker-9", "10.244.9.0/24"), node("worker-new", "10.48.3.0/24")];
      const crash = checkCapacityAndVersions(input({ ...base, nodes })).filter((f) => f.code === "KCM_CRASH_PREDICTED");
      assert.deepStrictEqual(brief(crash), [{ code: "KCM_CRASH_PREDICTED", severity: "blocker", object: "Node worker-9", path: "spec.podCIDRs[0]" }]);
      assert.match(crash[0].message, /10\.244\.9\.0\/24 lies outside the new --cluster-cidr 10\.48\.0\.0\/16/);
    });

    it("reports the ServiceCIDR API when the discovery API serves it", () => {
      const found = checkCapacityAndVersions(input({ ...base, serverVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" }, serviceCidrApiVersions: ["v1", "v1beta1"] }));
      assert.match(found.find((f) => f.code === "APISERVER_VERSION")!.message, /v1\.33\.1; ServiceCIDR API served \(networking\.k8s\.io\/v1, v1beta1\)/);
      const present = found.find((f) => f.code === "SERVICECIDR_API_PRESENT");
      assert.equal(present?.severity, "info", "the graph itself moves the default ServiceCIDR");
      assert.match(present!.message, /service-cidr-open.*service-cidr-close/);
      assert.ok(!found.some((f) => f.code === "SERVICECIDR_BETA_API"));
    });

    it("1.33: refuses the move while any kube-apiserver dual-writes the legacy allocator; the gate on every one clears it", () => {
      const v133 = { serverVersion: { major: "1", minor: "33", gitVersion: "v1.33.13" }, serviceCidrApiVersions: ["v1"] };
      const apiservers = (gates: string[][]) => gates.map((g, i) => mirrorPod("kube-apiserver", `cp-${i + 1}`, ["--service-cluster-ip-range=10.96.0.0/12", ...g]));
      const blocked = checkCapacityAndVersions(input({ ...base, ...v133, pods: apiservers([["--feature-gates=DisableAllocatorDualWrite=true"], []]) })).filter((f) => f.code === "SERVICE_ALLOCATOR_DUAL_WRITE");
      assert.deepStrictEqual(brief(blocked), [{ code: "SERVICE_ALLOCATOR_DUAL_WRITE", severity: "blocker", object: "Pod kube-system/kube-apiserver-cp-2", path: "--feature-gates" }]);
      assert.match(blocked[0].action, /add DisableAllocatorDualWrite=true to --feature-gates of every kube-apiserver/);
      const cleared = checkCapacityAndVersions(input({ ...base, ...v133, pods: apiservers([["--feature-gates=Foo=false,DisableAllocatorDualWrite=true"], ["--feature-gates=DisableAllocatorDualWrite=true"]]) }));
      assert.ok(!cleared.some((f) => f.code === "SERVICE_ALLOCATOR_DUAL_WRITE"));
      const v134 = checkCapacityAndVersions(input({ ...base, serverVersion: { major: "1", minor: "34", gitVersion: "v1.34.4" }, serviceCidrApiVersions: ["v1"], pods: apiservers([[]]) }));
      assert.ok(!v134.some((f) => f.code === "SERVICE_ALLOCATOR_DUAL_WRITE"), "1.34 no longer dual-writes");
    });

    it("refuses a ServiceCIDR API served only as beta (the gate turned on before 1.33)", () => {
      const found = checkCapacityAndVersions(input({ ...base, serverVersion: { major: "1", minor: "32", gitVersion: "v1.32.13" }, serviceCidrApiVersions: ["v1beta1"] }));
      const beta = found.find((f) => f.code === "SERVICECIDR_BETA_API");
      assert.equal(beta?.severity, "blocker");
      assert.match(beta!.action, /MultiCIDRServiceAllocator/);
    });

    it("control-plane flags: range flags that differ are blockers, others warnings; flags must match the config", () => {
      const cfg = config({ nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }, { name: "cp-2", host: "192.168.50.11", role: "control-plane" }, { name: "worker-1", host: "192.168.50.12", role: "worker" }] });
      const pods = [
        ...controlPlane,
        mirrorPod("kube-apiserver", "cp-2", ["--service-cluster-ip-range=10.100.0.0/16", "--advertise-address=192.168.50.11", "--v=4"]),
        mirrorPod("kube-controller-manager", "cp-2", ["--cluster-cidr=10.244.0.0/16", "--service-cluster-ip-range=10.96.0.0/12", "--allocate-node-cidrs=true"]),
      ];
      const found = checkCapacityAndVersions(input({ ...base, pods }, { config: cfg })).filter((f) => f.severity !== "info");
      assert.deepStrictEqual(brief(found), [
        { code: "RANGE_FLAG_MISMATCH", severity: "blocker", object: "Pod kube-system/kube-apiserver-cp-2", path: "--service-cluster-ip-range" },
        { code: "CONTROL_PLANE_RANGE_FLAGS_DIFFER", severity: "blocker", object: "kube-apiserver static pods", path: "--service-cluster-ip-range" },
        { code: "CONTROL_PLANE_FLAGS_DIFFER", severity: "warning", object: "kube-apiserver static pods", path: "--v" },
      ]);
      assert.strictEqual(found[1].message, "control-plane nodes disagree on --service-cluster-ip-range: cp-1=10.96.0.0/12, cp-2=10.100.0.0/16");
    });

    it("parses --flag=value, --flag value and bare boolean flags", () => {
      assert.deepStrictEqual([...parseFlags(["kube-apiserver", "--a=1", "--b", "two", "--c", "--d=x=y"])], [["a", "1"], ["b", "two"], ["c", "true"], ["d", "x=y"]]);
    });
  });

  describe("size and shape", () => {
    it("more than 50 nodes, StatefulSets with PVCs, many fixed-IP dependencies: each a warning, summed up as advice", () => {
      const nodes = Array.from({ length: 51 }, (_, i) => node(`n-${i}`));
      const statefulSets = [{ metadata: { namespace: "db", name: "pg" }, spec: { selector: {}, serviceName: "pg", template: {}, volumeClaimTemplates: [{ metadata: { name: "data" } }] } }];
      const persistentVolumeClaims = [0, 1, 2].map((i) => ({ metadata: { namespace: "db", name: `data-pg-${i}` } }));
      const found = checkSizeAndShape(input({ nodes, statefulSets, persistentVolumeClaims }), MANY_FIXED_IP_DEPENDENCIES + 1);
      assert.deepStrictEqual(brief(found).map((f) => [f.code, f.severity, f.object]), [
        ["LARGE_CLUSTER", "warning", "cluster"],
        ["STATEFULSET_WITH_PVCS", "warning", "StatefulSet db/pg"],
        ["MANY_FIXED_IP_DEPENDENCIES", "warning", "cluster"],
        ["CONSIDER_REBUILD", "info", "cluster"],
      ]);
      assert.match(found[1].message, /on 3 PVCs/);
      assert.strictEqual(found[3].message, "the runbook's advice applies: 51 nodes; 1 StatefulSet with PVCs (db/pg); 21 fixed-IP dependencies");
    });

    it("counts the fixed-IP findings of the other families", () => {
      const configMaps = Array.from({ length: MANY_FIXED_IP_DEPENDENCIES + 1 }, (_, i) => ({ metadata: { namespace: "x", name: `cm-${i}` }, data: { url: `10.96.3.${i + 1}` } }));
      const found = preflightFindings(input({ configMaps }));
      assert.ok(found.some((f) => f.code === "MANY_FIXED_IP_DEPENDENCIES"));
      assert.ok(!preflightFindings(input({ configMaps: configMaps.slice(1) })).some((f) => f.code === "MANY_FIXED_IP_DEPENDENCIES"));
    });
  });

  describe("etcd", () => {
    const dir = { directory: "/backups", exists: true, testedDirectory: "/backups", writable: true, freeBytes: 10 * 2 ** 30 };
    const up = (endpoint: string, leader = "7") => ({ endpoint, ok: true as const, version: "3.4.23", dbSizeBytes: 2 ** 20, memberId: "7", leader, alarms: [] });
    it("healthy endpoints and a writable directory are facts", () => {
      const found = checkEtcd(input({}, { etcd: { endpoints: ["http://a:2379"], statuses: [up("http://a:2379")], snapshotDirectory: dir } }));
      assert.deepStrictEqual(found.map((f) => [f.code, f.severity]), [["ETCD_HEALTHY", "info"], ["SNAPSHOT_DIR_WRITABLE", "info"]]);
    });

    it("unreachable member, alarm, no leader, split leaders, unwritable or full directory", () => {
      const etcd: EtcdProbe = {
        endpoints: ["http://a:2379", "http://b:2379", "http://c:2379", "http://d:2379"],
        statuses: [
          { endpoint: "http://a:2379", ok: false, error: "no answer to status within 5000 ms" },
          { ...up("http://b:2379"), alarms: ["NOSPACE on member 9"] },
          up("http://c:2379", "0"),
          up("http://d:2379", "8"),
        ],
        snapshotDirectory: { ...dir, writable: false, error: "EACCES" },
      };
      assert.deepStrictEqual(brief(checkEtcd(input({}, { etcd }))).map((f) => [f.code, f.object]), [
        ["ETCD_UNREACHABLE", "etcd http://a:2379"],
        ["ETCD_ALARM", "etcd http://b:2379"],
        ["ETCD_NO_LEADER", "etcd http://c:2379"],
        ["ETCD_SPLIT_LEADERS", "etcd http://a:2379,http://b:2379,http://c:2379,http://d:2379"],
        ["SNAPSHOT_DIR_NOT_WRITABLE", "snapshot directory /backups"],
      ]);
      const full = checkEtcd(input({}, { etcd: { endpoints: ["http://a:2379"], statuses: [up("http://a:2379")], snapshotDirectory: { ...dir, freeBytes: 1000 } } }));
      assert.deepStrictEqual(full.map((f) => f.code), ["ETCD_HEALTHY", "SNAPSHOT_DIR_LOW_SPACE"]);
    });

    it("says clearly when the health check was skipped for want of credentials", () => {
      const found = checkEtcd(input({}, { etcd: { endpoints: ["https://a:2379"], skippedReason: "cidr-migration:etcd.key is a secure: value the CLI cannot decrypt", statuses: [], snapshotDirectory: dir } }));
      assert.deepStrictEqual(found.map((f) => [f.code, f.severity]), [["ETCD_CHECK_SKIPPED", "warning"], ["SNAPSHOT_DIR_WRITABLE", "info"]]);
      assert.match(found[0].message, /not checked: cidr-migration:etcd\.key is a secure: value/);
      assert.match(found[0].action, /--etcd-ca FILE --etcd-cert FILE --etcd-key FILE/);
    });
  });
});
