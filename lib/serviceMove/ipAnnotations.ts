/**
 * Annotations that carry a Service's old ClusterIP, corrected for the re-created object.
 *
 * - kubectl.kubernetes.io/last-applied-configuration is kubectl's own JSON record of the last applied manifest.
 *   It is parsed, and only spec.clusterIP / spec.clusterIPs entries equal to the old IP change; everything else
 *   (key order included) stays, and it is written back the way kubectl writes it (compact JSON plus "\n").
 *   Leaving the old IP there would make the next `kubectl apply` compute a patch that tries to change an
 *   immutable field back.
 * - Any other annotation value: each occurrence of the exact old IP as a whole address is replaced
 *   ("10.96.0.1" inside "10.96.0.10" is not an occurrence). The value is treated as opaque text, never parsed.
 */

import { replaceAddress } from "../net/replaceAddress";

/** Set by the old-ClusterIP bridge (oldIpBridge.ts), spelt here too: that module needs the kube client, this one nothing. */
export const BRIDGE_ANNOTATION = "cidr-migration.io/old-cluster-ip-bridge";

export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";

export interface AnnotationCorrection {
  annotations: Record<string, string>;
  /** Keys whose value changed. */
  changed: string[];
  /** True when the last-applied manifest pinned the old IP: the user's own manifest needs the new one too. */
  pinnedInLastApplied: boolean;
}

interface LastAppliedResult {
  value: string;
  pinned: boolean;
}

function correctLastApplied(value: string, oldIp: string, newIp: string): LastAppliedResult {
  let manifest: unknown;
  try {
    manifest = JSON.parse(value);
  } catch {
    // Not kubectl's JSON (hand-written?): fall back to the plain address replacement.
    return { value: replaceAddress(value, oldIp, newIp), pinned: false };
  }
  const spec = (manifest as { spec?: Record<string, unknown> } | null)?.spec;
  if (typeof spec !== "object" || spec === null) return { value, pinned: false };
  let pinned = false;
  if (spec.clusterIP === oldIp) {
    spec.clusterIP = newIp;
    pinned = true;
  }
  if (Array.isArray(spec.clusterIPs) && spec.clusterIPs.includes(oldIp)) {
    spec.clusterIPs = spec.clusterIPs.map((ip) => (ip === oldIp ? newIp : ip));
    pinned = true;
  }
  if (!pinned) return { value, pinned };
  return { value: JSON.stringify(manifest) + (value.endsWith("\n") ? "\n" : ""), pinned };
}

/** The annotations for the re-created Service: the old IP replaced by the planned one wherever it stood. */
export function correctIpAnnotations(annotations: Record<string, string> | undefined, oldIp: string, newIp: string): AnnotationCorrection {
  const result: Record<string, string> = {};
  const changed: string[] = [];
  let pinnedInLastApplied = false;
  for (const [key, value] of Object.entries(annotations ?? {})) {
    let corrected = value;
    if (key === BRIDGE_ANNOTATION) {
      // names the old IP on purpose: the bridge's removal takes that externalIP away
    } else if (key === LAST_APPLIED_ANNOTATION) {
      const lastApplied = correctLastApplied(value, oldIp, newIp);
      corrected = lastApplied.value;
      pinnedInLastApplied = lastApplied.pinned;
    } else if (typeof value === "string") {
      corrected = replaceAddress(value, oldIp, newIp);
    }
    if (corrected !== value) changed.push(key);
    result[key] = corrected;
  }
  return { annotations: result, changed, pinnedInLastApplied };
}
