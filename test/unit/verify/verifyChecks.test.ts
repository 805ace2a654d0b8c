import * as assert from "assert";
import { V1ConfigMap, V1Pod } from "@kubernetes/client-node";
import { validateConfig } from "../../../lib/config/config";
import { Finding } from "../../../lib/report/findings";
import { Inventory, ServiceInfo } from "../../../lib/plan/inventory";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { verifyFindings, verifyTargets, VerifyInput } from "../../../lib/verify";
import { mirrorPod } from "../../support/mirrorPods";
import { rangeConfig } from "../../support/rangeConfig";

// verify's pure checks over a hand-made migrated cluster; test/integration/verify.test.ts does the same for real.

const config = rangeConfig(validateConfig({
  values: {
    serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
    podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
    etcd: { endpoints: ["http://127.0.0.1:2379"] },
    nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }, { name: "worker-1", host: "192.168.50.11", role: "worker" }],
  },
}));

const svc = (namespace: string, name: string, clusterIP: string): ServiceInfo => ({ namespace, name, type: "ClusterIP", clusterIP, clusterIPs: [clusterIP], hasSelector: true });
const cm = (name: string, key: string, text: string): V1ConfigMap => ({ metadata: { namespace: "kube-system", name }, data: { [key]: text } });
const pod = (namespace: string, name: string, ip: string, extra: Partial<V1Pod["spec"]> = {}): V1Pod => ({
  metadata: { namespace, name },
  spec: { containers: [], nodeName: "worker-1", ...extra },
  status: { phase: "Running", podIP: ip, podIPs: [{ ip }] },
});
const mirror = mirrorPod;

function migrated(): VerifyInput {
  const inventory: Inventory = {
    serverVersion: { major: "1", minor: "20", gitVersion: "v1.20.2" },
    services: [svc("default", "kubernetes", "10.112.0.1"), svc("kube-system", "kube-dns", "10.112.0.10"), svc("web", "api", "10.112.4.4")],
    nodes: [
      { name: "cp-1", podCIDR: "10.48.0.0/24", podCIDRs: ["10.48.0.0/24"], internalIPs: ["192.168.50.10"], controlPlane: true, labels: {}, unschedulable: false },
      { name: "worker-1", podCIDR: "10.48.1.0/24", podCIDRs: ["10.48.1.0/24"], internalIPs: ["192.168.50.11"], controlPlane: false, labels: {}, unschedulable: false },
    ],
    cni: { detected: "calico", calicoPools: [{ name: "new-pool", cidr: "10.48.0.0/16" }] },
  };
  const cluster = {
    ...emptyClusterObjects(),
    serverVersion: inventory.serverVersion,
    pods: [
      pod("web", "api-1", "10.48.1.5"),
      pod("kube-system", "proxy", "192.168.50.11", { hostNetwork: true }),
      mirror("kube-apiserver", ["--service-cluster-ip-range=10.112.0.0/12"]),
      mirror("kube-controller-manager", ["--cluster-cidr=10.48.0.0/16", "--service-cluster-ip-range=10.112.0.0/12"]),
    ],
    configMaps: [
      cm("kube-proxy", "config.conf", "mode: iptables\nclusterCIDR: 10.48.0.0/16\n"),
      cm("kubeadm-config", "ClusterConfiguration", "networking:\n  podSubnet: 10.48.0.0/16\n  serviceSubnet: 10.112.0.0/12\n"),
      cm("kubelet-config-1.20", "kubelet", "clusterDNS:\n- 10.112.0.10\n"),
    ],
    calicoIpamBlocks: [{ metadata: { name: "10-48-1-0-26" }, spec: { cidr: "10.48.1.0/26", affinity: "host:worker-1" } }],
    calicoBlockAffinities: [{ metadata: { name: "worker-1-10-48-1-0-26" }, spec: { cidr: "10.48.1.0/26", node: "worker-1", state: "confirmed" } }],
  };
  return { config, inventory, cluster, targets: verifyTargets(config, inventory) };
}

