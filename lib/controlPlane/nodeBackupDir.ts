/**
 * Where a migration run keeps its node-side backups: `/var/lib/cidr-migration/backup/<runId>`, with runId the
 * stack's `snapshot.trigger` (stable across previews, new for each migration run), so every step of one run
 * writes to, and restores from, the same directory, and a new run never overwrites an older run's originals.
 */
import { UserError } from "../config/errors";

export const BACKUP_ROOT = "/var/lib/cidr-migration/backup";
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function checkRunId(runId: string, field = "runId"): string {
  if (!RUN_ID.test(runId)) throw new UserError(`${field} "${runId}" must be 1-128 letters, digits, . _ - (it names the backup directory); set snapshot.trigger to e.g. 2024-05-01`);
  return runId;
}

export function nodeBackupDir(runId: string): string {
  return `${BACKUP_ROOT}/${checkRunId(runId)}`;
}

/**
 * Where a run holds static-pod manifests it stopped: beside the manifests directory (one filesystem, so the move is
 * a rename), outside it (the kubelet would run them there).
 */
export const heldManifestsDir = (runId: string) => `/etc/kubernetes/cidr-migration-held/${checkRunId(runId)}`;
