import { V1ObjectMeta, V1Pod, V1PodSpec } from "@kubernetes/client-node";
import { Finding } from "../report/findings";
import { AddressHit, NamedRange, RangeMatcher } from "./addressLiterals";
import { keyPath, objectLabel, PreflightInput, RangePreflightInput, rangeInput } from "./checkInput";
import { ClusterObjects, keyOf } from "./clusterObjects";
import { isMigratedControlPlanePod } from "./controlPlanePods";

/**
 * Hard-coded old addresses: every IPv4/IPv6 literal (or CIDR) inside the old Service or Pod range, wherever a person
 * or a chart wrote one: ConfigMap data, workload env/args/command, hostAliases, dnsConfig, Ingress specs, annotations,
 * hand-made Endpoints and EndpointSlices of selector-less Services, and Secrets. Each hit names the object and the
 * path inside it. After the move such an address points at nothing, or at something else.
 */

export const SERVICE_RANGE_LABEL = "old Service range";
export const POD_RANGE_LABEL = "old Pod range";

// The lists below are arrays, not Sets: provider code is serialized by value and a Set does not survive it.

/** ConfigMaps the migration itself rewrites (cluster-config and cni phases): their old ranges are expected. */
const MIGRATION_MANAGED_CONFIGMAPS: readonly string[] = ["kube-system/kube-proxy", "kube-system/kubeadm-config", "kube-system/kubelet-config", "kube-system/cilium-config"];
const isManagedConfigMap = (meta: V1ObjectMeta | undefined) =>
  MIGRATION_MANAGED_CONFIGMAPS.includes(keyOf(meta)) ||
  (meta?.namespace === "kube-system" && /^kubelet-config-\d+\.\d+$/.test(meta.name ?? "")) ||
  meta?.name === "kube-flannel-cfg";

/** Annotations the CNI writes with each pod's own address: they follow the pod and are not hard-coded. */
const CNI_POD_ANNOTATIONS: readonly string[] = [
  "cni.projectcalico.org/podIP",
  "cni.projectcalico.org/podIPs",
  "k8s.v1.cni.cncf.io/network-status",
  "k8s.v1.cni.cncf.io/networks-status",
];

/** Pods of these controllers are scanned through their owner's template, once, instead of once per replica. */
const TEMPLATED_OWNERS: readonly string[] = ["ReplicaSet", "StatefulSet", "DaemonSet"];

/** Mirrored EndpointSlices copy a selector-less Service's Endpoints; reporting both would say everything twice. */
const MIRRORED_SLICE = "endpointslicemirroring-controller.k8s.io";

interface Owner {
  /** e.g. "Service monitoring/prometheus", for the message. */
  label: string;
  /** The DNS name to use instead, for Services. */
  dnsName?: string;
}

interface ScanContext {
  matcher: RangeMatcher;
  /** Who holds an address now: Service ClusterIPs and Pod IPs. */
  owners: Map<string, Owner>;
  newServiceCidr: string;
  newPodCidr: string;
}

export function oldRangeMatcher(input: RangePreflightInput): RangeMatcher {
  const ranges: NamedRange[] = [
    { label: SERVICE_RANGE_LABEL, cidr: input.config.serviceCidr.from },
    { label: POD_RANGE_LABEL, cidr: input.config.podCidr.from },
  ];
  return new RangeMatcher(ranges);
}

export function checkHardCodedAddresses(whole: PreflightInput): Finding[] {
  // the old ranges' addresses; a run that moves no range has its old node addresses scanned instead (oldNodeAddresses)
  const input = rangeInput(whole);
  if (!input) return [];
  const ctx: ScanContext = {
    matcher: oldRangeMatcher(input),
    owners: addressOwners(input),
    newServiceCidr: input.config.serviceCidr.to,
    newPodCidr: input.config.podCidr.to,
  };
  const findings: Finding[] = [];
  const scanner = literalScanner(ctx.matcher, (object, where, hit) => findings.push(hitFinding(ctx, object, where, hit)));
  visitClusterTexts(input.cluster, OLD_RANGE_SCOPE, scanner, (object, texts) => {
    // Secret values are never shown by default: one finding per Secret with a count (see secretCount).
    if (input.allowSecretValues) {
      const visit = scanner(object);
      for (const [path, text] of texts) visit(path, text);
    } else {
      findings.push(...secretCount(ctx, object, texts));
    }
  });
  return findings;
}

/** One string at one path of one object. */
export type Visit = (path: string, text: string | undefined) => void;

/** A Visit per object that reports each literal `matcher` finds once per object, path and literal. */
export function literalScanner(matcher: RangeMatcher, found: (object: string, where: string, hit: AddressHit) => void): (object: string) => Visit {
  const seen = new Set<string>();
  return (object) => (path, text) => {
    if (!text) return;
    for (const hit of matcher.scan(text)) {
      const where = hit.line !== undefined ? `${path} line ${hit.line}` : path;
      const key = `${object}\u0000${where}\u0000${hit.literal}`;
      if (seen.has(key)) continue;
      seen.add(key);
      found(object, where, hit);
    }
  };
}

