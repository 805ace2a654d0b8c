import { Finding } from "../report/findings";
import { objectLabel, PreflightInput } from "./checkInput";

/**
 * Size and shape: the published runbooks advise "consider rebuilding and moving the apps instead" when a cluster is
 * large, holds state on PVCs, or depends on many fixed addresses. Each reason is its own finding; CONSIDER_REBUILD
 * sums them up with the advice.
 */

/** The runbooks' figure: past 50 nodes the node rollout alone takes most of a day. */
export const LARGE_CLUSTER_NODES = 50;
/** Past this many fixed-IP dependencies, chasing every one by hand costs more than a fresh cluster. */
export const MANY_FIXED_IP_DEPENDENCIES = 20;

/** Findings that are a fixed-IP dependency someone has to change by hand. */
const FIXED_IP_CODES = /^(HARDCODED_|PINNED_CLUSTER_IP$|EXTERNAL_IP_IN_)/;

export function countFixedIpDependencies(findings: readonly Finding[]): number {
  return findings.filter((f) => FIXED_IP_CODES.test(f.code)).length;
}

export function checkSizeAndShape(input: PreflightInput, fixedIpDependencies: number): Finding[] {
  const { cluster } = input;
  const findings: Finding[] = [];
  const reasons: string[] = [];

  const nodes = cluster.nodes.length;
  if (nodes > LARGE_CLUSTER_NODES) {
    reasons.push(`${nodes} nodes`);
    findings.push({
      code: "LARGE_CLUSTER",
      severity: "warning",
      object: "cluster",
      message: `${nodes} nodes (more than ${LARGE_CLUSTER_NODES}): every one is drained and re-registered, one batch at a time`,
      action: "plan a long window (see `cidr-migration plan` for the estimate) or consider rebuilding and moving the apps instead",
    });
  }

  const stateful: string[] = [];
  for (const sts of cluster.statefulSets) {
    const templates = (sts.spec?.volumeClaimTemplates ?? []).map((t) => t.metadata?.name).filter((n): n is string => !!n);
    if (templates.length === 0) continue;
    const name = sts.metadata?.name ?? "";
    const claims = cluster.persistentVolumeClaims.filter(
      (pvc) => pvc.metadata?.namespace === sts.metadata?.namespace && templates.some((t) => pvc.metadata?.name?.startsWith(`${t}-${name}-`)),
    );
    const object = objectLabel("StatefulSet", sts.metadata);
    stateful.push(object.replace(/^StatefulSet /, ""));
    findings.push({
      code: "STATEFULSET_WITH_PVCS",
      severity: "warning",
      object,
      message: `keeps state on ${claims.length} PVC${claims.length === 1 ? "" : "s"} (templates ${templates.join(", ")}); its pods are evicted on every node move, and local volumes pin them to their node`,
      action: "check that it survives losing a replica at a time (replicas, PDB, storage that can follow the pod), or consider rebuilding and moving the apps instead",
    });
  }
  if (stateful.length > 0) reasons.push(`${stateful.length} StatefulSet${stateful.length === 1 ? "" : "s"} with PVCs (${stateful.slice(0, 5).join(", ")}${stateful.length > 5 ? ", ..." : ""})`);

  if (fixedIpDependencies > MANY_FIXED_IP_DEPENDENCIES) {
    reasons.push(`${fixedIpDependencies} fixed-IP dependencies`);
    findings.push({
      code: "MANY_FIXED_IP_DEPENDENCIES",
      severity: "warning",
      object: "cluster",
      message: `${fixedIpDependencies} hard-coded addresses, pinned ClusterIPs and externalIPs (more than ${MANY_FIXED_IP_DEPENDENCIES}) must each be changed by hand`,
      action: "work through the HARDCODED_*, PINNED_CLUSTER_IP and EXTERNAL_IP_* findings, or consider rebuilding and moving the apps instead",
    });
  }

  if (reasons.length > 0) {
    findings.push({
      code: "CONSIDER_REBUILD",
      severity: "info",
      object: "cluster",
      message: `the runbook's advice applies: ${reasons.join("; ")}`,
      action: "consider building a new cluster with the new ranges and moving the apps instead; if you go ahead, act on the findings above",
    });
  }
  return findings;
}