const brief = (fs: Finding[]) => fs.map((f) => [f.code, f.object, f.path ?? ""]);

describe("verify checks (pure)", () => {
  it("a migrated cluster has no findings at all", () => {
    assert.deepStrictEqual(verifyFindings(migrated()), []);
  });

  it("targets: the kubernetes Service at the new first IP; the DNS Service from the reviewed plan when given", () => {
    const input = migrated();
    assert.deepStrictEqual(input.targets, { kubernetesServiceIP: "10.112.0.1", dnsServiceIP: "10.112.0.10", dnsSource: "the plan of the live cluster" });
    const reviewed = verifyTargets(config, input.inventory, { plan: { dns: { newClusterIP: "10.112.0.53" } } as never, source: "the plan file p.json" });
    assert.strictEqual(reviewed.dnsServiceIP, "10.112.0.53");
    const found = verifyFindings({ ...input, targets: reviewed });
    assert.deepStrictEqual(brief(found), [
      ["DNS_SERVICE_NOT_AT_PLANNED_IP", "Service kube-system/kube-dns", "spec.clusterIP"],
      ["KUBELET_CLUSTER_DNS_MISMATCH", "ConfigMap kube-system/kubelet-config-1.20", 'data["kubelet"] clusterDNS'],
    ]);
    assert.match(found[0].message, /but the plan file p\.json puts it at 10\.112\.0\.53/);
  });

  it("a bridge still on a Service (services.bridgeOldIps) is a blocker until a re-run ends it", () => {
    const input = migrated();
    input.inventory.services.push({ ...svc("shop", "web", "10.112.0.20"), externalIPs: ["10.96.0.20"], bridgedOldIPs: ["10.96.0.20"] });
    const found = verifyFindings(input);
    assert.deepStrictEqual(brief(found), [["OLD_IP_BRIDGE_LEFT", "Service shop/web", "spec.externalIPs"]]);
    assert.match(found[0].message, /old ClusterIP 10\.96\.0\.20/);
    assert.match(found[0].action, /old-ip-bridges/);
  });

  it("a planned IP still routed first (services.routeNewIpsFirst) is a blocker until a re-run's Service moves remove it", () => {
    const input = migrated();
    input.inventory.services.push({ ...svc("shop", "web", "10.112.0.20"), externalIPs: ["10.112.0.21"], routedAheadIPs: ["10.112.0.21"] });
    const found = verifyFindings(input);
    assert.deepStrictEqual(brief(found), [["NEW_IP_FIRST_LEFT", "Service shop/web", "spec.externalIPs"]]);
    assert.match(found[0].message, /10\.112\.0\.21 as an externalIP/);
  });

  it("a Service between the two writes of its in-place move, and a stand-in left, are blockers until a re-run finishes the moves", () => {
    const input = migrated();
    input.inventory.services.push(
      { namespace: "shop", name: "cart", type: "ExternalName", hasSelector: true, movingInPlaceTo: "10.112.0.30" },
      { ...svc("shop", "cart-hop-1a2b3", "10.127.255.254"), hopStandIn: true },
    );
    const found = verifyFindings(input);
    assert.deepStrictEqual(brief(found), [["SERVICE_MOVING_IN_PLACE", "Service shop/cart", "spec.type"], ["HOP_STAND_IN_LEFT", "Service shop/cart-hop-1a2b3", ""]]);
    assert.match(found[0].message, /ExternalName.*10\.112\.0\.30/);
    assert.match(found[0].action, /pulumi up/);
    assert.match(found[1].action, /pulumi up/);
  });

  it("the node rollout's DNS budget left behind is a warning naming it; the user's own budgets are not ours to report", () => {
    const input = migrated();
    input.cluster.podDisruptionBudgets.push(
      { metadata: { namespace: "kube-system", name: "kube-dns-cidr-migration", labels: { "app.kubernetes.io/managed-by": "cidr-migration.io" } }, spec: { maxUnavailable: 1 } },
      { metadata: { namespace: "shop", name: "web", labels: { "app.kubernetes.io/managed-by": "Helm" } }, spec: { minAvailable: 1 } },
    );
    const found = verifyFindings(input);
    assert.deepStrictEqual(found.map((f) => [f.code, f.severity, f.object]), [["DNS_DISRUPTION_BUDGET_LEFT", "warning", "PodDisruptionBudget kube-system/kube-dns-cidr-migration"]]);
    assert.match(found[0].action, /dns-budget-close/);
  });

  it("lists every leftover in the old ranges, each with object and path", () => {
    const input = migrated();
    input.inventory.services.push(svc("web", "old", "10.96.7.7"));
    input.inventory.services[0] = svc("default", "kubernetes", "10.96.0.1");
    input.inventory.services[1] = svc("kube-system", "kube-dns", "10.96.0.10");
    input.inventory.nodes.push({ name: "worker-2", podCIDR: "10.244.2.0/24", podCIDRs: ["10.244.2.0/24"], internalIPs: [], controlPlane: false, labels: {}, unschedulable: false });
    input.inventory.nodes.push({ name: "worker-3", internalIPs: [], controlPlane: false, labels: {}, unschedulable: false });
    input.inventory.cni.calicoPools.push({ name: "default-ipv4-ippool", cidr: "10.244.0.0/16", disabled: true });
    input.cluster.pods.push(pod("web", "stale", "10.244.2.9"), { ...pod("web", "done", "10.244.2.10"), status: { phase: "Succeeded", podIP: "10.244.2.10" } });
    input.cluster.calicoIpamBlocks.push({ metadata: { name: "10-244-2-0-26" }, spec: { cidr: "10.244.2.0/26", affinity: "host:worker-2" } });
    input.cluster.calicoBlockAffinities.push({ metadata: { name: "worker-2-10-244-2-0-26" }, spec: { cidr: "10.244.2.0/26", node: "worker-2" } });
    input.cluster.configMaps = [
      cm("kube-proxy", "config.conf", "clusterCIDR: 10.244.0.0/16\n"),
      cm("kubeadm-config", "ClusterConfiguration", "networking:\n  podSubnet: 10.244.0.0/16\n  serviceSubnet: 10.96.0.0/12\n"),
      cm("kubelet-config-1.20", "kubelet", "clusterDNS:\n- 10.96.0.10\n"),
    ];
    input.cluster.pods.push(mirror("kube-controller-manager", ["--cluster-cidr=10.244.0.0/16"]));
    input.cluster.pods[input.cluster.pods.length - 1].metadata!.name = "kube-controller-manager-cp-2";
    input.cluster.pods[input.cluster.pods.length - 1].spec!.nodeName = "cp-2";
    assert.deepStrictEqual(brief(verifyFindings(input)), [
      ["SERVICE_IN_OLD_RANGE", "Service default/kubernetes", "spec.clusterIPs[0]"],
      ["SERVICE_IN_OLD_RANGE", "Service kube-system/kube-dns", "spec.clusterIPs[0]"],
      ["SERVICE_IN_OLD_RANGE", "Service web/old", "spec.clusterIPs[0]"],
      ["KUBERNETES_SERVICE_NOT_AT_NEW_FIRST_IP", "Service default/kubernetes", "spec.clusterIP"],
      ["DNS_SERVICE_NOT_AT_PLANNED_IP", "Service kube-system/kube-dns", "spec.clusterIP"],
      ["NODE_PODCIDR_IN_OLD_RANGE", "Node worker-2", "spec.podCIDRs[0]"],
      ["NODE_PODCIDR_MISSING", "Node worker-3", "spec.podCIDR"],
      ["POD_IP_IN_OLD_RANGE", "Pod web/stale", "status.podIPs[0].ip"],
      ["CALICO_POOL_IN_OLD_RANGE", "IPPool default-ipv4-ippool", "spec.cidr"],
      ["CALICO_BLOCK_IN_OLD_RANGE", "IPAMBlock 10-244-2-0-26", "spec.cidr"],
      ["CALICO_AFFINITY_IN_OLD_RANGE", "BlockAffinity worker-2-10-244-2-0-26", "spec.cidr"],
      ["KUBE_PROXY_CLUSTER_CIDR_OLD", "ConfigMap kube-system/kube-proxy", 'data["config.conf"] clusterCIDR'],
      ["KUBEADM_POD_SUBNET_OLD", "ConfigMap kube-system/kubeadm-config", 'data["ClusterConfiguration"] networking.podSubnet'],
      ["KUBEADM_SERVICE_SUBNET_OLD", "ConfigMap kube-system/kubeadm-config", 'data["ClusterConfiguration"] networking.serviceSubnet'],
      ["KUBELET_CLUSTER_DNS_OLD", "ConfigMap kube-system/kubelet-config-1.20", 'data["kubelet"] clusterDNS[0]'],
      ["CONTROL_PLANE_FLAG_OLD", "Pod kube-system/kube-controller-manager-cp-2", "--cluster-cidr"],
    ]);
  });

  it("Calico under the operator: fails while the Installation lists an old-range pool, and on a closed old IPPool", () => {
    const input = migrated();
    input.inventory.cni.calicoPools.push({ name: "default-ipv4-ippool", cidr: "10.244.0.0/16", nodeSelector: "!all()" });
    input.inventory.cni.calicoOperator = {
      v3Served: false,
      apiServerState: "Ready",
      ipPools: [{ name: "default-ipv4-ippool", cidr: "10.244.0.0/16", nodeSelector: "!all()" }, { name: "cidr-migration-10-48-0-0-16", cidr: "10.48.0.0/16" }],
    };
    const findings = verifyFindings(input);
    assert.deepStrictEqual(brief(findings), [
      ["CALICO_POOL_IN_OLD_RANGE", "IPPool default-ipv4-ippool", "spec.cidr"],
      ["CALICO_INSTALLATION_POOL_IN_OLD_RANGE", "Installation default", "spec.calicoNetwork.ipPools[0]"],
    ]);
    assert.deepStrictEqual(findings.map((f) => f.severity), ["blocker", "blocker"]);
    assert.match(findings[0].message, /\(closed to new blocks\)/);
    input.inventory.cni.calicoPools = [];
    input.inventory.cni.calicoOperator.ipPools = input.inventory.cni.calicoOperator.ipPools!.slice(1);
    assert.deepStrictEqual(verifyFindings(input), []);
  });

  it("an expansion (the new range contains the old) leaves nothing to report in the old range", () => {
    const expansion = rangeConfig(validateConfig({
      values: {
        serviceCidr: { from: "10.96.0.0/16", to: "10.96.0.0/12" },
        podCidr: { from: "10.244.0.0/16", to: "10.240.0.0/12", nodeMaskSize: 24 },
        etcd: { endpoints: ["http://127.0.0.1:2379"] },
        nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
      },
    }));
    const input = migrated();
    input.inventory.services = [svc("default", "kubernetes", "10.96.0.1"), svc("kube-system", "kube-dns", "10.96.0.10")];
    input.inventory.nodes = [{ name: "cp-1", podCIDR: "10.244.0.0/24", internalIPs: [], controlPlane: true, labels: {}, unschedulable: false }];
    input.inventory.cni.calicoPools = [];
    input.cluster.pods = [pod("web", "a", "10.244.0.5")];
    input.cluster.configMaps = [];
    input.cluster.calicoIpamBlocks = [];
    input.cluster.calicoBlockAffinities = [];
    assert.deepStrictEqual(verifyFindings({ ...input, config: expansion, targets: verifyTargets(expansion, input.inventory) }), []);
  });
});