/** What a scan leaves out: each scan skips the places the migration itself rewrites. */
export interface ScanScope {
  skipConfigMap(meta: V1ObjectMeta | undefined): boolean;
  skipPod(pod: V1Pod): boolean;
  /** Selector-less Services ("namespace/name") whose Endpoints and EndpointSlices are left out. */
  skipEndpointsOf?(service: string): boolean;
  /** Also Node annotations and Service externalIPs, where node addresses are written. */
  nodeFields?: boolean;
}

const OLD_RANGE_SCOPE: ScanScope = {
  skipConfigMap: isManagedConfigMap,
  skipPod: (pod) => isTemplated(pod) || isMigratedControlPlanePod(pod),
};

/**
 * Every string where people and charts write addresses, object by object: ConfigMap data, workload specs,
 * annotations, Ingress specs, hand-made Endpoints and EndpointSlices; Secrets go to `secrets` as decoded texts.
 */
export function visitClusterTexts(cluster: ClusterObjects, scope: ScanScope, scanner: (object: string) => Visit, secrets: (object: string, texts: Array<[string, string]>) => void): void {
  for (const cm of cluster.configMaps) {
    if (scope.skipConfigMap(cm.metadata)) continue;
    const visit = scanner(objectLabel("ConfigMap", cm.metadata));
    for (const [k, v] of Object.entries(cm.data ?? {})) visit(keyPath("data", k), v);
    visitAnnotations(cm.metadata, "metadata.annotations", visit);
  }

  for (const pod of cluster.pods) {
    if (scope.skipPod(pod)) continue;
    const visit = scanner(objectLabel("Pod", pod.metadata));
    visitPodSpec(pod.spec, "spec", visit);
    visitAnnotations(pod.metadata, "metadata.annotations", visit, CNI_POD_ANNOTATIONS);
  }

  const workloads = [
    ["Deployment", cluster.deployments],
    ["StatefulSet", cluster.statefulSets],
    ["DaemonSet", cluster.daemonSets],
  ] as const;
  for (const [kind, list] of workloads) {
    for (const w of list) {
      const visit = scanner(objectLabel(kind, w.metadata));
      visitAnnotations(w.metadata, "metadata.annotations", visit);
      visitAnnotations(w.spec?.template?.metadata, "spec.template.metadata.annotations", visit);
      visitPodSpec(w.spec?.template?.spec, "spec.template.spec", visit);
    }
  }

  for (const ing of cluster.ingresses) {
    const visit = scanner(objectLabel("Ingress", ing.metadata));
    visitAnnotations(ing.metadata, "metadata.annotations", visit);
    visitTree(ing.spec, "spec", visit);
  }

  const selectorless = new Set(
    cluster.services
      .filter((s) => s.spec?.type !== "ExternalName" && Object.keys(s.spec?.selector ?? {}).length === 0)
      .map((s) => keyOf(s.metadata))
      .filter((key) => !scope.skipEndpointsOf?.(key)),
  );
  for (const svc of cluster.services) {
    const visit = scanner(objectLabel("Service", svc.metadata));
    visitAnnotations(svc.metadata, "metadata.annotations", visit);
    if (scope.nodeFields) (svc.spec?.externalIPs ?? []).forEach((ip, i) => visit(`spec.externalIPs[${i}]`, ip));
  }
  if (scope.nodeFields) {
    for (const node of cluster.nodes) visitAnnotations(node.metadata, "metadata.annotations", scanner(objectLabel("Node", node.metadata)));
  }
  for (const ep of cluster.endpoints) {
    if (!selectorless.has(keyOf(ep.metadata))) continue;
    const visit = scanner(objectLabel("Endpoints", ep.metadata));
    (ep.subsets ?? []).forEach((subset, i) => {
      (subset.addresses ?? []).forEach((a, j) => visit(`subsets[${i}].addresses[${j}].ip`, a.ip));
      (subset.notReadyAddresses ?? []).forEach((a, j) => visit(`subsets[${i}].notReadyAddresses[${j}].ip`, a.ip));
    });
  }
  for (const slice of cluster.endpointSlices) {
    const labels = slice.metadata.labels ?? {};
    const service = `${slice.metadata.namespace}/${labels["kubernetes.io/service-name"]}`;
    if (!selectorless.has(service) || labels["endpointslice.kubernetes.io/managed-by"] === MIRRORED_SLICE) continue;
    const visit = scanner(objectLabel("EndpointSlice", slice.metadata));
    (slice.endpoints ?? []).forEach((e, i) => (e.addresses ?? []).forEach((a, j) => visit(`endpoints[${i}].addresses[${j}]`, a)));
  }

  for (const secret of cluster.secrets) secrets(objectLabel("Secret", secret.metadata), secretTexts(secret.metadata, secret.data));
}

export function isTemplated(pod: V1Pod): boolean {
  return (pod.metadata?.ownerReferences ?? []).some((o) => o.controller && TEMPLATED_OWNERS.includes(o.kind));
}

