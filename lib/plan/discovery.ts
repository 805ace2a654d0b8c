import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, V1ConfigMap, V1Node, V1Service, VersionApi } from "@kubernetes/client-node";
import { parse } from "yaml";
import { bridgedIpsOf } from "../serviceMove/oldIpBridge";
import { routedAheadIpsOf } from "../serviceMove/newIpAhead";
import { HOP_STAND_IN_LABEL, HOPPING_ANNOTATION } from "../serviceMove/inPlace";
import { describeKubeError, isNotFound } from "../config/kubeClient";
import { getOptional, TIGERA } from "../podNetwork/calicoApi";
import { CalicoOperatorInfo, CalicoPoolInfo, CniInfo, InstallationPool, Inventory, NodeInfo, ServiceCidrInfo, ServiceInfo } from "./inventory";

/** Live cluster → Inventory. Read-only: only get and list calls. */

const PAGE = 500;
const CONTROL_PLANE_LABELS = ["node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"];

export async function discoverInventory(kc: KubeConfig): Promise<Inventory> {
  const server = kc.getCurrentCluster()?.server;
  const core = kc.makeApiClient(CoreV1Api);
  const guard = <T>(action: string, p: Promise<T>): Promise<T> =>
    p.catch((err) => {
      throw describeKubeError(err, action, server);
    });

  const version = await guard("reading the server version", kc.makeApiClient(VersionApi).getCode());
  const [services, nodes, kubeProxy, kubeadm, cni, serviceCidrs] = await Promise.all([
    guard("listing Services", listAll((c) => core.listServiceForAllNamespaces({ limit: PAGE, _continue: c }))),
    guard("listing Nodes", listAll((c) => core.listNode({ limit: PAGE, _continue: c }))),
    guard("reading ConfigMap kube-system/kube-proxy", optionalConfigMap(core, "kube-system", "kube-proxy")),
    guard("reading ConfigMap kube-system/kubeadm-config", optionalConfigMap(core, "kube-system", "kubeadm-config")),
    guard("discovering the CNI", discoverCni(kc, core)),
    guard("listing ServiceCIDRs (networking.k8s.io/v1)", discoverServiceCidrs(kc)),
  ]);
  const kubelet = await guard(
    "reading ConfigMap kube-system/kubelet-config",
    (async () =>
      (await optionalConfigMap(core, "kube-system", "kubelet-config")) ??
      optionalConfigMap(core, "kube-system", `kubelet-config-${version.major}.${version.minor.replace(/\D+$/, "")}`))(),
  );

  return {
    serverVersion: { major: version.major, minor: version.minor, gitVersion: version.gitVersion },
    services: services.map(toServiceInfo),
    nodes: nodes.map(toNodeInfo),
    kubeProxy: kubeProxy ? parseKubeProxy(kubeProxy) : undefined,
    kubeadmConfig: kubeadm ? parseKubeadmConfig(kubeadm) : undefined,
    kubeletConfig: kubelet ? parseKubeletConfig(kubelet) : undefined,
    cni,
    ...(serviceCidrs ? { serviceCidrs } : {}),
  };
}

/** undefined when networking.k8s.io/v1 has no ServiceCIDR (before 1.33, or the API turned off). */
async function discoverServiceCidrs(kc: KubeConfig): Promise<ServiceCidrInfo[] | undefined> {
  let list: { items: { metadata?: { name?: string; deletionTimestamp?: string }; spec?: { cidrs?: string[] } }[] };
  try {
    list = (await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({ group: "networking.k8s.io", version: "v1", plural: "servicecidrs" })) as typeof list;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  return list.items.map((item) => ({
    name: item.metadata?.name ?? "",
    cidrs: item.spec?.cidrs ?? [],
    terminating: item.metadata?.deletionTimestamp !== undefined,
  })).sort((a, b) => a.name.localeCompare(b.name));
}

async function listAll<T>(page: (cont: string | undefined) => Promise<{ items: T[]; metadata?: { _continue?: string } }>): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const list = await page(cont);
    items.push(...list.items);
    cont = list.metadata?._continue || undefined;
  } while (cont);
  return items;
}