describe("verify: the ServiceCIDR API (1.33+)", () => {
  function onServiceCidrApi(): VerifyInput {
    const input = migrated();
    input.inventory.serviceCidrs = [{ name: "kubernetes", cidrs: ["10.112.0.0/12"], terminating: false }];
    input.cluster.ipAddresses = [
      { metadata: { name: "10.112.0.1" }, spec: { parentRef: { resource: "services", namespace: "default", name: "kubernetes" } } },
      { metadata: { name: "10.112.0.10" }, spec: { parentRef: { resource: "services", namespace: "kube-system", name: "kube-dns" } } },
    ];
    return input;
  }

  it("a migrated cluster whose default ServiceCIDR holds the new range has no findings", () => {
    assert.deepStrictEqual(verifyFindings(onServiceCidrApi()), []);
  });

  it("fails while the default still holds the old range, a ServiceCIDR or an IPAddress is left in it", () => {
    const input = onServiceCidrApi();
    input.inventory.serviceCidrs = [
      { name: "kubernetes", cidrs: ["10.96.0.0/12"], terminating: true },
      { name: "cidr-migration-10-112-0-0-12", cidrs: ["10.112.0.0/12"], terminating: false },
      { name: "extra", cidrs: ["10.96.128.0/24"], terminating: false },
    ];
    input.cluster.ipAddresses.push({ metadata: { name: "10.96.0.10" }, spec: { parentRef: { resource: "services", namespace: "kube-system", name: "kube-dns-old" } } });
    const found = verifyFindings(input);
    assert.deepStrictEqual(brief(found), [
      ["DEFAULT_SERVICE_CIDR_NOT_NEW_RANGE", "ServiceCIDR kubernetes", "spec.cidrs"],
      ["SERVICE_CIDR_IN_OLD_RANGE", "ServiceCIDR extra", "spec.cidrs"],
      ["IPADDRESS_IN_OLD_RANGE", "IPAddress 10.96.0.10", ""],
    ]);
    assert.match(found[0].message, /holds 10\.96\.0\.0\/12 and is Terminating, not the new range 10\.112\.0\.0\/12/);
    assert.match(found[2].message, /held by services kube-system\/kube-dns-old/);
  });

  it("fails when the apiserver has not re-created the default ServiceCIDR", () => {
    const input = onServiceCidrApi();
    input.inventory.serviceCidrs = [];
    assert.deepStrictEqual(brief(verifyFindings(input)), [["DEFAULT_SERVICE_CIDR_MISSING", "ServiceCIDR kubernetes", ""]]);
  });

  it("has nothing to check where the API is not served", () => {
    const input = migrated();
    input.cluster.ipAddresses = [{ metadata: { name: "10.96.0.10" } }];
    assert.deepStrictEqual(verifyFindings(input), []);
  });
});

