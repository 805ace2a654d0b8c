import {
  V1ConfigMap,
  V1DaemonSet,
  V1Deployment,
  V1Endpoints,
  V1Node,
  V1ObjectMeta,
  V1PersistentVolumeClaim,
  V1Pod,
  V1Secret,
  V1Service,
  V1StatefulSet,
} from "@kubernetes/client-node";

/**
 * What the preflight and verify collector reads from a live cluster, beyond lib/plan/discovery's Inventory. Plain data:
 * every check is a pure function over it, so checks are unit-tested with hand-made objects.
 *
 * Kinds whose served version differs between releases (PDBs: policy/v1beta1 before 1.21; EndpointSlices:
 * discovery.k8s.io/v1beta1 before 1.21; Ingress) are listed through the version the cluster prefers, so they are
 * typed here by the few fields the checks read, which v1beta1 and v1 share.
 */

export interface ApiGroupInfo {
  name: string;
  versions: string[];
  preferredVersion?: string;
}

/** A PodDisruptionBudget (policy/v1 or v1beta1). */
export interface DisruptionBudget {
  metadata: V1ObjectMeta;
  spec?: {
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  };
  status?: { disruptionsAllowed?: number; currentHealthy?: number; desiredHealthy?: number; expectedPods?: number };
}

/** An EndpointSlice (discovery.k8s.io/v1 or v1beta1). */
export interface EndpointSliceObject {
  metadata: V1ObjectMeta;
  addressType?: string;
  endpoints?: Array<{ addresses?: string[] }>;
}

/** An Ingress (networking.k8s.io/v1 or v1beta1, extensions/v1beta1): the checks walk its spec as text. */
export interface IngressObject {
  metadata: V1ObjectMeta;
  spec?: Record<string, unknown>;
}

/** Calico IPAMBlock or BlockAffinity (crd.projectcalico.org/v1): both carry spec.cidr. */
export interface CalicoCidrObject {
  metadata: V1ObjectMeta;
  spec?: { cidr?: string; node?: string; affinity?: string; state?: string };
}

/** An IPAddress (networking.k8s.io/v1, 1.33+): metadata.name is the address, parentRef the Service holding it. */
export interface IpAddressObject {
  metadata: V1ObjectMeta;
  spec?: { parentRef?: { group?: string; resource?: string; namespace?: string; name?: string } };
}

export interface ClusterObjects {
  serverVersion: { major: string; minor: string; gitVersion: string };
  apiGroups: ApiGroupInfo[];
  /** networking.k8s.io versions that serve the ServiceCIDR kind (v1.29+ alpha, 1.31 beta, 1.33 GA); empty when absent. */
  serviceCidrApiVersions: string[];
  nodes: V1Node[];
  services: V1Service[];
  configMaps: V1ConfigMap[];
  /** Without service-account tokens and Helm releases (see collect.ts). */
  secrets: V1Secret[];
  pods: V1Pod[];
  deployments: V1Deployment[];
  statefulSets: V1StatefulSet[];
  daemonSets: V1DaemonSet[];
  ingresses: IngressObject[];
  endpoints: V1Endpoints[];
  endpointSlices: EndpointSliceObject[];
  podDisruptionBudgets: DisruptionBudget[];
  persistentVolumeClaims: V1PersistentVolumeClaim[];
  calicoIpamBlocks: CalicoCidrObject[];
  calicoBlockAffinities: CalicoCidrObject[];
  /** networking.k8s.io IPAddress objects (the ServiceCIDR allocator's record of each ClusterIP; named by the IP). */
  ipAddresses: IpAddressObject[];
}

/** The list-valued parts of ClusterObjects: what a caller can ask the collector for. */
export type CollectableKind = Exclude<keyof ClusterObjects, "serverVersion" | "apiGroups" | "serviceCidrApiVersions">;

export const ALL_KINDS: readonly CollectableKind[] = [
  "nodes",
  "services",
  "configMaps",
  "secrets",
  "pods",
  "deployments",
  "statefulSets",
  "daemonSets",
  "ingresses",
  "endpoints",
  "endpointSlices",
  "podDisruptionBudgets",
  "persistentVolumeClaims",
  "calicoIpamBlocks",
  "calicoBlockAffinities",
  "ipAddresses",
];

/** An empty snapshot, the base for tests and for collecting a subset of kinds. */
export function emptyClusterObjects(): ClusterObjects {
  return {
    serverVersion: { major: "", minor: "", gitVersion: "" },
    apiGroups: [],
    serviceCidrApiVersions: [],
    nodes: [],
    services: [],
    configMaps: [],
    secrets: [],
    pods: [],
    deployments: [],
    statefulSets: [],
    daemonSets: [],
    ingresses: [],
    endpoints: [],
    endpointSlices: [],
    podDisruptionBudgets: [],
    persistentVolumeClaims: [],
    calicoIpamBlocks: [],
    calicoBlockAffinities: [],
    ipAddresses: [],
  };
}

/** "namespace/name" (or just the name for cluster-scoped objects). */
export function keyOf(meta: V1ObjectMeta | undefined): string {
  return meta?.namespace ? `${meta.namespace}/${meta.name}` : `${meta?.name ?? "?"}`;
}
