/**
 * What a node move must carry across the Node object's delete and re-registration, and how the fresh Node is put
 * back: labels, taints, annotations and the unschedulable flag.
 *
 * A kubelet that registers again creates the Node with its own default labels only; kubeadm's role label and
 * taint, the operator's labels, taints and annotations are gone. The backup is taken from the Node before the
 * migration cordons it, and `restoredMetadata(fresh, backup)` computes the Node's metadata after the move:
 * - everything in the backup comes back exactly (key, value, effect, order of taints),
 * - except what other components own and set again on the fresh Node, which the fresh Node keeps:
 *   kubelet/controller-manager fields (default labels, attach-detach and TTL annotations, `node.kubernetes.io/*`
 *   condition taints) and the CNI's per-node annotations (Calico's tunnel address and Flannel's VTEP MAC name the
 *   old subnet or the old device: restoring them would point the network at addresses that no longer exist).
 * - labels and annotations the fresh Node has and the backup lacks stay (a newer kubelet may add one).
 * `metadataDifferences(node, backup)` lists what still differs, for verification after the restore.
 */

export interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
}

/** The parts of a Node the move carries across (a structural subset of V1Node). */
export interface NodeMetadata {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: NodeTaint[];
  unschedulable: boolean;
}

/** A V1Node, or anything shaped like one. */
export interface NodeLike {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { taints?: Array<{ key: string; value?: string; effect: string }>; unschedulable?: boolean };
}

/** Labels the kubelet (or the cloud provider through it) sets on every registration. */
export const KUBELET_LABELS: readonly string[] = [
  "kubernetes.io/hostname",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/windows-build",
];

/** Annotations set again by the kubelet or kube-controller-manager after registration. */
export const SYSTEM_ANNOTATIONS: readonly string[] = [
  "volumes.kubernetes.io/controller-managed-attach-detach",
  "node.alpha.kubernetes.io/ttl",
  "csi.volume.kubernetes.io/nodeid",
  // the kubelet's own --node-ip, set again at registration; after an address change the backup's value is stale
  "alpha.kubernetes.io/provided-node-ip",
];

/** Annotation prefixes the CNI agents write per node; their old values describe the old subnet and devices. */
export const CNI_ANNOTATION_PREFIXES: readonly string[] = ["projectcalico.org/", "flannel.alpha.coreos.com/", "io.cilium.network.", "network.cilium.io/"];

/** Taints the node lifecycle controller, the kubelet and cloud controllers manage from the Node's conditions. */
export function isSystemTaint(key: string): boolean {
  return key.startsWith("node.kubernetes.io/") || key.startsWith("node.cloudprovider.kubernetes.io/");
}

export function isOwnedAnnotation(key: string): boolean {
  return SYSTEM_ANNOTATIONS.includes(key) || CNI_ANNOTATION_PREFIXES.some((prefix) => key.startsWith(prefix));
}

function taintOf(t: { key: string; value?: string; effect: string }): NodeTaint {
  return t.value === undefined || t.value === "" ? { key: t.key, effect: t.effect } : { key: t.key, value: t.value, effect: t.effect };
}

export function metadataOf(node: NodeLike): NodeMetadata {
  return {
    labels: { ...(node.metadata?.labels ?? {}) },
    annotations: { ...(node.metadata?.annotations ?? {}) },
    taints: (node.spec?.taints ?? []).map(taintOf),
    unschedulable: node.spec?.unschedulable === true,
  };
}

const taintId = (t: NodeTaint) => `${t.key}:${t.effect}`;
const sameTaint = (a: NodeTaint, b: NodeTaint) => a.key === b.key && a.effect === b.effect && (a.value ?? "") === (b.value ?? "");

/**
 * The metadata the fresh Node gets back. `unschedulable` is the backup's: the caller keeps the node cordoned
 * until it is verified, then applies this value.
 */