async function optionalConfigMap(core: CoreV1Api, namespace: string, name: string): Promise<V1ConfigMap | undefined> {
  try {
    return await core.readNamespacedConfigMap({ namespace, name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function toServiceInfo(s: V1Service): ServiceInfo {
  const spec = s.spec ?? {};
  const info: ServiceInfo = {
    namespace: s.metadata!.namespace!,
    name: s.metadata!.name!,
    type: (spec.type ?? "ClusterIP") as ServiceInfo["type"],
    hasSelector: Object.keys(spec.selector ?? {}).length > 0,
  };
  if (spec.clusterIP) info.clusterIP = spec.clusterIP;
  if (spec.clusterIPs?.length) info.clusterIPs = spec.clusterIPs;
  if (spec.ipFamilies?.length) info.ipFamilies = spec.ipFamilies;
  if (spec.externalIPs?.length) info.externalIPs = spec.externalIPs;
  if (spec.loadBalancerIP) info.loadBalancerIP = spec.loadBalancerIP;
  const bridged = bridgedIpsOf(s);
  if (bridged?.length) info.bridgedOldIPs = bridged;
  const ahead = routedAheadIpsOf(s);
  if (ahead?.length) info.routedAheadIPs = ahead;
  const movingTo = s.metadata?.annotations?.[HOPPING_ANNOTATION];
  if (movingTo && info.type === "ExternalName") info.movingInPlaceTo = movingTo;
  if (s.metadata?.labels?.[HOP_STAND_IN_LABEL] === "true") info.hopStandIn = true;
  return info;
}

function toNodeInfo(n: V1Node): NodeInfo {
  const labels = n.metadata?.labels ?? {};
  const info: NodeInfo = {
    name: n.metadata!.name!,
    internalIPs: (n.status?.addresses ?? []).filter((a) => a.type === "InternalIP").map((a) => a.address),
    controlPlane: CONTROL_PLANE_LABELS.some((l) => l in labels),
    labels,
    unschedulable: n.spec?.unschedulable === true,
  };
  if (n.spec?.podCIDR) info.podCIDR = n.spec.podCIDR;
  if (n.spec?.podCIDRs?.length) info.podCIDRs = n.spec.podCIDRs;
  return info;
}

function yamlKey(cm: V1ConfigMap, key: string): Record<string, unknown> | undefined {
  const text = cm.data?.[key];
  if (!text) return undefined;
  const doc = parse(text) as unknown;
  return doc && typeof doc === "object" ? (doc as Record<string, unknown>) : undefined;
}

export function parseKubeProxy(cm: V1ConfigMap): Inventory["kubeProxy"] {
  const conf = yamlKey(cm, "config.conf") ?? {};
  return { clusterCIDR: stringOrUndefined(conf.clusterCIDR), mode: stringOrUndefined(conf.mode) };
}

export function parseKubeadmConfig(cm: V1ConfigMap): Inventory["kubeadmConfig"] {
  const conf = yamlKey(cm, "ClusterConfiguration") ?? {};
  const networking = (conf.networking ?? {}) as Record<string, unknown>;
  return {
    podSubnet: stringOrUndefined(networking.podSubnet),
    serviceSubnet: stringOrUndefined(networking.serviceSubnet),
    kubernetesVersion: stringOrUndefined(conf.kubernetesVersion),
  };
}

export function parseKubeletConfig(cm: V1ConfigMap): Inventory["kubeletConfig"] {
  const conf = yamlKey(cm, "kubelet") ?? {};
  const dns = Array.isArray(conf.clusterDNS) ? conf.clusterDNS.map(String) : [];
  return { configMapName: cm.metadata!.name!, clusterDNS: dns };
}

function stringOrUndefined(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

async function discoverCni(kc: KubeConfig, core: CoreV1Api): Promise<CniInfo> {
  const calicoPools = await listCalicoPools(kc);
  const flannel =
    (await optionalConfigMap(core, "kube-flannel", "kube-flannel-cfg")) ?? (await optionalConfigMap(core, "kube-system", "kube-flannel-cfg"));
  const cilium = await optionalConfigMap(core, "kube-system", "cilium-config");
  const info: CniInfo = { detected: "none", calicoPools };
  const calicoOperator = await readCalicoOperator(kc);
  if (calicoOperator) info.calicoOperator = calicoOperator;
  if (flannel) {
    info.flannelNamespace = flannel.metadata!.namespace!;
    const daemonSet = await flannelDaemonSet(kc, info.flannelNamespace);
    if (daemonSet) info.flannelDaemonSet = daemonSet;
  }
  if (flannel?.data?.["net-conf.json"]) {
    const net = JSON.parse(flannel.data["net-conf.json"]) as { Network?: string; IPv6Network?: string };
    if (net.Network) info.flannelNetwork = net.Network;
    if (net.IPv6Network) info.flannelIpv6Network = net.IPv6Network;
  }
  if (cilium?.data?.["cluster-pool-ipv4-cidr"]) info.ciliumClusterPoolCidr = cilium.data["cluster-pool-ipv4-cidr"];
  info.detected = calicoPools.length > 0 ? "calico" : flannel ? "flannel" : cilium ? "cilium" : "none";
  return info;
}

/** The DaemonSet in `namespace` whose pods mount kube-flannel-cfg: the one to restart after a net-conf change. */
async function flannelDaemonSet(kc: KubeConfig, namespace: string): Promise<string | undefined> {
  // unreadable (RBAC): the default name stands, and a restart of a DaemonSet not there fails naming it
  const items = await kc.makeApiClient(AppsV1Api).listNamespacedDaemonSet({ namespace }).then((l) => l.items, () => []);
  const mounting = items.filter((ds) => (ds.spec?.template.spec?.volumes ?? []).some((v) => v.configMap?.name === "kube-flannel-cfg"));
  return mounting.length === 1 ? mounting[0].metadata!.name! : undefined;
}

/**
 * The Tigera operator's view of the pools: Installation default's ipPools, whether its APIServer is Ready, and
 * whether projectcalico.org/v3 is served (the operator changes pools only through v3). Undefined without an
 * Installation (no operator.tigera.io CRD, or none named default).
 */
async function readCalicoOperator(kc: KubeConfig): Promise<CalicoOperatorInfo | undefined> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const installation = await getOptional(custom, TIGERA, "installations", "default");
  if (!installation) return undefined;
  const spec = (installation.spec ?? {}) as { calicoNetwork?: { ipPools?: InstallationPool[] } };
  const apiServer = await getOptional(custom, TIGERA, "apiservers", "default");
  const v3Served = await custom.listClusterCustomObject({ group: "projectcalico.org", version: "v3", plural: "ippools", limit: 1 })
    .then(() => true, (err: unknown) => {
      if (isNotFound(err)) return false;
      throw err;
    });
  const info: CalicoOperatorInfo = { v3Served };
  const pools = spec.calicoNetwork?.ipPools;
  if (Array.isArray(pools)) info.ipPools = pools;
  if (apiServer) {
    const state = (apiServer.status as { state?: unknown } | undefined)?.state;
    info.apiServerState = typeof state === "string" ? state : "";
  }
  return info;
}

interface CalicoPoolObject {
  metadata: { name: string };
  spec: { cidr: string; blockSize?: number; ipipMode?: string; vxlanMode?: string; natOutgoing?: boolean; nodeSelector?: string; disabled?: boolean };
}

async function listCalicoPools(kc: KubeConfig): Promise<CalicoPoolInfo[]> {
  try {
    const list = (await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({
      group: "crd.projectcalico.org",
      version: "v1",
      plural: "ippools",
    })) as { items: CalicoPoolObject[] };
    return list.items
      .map((p) => {
        const info: CalicoPoolInfo = { name: p.metadata.name, cidr: p.spec.cidr };
        for (const k of ["blockSize", "ipipMode", "vxlanMode", "natOutgoing", "nodeSelector", "disabled"] as const) {
          if (p.spec[k] !== undefined) (info as unknown as Record<string, unknown>)[k] = p.spec[k];
        }
        return info;
      })
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}
