import { Finding } from "../report/findings";
import { PreflightInput } from "./checkInput";
import { NOT_A_DIRECTORY } from "./etcdProbe";

/**
 * etcd: every configured endpoint answers, agrees on a leader and has no alarm; and the snapshot directory takes a
 * file with room for a snapshot. The rollback is an etcd snapshot, so nothing may start without one.
 */

const MIB = 1024 * 1024;

function mib(bytes: number): string {
  return `${(bytes / MIB).toFixed(1)} MiB`;
}

export function checkEtcd(input: PreflightInput): Finding[] {
  const probe = input.etcd;
  if (!probe) return [];
  const findings: Finding[] = [];
  const cluster = `etcd ${probe.endpoints.join(",")}`;

  if (probe.skippedReason) {
    findings.push({
      code: "ETCD_CHECK_SKIPPED",
      severity: "warning",
      object: cluster,
      message: `etcd health was not checked: ${probe.skippedReason}`,
      action: "pass --etcd-ca FILE --etcd-cert FILE --etcd-key FILE (e.g. /etc/kubernetes/pki/etcd/ca.crt, apiserver-etcd-client.crt/.key) and run preflight again",
    });
  }

  const healthy = probe.statuses.filter((s): s is Extract<typeof s, { ok: true }> => s.ok);
  for (const s of probe.statuses) {
    if (!s.ok) {
      findings.push({
        code: "ETCD_UNREACHABLE",
        severity: "blocker",
        object: `etcd ${s.endpoint}`,
        message: `the endpoint does not answer a status request: ${s.error}`,
        action: "check the endpoint URL in cidr-migration:etcd.endpoints, the member's health (etcdctl endpoint health) and the client certificates",
      });
      continue;
    }
    for (const alarm of s.alarms) {
      findings.push({
        code: "ETCD_ALARM",
        severity: "blocker",
        object: `etcd ${s.endpoint}`,
        message: `alarm raised: ${alarm}`,
        action: "resolve the alarm (for NOSPACE: compact, defragment, then etcdctl alarm disarm) before migrating",
      });
    }
    if (s.leader === "0") {
      findings.push({
        code: "ETCD_NO_LEADER",
        severity: "blocker",
        object: `etcd ${s.endpoint}`,
        message: "the member sees no leader",
        action: "restore quorum (etcdctl endpoint status --cluster) before migrating",
      });
    }
  }
  const leaders = new Set(healthy.map((s) => s.leader).filter((l) => l !== "0"));
  if (leaders.size > 1) {
    findings.push({
      code: "ETCD_SPLIT_LEADERS",
      severity: "blocker",
      object: cluster,
      message: `the endpoints name different leaders (${[...leaders].join(", ")}): they are not one healthy cluster`,
      action: "check that every endpoint belongs to this cluster's etcd and that the cluster has quorum",
    });
  }
  const largestDb = Math.max(0, ...healthy.map((s) => s.dbSizeBytes));
  if (healthy.length > 0 && healthy.length === probe.statuses.length && findings.every((f) => f.severity !== "blocker")) {
    const versions = [...new Set(healthy.map((s) => s.version))].join(", ");
    findings.push({
      code: "ETCD_HEALTHY",
      severity: "info",
      object: cluster,
      message: `${healthy.length} of ${probe.endpoints.length} endpoints answer; etcd ${versions}; largest database ${mib(largestDb)}`,
      action: "none",
    });
  }

  const dir = probe.snapshotDirectory;
  const dirObject = `snapshot directory ${dir.directory}`;
  if (!dir.writable) {
    findings.push({
      code: "SNAPSHOT_DIR_NOT_WRITABLE",
      severity: "blocker",
      object: dirObject,
      message: !dir.exists
        ? `it does not exist, and its parent ${dir.testedDirectory} does not take a file (${dir.error ?? "unknown error"})`
        : dir.error === NOT_A_DIRECTORY
          ? "it exists but is not a directory"
          : `a file cannot be created in it (${dir.error ?? "unknown error"})`,
      action: "point cidr-migration:snapshot.directory at a writable directory on this machine, or fix its permissions",
    });
  } else if (dir.freeBytes !== undefined && largestDb > 0 && dir.freeBytes < largestDb) {
    findings.push({
      code: "SNAPSHOT_DIR_LOW_SPACE",
      severity: "blocker",
      object: dirObject,
      message: `${mib(dir.freeBytes)} free, but the etcd database is ${mib(largestDb)}`,
      action: "free space there or choose another cidr-migration:snapshot.directory",
    });
  } else {
    findings.push({
      code: "SNAPSHOT_DIR_WRITABLE",
      severity: "info",
      object: dirObject,
      message: `${dir.exists ? "takes a file" : `will be created (its parent ${dir.testedDirectory} takes a file)`}${dir.freeBytes !== undefined ? `; ${mib(dir.freeBytes)} free` : ""}`,
      action: "none",
    });
  }
  return findings;
}