describe("verify: a dual-stack run checks both families (issue 17)", () => {
  const V6 = { serviceFrom: "fd00:10:96::/112", serviceTo: "fd00:10:112::/112", podFrom: "fd00:10:244::/56", podTo: "fd00:10:48::/56" };
  const dualConfig = rangeConfig(validateConfig({
    values: {
      serviceCidr: { from: ["10.96.0.0/12", V6.serviceFrom], to: ["10.112.0.0/12", V6.serviceTo] },
      podCidr: { from: ["10.244.0.0/16", V6.podFrom], to: ["10.48.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } },
      etcd: { endpoints: ["http://127.0.0.1:2379"] },
      nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }, { name: "worker-1", host: "192.168.50.11", role: "worker" }],
    },
  }, { planOnly: true }));

  function migratedDual(): VerifyInput {
    const input = migrated();
    input.config = dualConfig;
    const dual = (namespace: string, name: string, ips: string[]): ServiceInfo => ({ ...svc(namespace, name, ips[0]), clusterIPs: ips });
    input.inventory.services.push(dual("web", "both", ["fd00:10:112::7", "10.112.4.7"]));
    input.inventory.nodes = input.inventory.nodes.map((n, i) => ({ ...n, podCIDRs: [n.podCIDR!, `fd00:10:48:${i}::/64`] }));
    input.inventory.cni = { detected: "none", calicoPools: [] };
    input.cluster.calicoIpamBlocks = [];
    input.cluster.calicoBlockAffinities = [];
    input.cluster.pods = [
      { ...pod("web", "api-1", "10.48.1.5"), status: { phase: "Running", podIP: "10.48.1.5", podIPs: [{ ip: "10.48.1.5" }, { ip: "fd00:10:48:1::5" }] } },
      mirror("kube-apiserver", ["--service-cluster-ip-range=10.112.0.0/12,fd00:10:112::/112"]),
      mirror("kube-controller-manager", ["--cluster-cidr=10.48.0.0/16,fd00:10:48::/56", "--service-cluster-ip-range=10.112.0.0/12,fd00:10:112::/112"]),
    ];
    input.cluster.configMaps = [
      cm("kube-proxy", "config.conf", "mode: iptables\nclusterCIDR: 10.48.0.0/16,fd00:10:48::/56\n"),
      cm("kubeadm-config", "ClusterConfiguration", "networking:\n  podSubnet: 10.48.0.0/16,fd00:10:48::/56\n  serviceSubnet: 10.112.0.0/12,fd00:10:112::/112\n"),
      cm("kubelet-config-1.20", "kubelet", "clusterDNS:\n- 10.112.0.10\n"),
    ];
    input.inventory.serviceCidrs = [{ name: "kubernetes", cidrs: ["10.112.0.0/12", V6.serviceTo], terminating: false }];
    input.targets = verifyTargets(dualConfig, input.inventory);
    return input;
  }

  it("a cluster migrated in both families has no findings", () => {
    assert.deepStrictEqual(brief(verifyFindings(migratedDual())), []);
  });

  it("finds what is left in the second family's old range, a node without its second podCIDR, and a default ServiceCIDR on one family", () => {
    const input = migratedDual();
    input.inventory.services.push({ ...svc("web", "stale-v6", "fd00:10:96::9"), clusterIPs: ["fd00:10:96::9", "10.112.4.9"] });
    input.inventory.nodes[1] = { ...input.inventory.nodes[1], podCIDRs: [input.inventory.nodes[1].podCIDR!] };
    input.cluster.pods.push({ ...pod("web", "stale", "10.48.1.6"), status: { phase: "Running", podIP: "10.48.1.6", podIPs: [{ ip: "10.48.1.6" }, { ip: "fd00:10:244:1::6" }] } });
    input.cluster.configMaps[0] = cm("kube-proxy", "config.conf", "clusterCIDR: 10.48.0.0/16,fd00:10:244::/56\n");
    input.inventory.serviceCidrs = [{ name: "kubernetes", cidrs: ["10.112.0.0/12"], terminating: false }];
    assert.deepStrictEqual(brief(verifyFindings(input)), [
      ["SERVICE_IN_OLD_RANGE", "Service web/stale-v6", "spec.clusterIPs[0]"],
      ["DEFAULT_SERVICE_CIDR_NOT_NEW_RANGE", "ServiceCIDR kubernetes", "spec.cidrs"],
      ["NODE_PODCIDR_FAMILY_MISSING", "Node worker-1", "spec.podCIDRs"],
      ["POD_IP_IN_OLD_RANGE", "Pod web/stale", "status.podIPs[1].ip"],
      ["KUBE_PROXY_CLUSTER_CIDR_OLD", "ConfigMap kube-system/kube-proxy", 'data["config.conf"] clusterCIDR'],
    ]);
  });
});
