/**
 * restoreManifest: put a backed-up file back in place, as `kubeadm upgrade` does when a component does not come
 * back healthy after its manifest changed.
 *
 * Input: `{ backupDir, path, root? }`: `path` is the node path of the file (e.g.
 * /etc/kubernetes/manifests/kube-apiserver.yaml); its copy is `<backupDir><path>` (the layout of
 * backupControlPlane and writeManifest).
 * Behaviour: no backup → exit 1 (nothing to restore from, say so); the file already equals the backup → no-op;
 * otherwise the current (failed) file is kept as `<backupDir>/failed<path>` for the post-mortem and the backup is
 * renamed into place through a hidden temp file, with the backup's owner and mode.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { nodePath, notInside } from "./inputs";
import { replaceFile } from "./shellFunctions";

export interface RestoreManifestInput extends SandboxRoot {
  backupDir: string;
  path: string;
}

export function restoreManifest(input: RestoreManifestInput): string {
  const path = nodePath(input.path, "path");
  const backupDir = nodePath(input.backupDir, "backupDir");
  notInside(backupDir, "backupDir", path, "path");

  return buildScript({ name: "restore-manifest", root: input.root }, [
    replaceFile,
    sh`
      readonly TARGET=${hostPath(path)}
      readonly BACKUP=${hostPath(backupDir + path)}
      readonly FAILED=${hostPath(`${backupDir}/failed${path}`)}

      [ -f "$BACKUP" ] || die "no backup at $BACKUP; cannot restore $TARGET (was backupControlPlane run with this backupDir?)"
      if [ -f "$TARGET" ] && cmp -s -- "$BACKUP" "$TARGET"; then
        note "$TARGET already equals its backup; nothing to do"
        exit 0
      fi
      if [ -f "$TARGET" ]; then
        mkdir -p -- "$(dirname -- "$FAILED")"
        cp -a -- "$TARGET" "$FAILED"
      fi
      mkdir -p -- "$(dirname -- "$TARGET")"
      replace_file "$BACKUP" "$TARGET" "$BACKUP"
      note "restored $TARGET from $BACKUP"
    `,
  ]);
}