export function restoredMetadata(fresh: NodeMetadata, backup: NodeMetadata): NodeMetadata {
  const labels = { ...fresh.labels };
  for (const [key, value] of Object.entries(backup.labels)) {
    // the kubelet's own labels keep the kubelet's value (it would set it back at its next status sync)
    if (KUBELET_LABELS.includes(key) && key in fresh.labels) continue;
    labels[key] = value;
  }
  const annotations = { ...fresh.annotations };
  for (const [key, value] of Object.entries(backup.annotations)) {
    if (isOwnedAnnotation(key)) continue;
    annotations[key] = value;
  }
  const restoredTaints = backup.taints.filter((t) => !isSystemTaint(t.key));
  const restoredIds = new Set(restoredTaints.map(taintId));
  const taints = [...restoredTaints, ...fresh.taints.filter((t) => isSystemTaint(t.key) && !restoredIds.has(taintId(t)))];
  return { labels, annotations, taints, unschedulable: backup.unschedulable };
}

export interface MetadataDifference {
  field: "label" | "annotation" | "taint" | "unschedulable";
  key: string;
  expected?: string;
  actual?: string;
}

/**
 * What differs between a Node after the restore and its backup, ignoring exactly what `restoredMetadata` leaves
 * to other components. Empty when the restore is complete. `ignoreUnschedulable` while the node is still cordoned.
 */
export function metadataDifferences(node: NodeMetadata, backup: NodeMetadata, opts: { ignoreUnschedulable?: boolean } = {}): MetadataDifference[] {
  const differences: MetadataDifference[] = [];
  for (const [key, value] of Object.entries(backup.labels)) {
    if (KUBELET_LABELS.includes(key) && key in node.labels) continue;
    if (node.labels[key] !== value) differences.push({ field: "label", key, expected: value, actual: node.labels[key] });
  }
  for (const key of Object.keys(backup.annotations)) {
    if (isOwnedAnnotation(key)) continue;
    if (node.annotations[key] !== backup.annotations[key]) {
      differences.push({ field: "annotation", key, expected: backup.annotations[key], actual: node.annotations[key] });
    }
  }
  const userTaints = (taints: NodeTaint[]) => taints.filter((t) => !isSystemTaint(t.key));
  const expected = userTaints(backup.taints);
  const actual = userTaints(node.taints);
  for (const t of expected) {
    const found = actual.find((a) => taintId(a) === taintId(t));
    if (!found || !sameTaint(found, t)) differences.push({ field: "taint", key: taintId(t), expected: t.value ?? "", actual: found ? found.value ?? "" : undefined });
  }
  for (const a of actual) {
    if (!expected.some((t) => taintId(t) === taintId(a))) differences.push({ field: "taint", key: taintId(a), expected: undefined, actual: a.value ?? "" });
  }
  if (!opts.ignoreUnschedulable && node.unschedulable !== backup.unschedulable) {
    differences.push({ field: "unschedulable", key: "spec.unschedulable", expected: String(backup.unschedulable), actual: String(node.unschedulable) });
  }
  return differences;
}

export function describeDifferences(differences: MetadataDifference[]): string {
  return differences
    .map((d) => `${d.field} ${d.key}: expected ${d.expected === undefined ? "(absent)" : JSON.stringify(d.expected)}, found ${d.actual === undefined ? "(absent)" : JSON.stringify(d.actual)}`)
    .join("; ");
}

/**
 * A JSON merge patch that turns `current` into `target` (labels/annotations removed as null; the taint list is
 * replaced whole, which is how a merge patch treats lists, so the order and values come out exact).
 */
export function metadataMergePatch(current: NodeMetadata, target: NodeMetadata): { metadata: { labels: Record<string, string | null>; annotations: Record<string, string | null> }; spec: { taints: NodeTaint[]; unschedulable: boolean } } {
  const mapPatch = (from: Record<string, string>, to: Record<string, string>) => {
    const patch: Record<string, string | null> = {};
    for (const key of Object.keys(from)) if (!(key in to)) patch[key] = null;
    for (const [key, value] of Object.entries(to)) if (from[key] !== value) patch[key] = value;
    return patch;
  };
  return {
    metadata: { labels: mapPatch(current.labels, target.labels), annotations: mapPatch(current.annotations, target.annotations) },
    spec: { taints: target.taints, unschedulable: target.unschedulable },
  };
}
