/**
 * backupControlPlane: copy the static-pod manifests and the PKI of a control-plane node to a dated directory,
 * before any edit (DESIGN: "a backup comes before every edit"; rollback = etcd snapshot + these manifests).
 *
 * Input: `{ backupDir, manifestsDir = /etc/kubernetes/manifests, pkiDir = /etc/kubernetes/pki, root? }`.
 * `backupDir` is chosen (and dated) by the caller, e.g. /var/backups/cidr-migration/2024-05-01T10-00-00Z.
 *
 * Layout: the backup mirrors node paths, so `<backupDir>/etc/kubernetes/manifests/kube-apiserver.yaml` is the copy
 * of `/etc/kubernetes/manifests/kube-apiserver.yaml`. writeManifest and restoreManifest use the same layout.
 * Completeness: everything is copied into `<backupDir>.partial`, a SHA256SUMS list and the marker
 * `.cidr-migration-backup-complete` are written last, and the directory is renamed to `backupDir`. A re-run finds
 * the marker and does nothing; a run interrupted earlier left only `.partial`, which is discarded and redone.
 * A `backupDir` that exists without the marker is not ours: the script stops rather than overwrite it.
 * The PKI holds private keys, so the backup is created with umask 077 (copies keep their own modes).
 * `backupDir` must not lie inside the manifests directory: the kubelet would run the copies as static pods.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { notInside, nodePath } from "./inputs";

export interface BackupControlPlaneInput extends SandboxRoot {
  backupDir: string;
  manifestsDir?: string;
  pkiDir?: string;
}

export const BACKUP_COMPLETE_MARKER = ".cidr-migration-backup-complete";

export function backupControlPlane(input: BackupControlPlaneInput): string {
  const backupDir = nodePath(input.backupDir, "backupDir");
  const manifestsDir = nodePath(input.manifestsDir ?? "/etc/kubernetes/manifests", "manifestsDir");
  const pkiDir = nodePath(input.pkiDir ?? "/etc/kubernetes/pki", "pkiDir");
  notInside(backupDir, "backupDir", manifestsDir, "manifestsDir");
  notInside(backupDir, "backupDir", pkiDir, "pkiDir");

  return buildScript({ name: "backup-control-plane", root: input.root }, [
    sh`
      readonly BACKUP_DIR=${hostPath(backupDir)}
      readonly MARKER="$BACKUP_DIR"/${BACKUP_COMPLETE_MARKER}
      readonly STAGING="$BACKUP_DIR.partial"
      readonly MANIFESTS=${hostPath(manifestsDir)}
      readonly PKI=${hostPath(pkiDir)}

      if [ -f "$MARKER" ]; then
        note "backup $BACKUP_DIR is complete already; nothing to do"
        exit 0
      fi
      [ -e "$BACKUP_DIR" ] && die "$BACKUP_DIR exists but holds no complete backup (no $MARKER); move it aside or choose another backupDir"
      [ -d "$MANIFESTS" ] || die "$MANIFESTS is not a directory; pass manifestsDir for this node"
      [ -d "$PKI" ] || die "$PKI is not a directory; pass pkiDir for this node"

      umask 077
      rm -rf -- "$STAGING"
      mkdir -p -- "$STAGING"${manifestsDir} "$STAGING"${pkiDir}
      cp -a -- "$MANIFESTS"/. "$STAGING"${manifestsDir}/
      cp -a -- "$PKI"/. "$STAGING"${pkiDir}/
      (cd "$STAGING" && find . -type f ! -path ./SHA256SUMS -print0 | sort -z | xargs -0 -r sha256sum) > "$STAGING/SHA256SUMS"
      (cd "$STAGING" && sha256sum --quiet --check SHA256SUMS) || die "copy in $STAGING does not match its checksums; check the disk and re-run"
      date -u +%Y-%m-%dT%H:%M:%SZ > "$STAGING"/${BACKUP_COMPLETE_MARKER}
      mkdir -p -- "$(dirname -- "$BACKUP_DIR")"
      mv -- "$STAGING" "$BACKUP_DIR"
      note "backed up $MANIFESTS and $PKI to $BACKUP_DIR"
    `,
  ]);
}