function visitAnnotations(meta: V1ObjectMeta | undefined, prefix: string, visit: Visit, skip?: readonly string[]): void {
  for (const [k, v] of Object.entries(meta?.annotations ?? {})) {
    if (!skip?.includes(k)) visit(keyPath(prefix, k), v);
  }
}

/** The places in a pod spec where people write addresses. */
function visitPodSpec(spec: V1PodSpec | undefined, prefix: string, visit: Visit): void {
  if (!spec) return;
  for (const field of ["initContainers", "containers"] as const) {
    (spec[field] ?? []).forEach((c, i) => {
      const at = `${prefix}.${field}[${i}]`;
      (c.command ?? []).forEach((v, j) => visit(`${at}.command[${j}]`, v));
      (c.args ?? []).forEach((v, j) => visit(`${at}.args[${j}]`, v));
      (c.env ?? []).forEach((e, j) => visit(`${at}.env[${j}].value`, e.value));
    });
  }
  (spec.hostAliases ?? []).forEach((h, i) => visit(`${prefix}.hostAliases[${i}].ip`, h.ip));
  (spec.dnsConfig?.nameservers ?? []).forEach((n, i) => visit(`${prefix}.dnsConfig.nameservers[${i}]`, n));
}

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Every string in a JSON-like tree, with its path (spec.rules[0].host). */
function visitTree(value: unknown, path: string, visit: Visit): void {
  if (typeof value === "string") {
    visit(path, value);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => visitTree(v, `${path}[${i}]`, visit));
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) visitTree(v, PLAIN_KEY.test(k) ? `${path}.${k}` : keyPath(path, k), visit);
  }
}

/** Service ClusterIPs and Pod IPs in the old ranges, so a hit can say whose address it is. */
function addressOwners(input: PreflightInput): Map<string, Owner> {
  const owners = new Map<string, Owner>();
  for (const s of input.cluster.services) {
    const meta = s.metadata;
    for (const ip of s.spec?.clusterIPs ?? (s.spec?.clusterIP ? [s.spec.clusterIP] : [])) {
      if (ip !== "None") owners.set(ip, { label: objectLabel("Service", meta), dnsName: `${meta?.name}.${meta?.namespace}.svc` });
    }
  }
  for (const p of input.cluster.pods) {
    if (p.spec?.hostNetwork) continue;
    for (const ip of p.status?.podIPs?.map((x) => x.ip) ?? (p.status?.podIP ? [p.status.podIP] : [])) {
      if (!owners.has(ip)) owners.set(ip, { label: objectLabel("Pod", p.metadata) });
    }
  }
  return owners;
}

function hitFinding(ctx: ScanContext, object: string, path: string, hit: AddressHit): Finding {
  const service = hit.range.label === SERVICE_RANGE_LABEL;
  const owner = hit.isCidr ? undefined : ctx.owners.get(hit.literal);
  const whose = owner ? ` (now ${service ? "the ClusterIP" : "the IP"} of ${owner.label})` : "";
  const kind = hit.isCidr ? "CIDR" : "IP";
  const newRange = service ? ctx.newServiceCidr : ctx.newPodCidr;
  let action: string;
  if (hit.isCidr) {
    action = `change it to (or add) the new range ${newRange}`;
  } else if (owner?.dnsName) {
    action = `refer to the Service by name (${owner.dnsName}) instead: its ClusterIP moves into ${newRange}`;
  } else if (service) {
    action = `replace it with a Service DNS name: nothing will answer at this address once Services move into ${newRange}`;
  } else {
    action = `use a Service name instead: Pod IPs change when pods are re-created in ${newRange}`;
  }
  return {
    code: `HARDCODED_${service ? "SERVICE" : "POD"}_${kind}`,
    severity: "warning",
    object,
    path,
    message: `${hit.literal} is in the ${hit.range.label} ${hit.range.cidr}${whose}`,
    action,
  };
}

/**
 * A Secret's data, decoded, and its annotations, which count as secret too: kubectl's last-applied-configuration on
 * a Secret holds its data.
 */
export function secretTexts(meta: V1ObjectMeta | undefined, data: Record<string, string> | undefined): Array<[string, string]> {
  const texts: Array<[string, string]> = Object.entries(data ?? {}).map(([k, v]) => [keyPath("data", k), Buffer.from(v, "base64").toString("utf8")]);
  for (const [k, v] of Object.entries(meta?.annotations ?? {})) texts.push([keyPath("metadata.annotations", k), v]);
  return texts;
}

/** How many old addresses a Secret holds, without a value, a key or a path (--allow-secret-values shows those). */
function secretCount(ctx: ScanContext, object: string, texts: Array<[string, string]>): Finding[] {
  let count = 0;
  for (const [, text] of texts) count += ctx.matcher.scan(text).length;
  if (count === 0) return [];
  return [
    {
      code: "HARDCODED_IN_SECRET",
      severity: "warning",
      object,
      message: `holds ${count} address${count === 1 ? "" : "es"} in the old Service or Pod range (values and keys not shown)`,
      action: "review the Secret; run preflight with --allow-secret-values to see the path of each address",
    },
  ];
}
