import {
  ApisApi,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  VersionApi,
} from "@kubernetes/client-node";
import { describeKubeError, isNotFound } from "../config/kubeClient";
import { ALL_KINDS, ApiGroupInfo, ClusterObjects, CollectableKind, emptyClusterObjects } from "./clusterObjects";

/**
 * Live cluster → ClusterObjects, for preflight and verify. Read-only: list and get calls only. Every kind is listed
 * in parallel, each in pages (500 objects by default), so a large cluster never needs one huge response.
 */

const DEFAULT_PAGE_SIZE = 500;
const CALICO_GROUP = "crd.projectcalico.org";
/**
 * Service-account tokens hold only a JWT and a CA; Helm release secrets are gzip+base64 blobs no text search can read.
 * Leaving them out keeps the Secret scan (and the data held in memory) to what can hold a hand-written address.
 */
const SECRET_FIELD_SELECTOR = "type!=kubernetes.io/service-account-token,type!=helm.sh/release.v1";

/** For error messages: "listing PodDisruptionBudgets". */
const KIND_NAMES: Record<CollectableKind, string> = {
  nodes: "Nodes",
  services: "Services",
  configMaps: "ConfigMaps",
  secrets: "Secrets",
  pods: "Pods",
  deployments: "Deployments",
  statefulSets: "StatefulSets",
  daemonSets: "DaemonSets",
  ingresses: "Ingresses",
  endpoints: "Endpoints",
  endpointSlices: "EndpointSlices",
  podDisruptionBudgets: "PodDisruptionBudgets",
  persistentVolumeClaims: "PersistentVolumeClaims",
  calicoIpamBlocks: "Calico IPAMBlocks",
  calicoBlockAffinities: "Calico BlockAffinities",
  ipAddresses: "IPAddresses",
};

type Page<T> = { items: T[]; metadata?: { _continue?: string; continue?: string } };

async function listAll<T>(page: (cont: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const list = await page(cont);
    for (const item of list.items) items.push(item);
    // Typed lists name it _continue; raw JSON from CustomObjectsApi keeps the wire name.
    cont = list.metadata?._continue || list.metadata?.continue || undefined;
  } while (cont);
  return items;
}

export interface CollectOptions {
  /** The kinds to list (default all); the others stay empty. */
  kinds?: readonly CollectableKind[];
  /** Objects per list call (default 500). */
  pageSize?: number;
}

export async function collectClusterObjects(kc: KubeConfig, opts: CollectOptions = {}): Promise<ClusterObjects> {
  const server = kc.getCurrentCluster()?.server;
  const guard = <T>(action: string, p: Promise<T>): Promise<T> =>
    p.catch((err) => {
      throw describeKubeError(err, action, server);
    });
  const page = opts.pageSize ?? DEFAULT_PAGE_SIZE;
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);

  const [version, groupList] = await Promise.all([
    guard("reading the server version", kc.makeApiClient(VersionApi).getCode()),
    guard("reading the API groups", kc.makeApiClient(ApisApi).getAPIVersions()),
  ]);
  const apiGroups: ApiGroupInfo[] = groupList.groups.map((g) => ({
    name: g.name,
    versions: g.versions.map((v) => v.version),
    preferredVersion: g.preferredVersion?.version,
  }));
  /**
   * Lists a kind of a group whose served versions differ between releases: the preferred version first, then the
   * others (Ingress is networking.k8s.io/v1 from 1.19, v1beta1 before), then the next group. Nothing when none serves it.
   */
  const listGeneric = async <T>(groups: readonly string[], plural: string): Promise<T[]> => {
    for (const name of groups) {
      const group = apiGroups.find((g) => g.name === name);
      if (!group) continue;
      const versions = [...new Set([group.preferredVersion, ...group.versions].filter((v): v is string => !!v))];
      for (const version of versions) {
        try {
          return await listAll((c) => custom.listClusterCustomObject({ group: name, version, plural, limit: page, _continue: c }) as Promise<Page<T>>);
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    }
    return [];
  };

  const listers: Record<CollectableKind, () => Promise<unknown[]>> = {
    nodes: () => listAll((c) => core.listNode({ limit: page, _continue: c })),
    services: () => listAll((c) => core.listServiceForAllNamespaces({ limit: page, _continue: c })),
    configMaps: () => listAll((c) => core.listConfigMapForAllNamespaces({ limit: page, _continue: c })),
    secrets: () =>
      listAll((c) => core.listSecretForAllNamespaces({ limit: page, _continue: c, fieldSelector: SECRET_FIELD_SELECTOR })),
    pods: () => listAll((c) => core.listPodForAllNamespaces({ limit: page, _continue: c })),
    deployments: () => listAll((c) => apps.listDeploymentForAllNamespaces({ limit: page, _continue: c })),
    statefulSets: () => listAll((c) => apps.listStatefulSetForAllNamespaces({ limit: page, _continue: c })),
    daemonSets: () => listAll((c) => apps.listDaemonSetForAllNamespaces({ limit: page, _continue: c })),
    ingresses: () => listGeneric(["networking.k8s.io", "extensions"], "ingresses"),
    endpoints: () => listAll((c) => core.listEndpointsForAllNamespaces({ limit: page, _continue: c })),
    endpointSlices: () => listGeneric(["discovery.k8s.io"], "endpointslices"),
    podDisruptionBudgets: () => listGeneric(["policy"], "poddisruptionbudgets"),
    persistentVolumeClaims: () => listAll((c) => core.listPersistentVolumeClaimForAllNamespaces({ limit: page, _continue: c })),
    calicoIpamBlocks: () => listGeneric([CALICO_GROUP], "ipamblocks"),
    calicoBlockAffinities: () => listGeneric([CALICO_GROUP], "blockaffinities"),
    ipAddresses: () => listGeneric(["networking.k8s.io"], "ipaddresses"),
  };

  const kinds = opts.kinds ?? ALL_KINDS;
  const objects = emptyClusterObjects();
  objects.serverVersion = { major: version.major, minor: version.minor, gitVersion: version.gitVersion };
  objects.apiGroups = apiGroups;
  const [serviceCidrApiVersions] = await Promise.all([
    guard("discovering the ServiceCIDR API", serviceCidrVersions(kc, apiGroups)),
    ...kinds.map(async (kind) => {
      (objects as unknown as Record<CollectableKind, unknown[]>)[kind] = await guard(`listing ${KIND_NAMES[kind]}`, listers[kind]());
    }),
  ]);
  objects.serviceCidrApiVersions = serviceCidrApiVersions;
  return objects;
}

/** The networking.k8s.io versions whose resource list has the ServiceCIDR kind, asked of the discovery API. */
async function serviceCidrVersions(kc: KubeConfig, groups: ApiGroupInfo[]): Promise<string[]> {
  const group = "networking.k8s.io";
  const served = groups.find((g) => g.name === group)?.versions ?? [];
  const custom = kc.makeApiClient(CustomObjectsApi);
  const found: string[] = [];
  for (const version of served) {
    const list = await custom.getAPIResources({ group, version });
    if (list.resources.some((r) => r.kind === "ServiceCIDR")) found.push(version);
  }
  return found;
}
