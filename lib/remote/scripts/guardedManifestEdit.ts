/**
 * guardedManifestEdit: one static-pod manifest edit as `kubeadm upgrade` does it: write the new manifest (checked),
 * wait until the component is healthy AND runs the new flags, and if it does not, put the previous manifest back
 * and fail. A failure therefore always leaves the old manifest in place and a non-zero exit, in one script, so
 * no Pulumi step boundary can sit between "new manifest written" and "restore on failure".
 *
 * Input: `{ path, currentContent, newContent, backupDir, wait, restoreWait?, root? }`.
 * - `currentContent`: the manifest as read from the node (readFile); the write refuses if it changed since.
 * - `wait`: the health check of the new manifest (lib/remote/scripts/waitComponentHealthy input without `root`).
 * - `restoreWait`: optional health check after a restore (e.g. the old flags); its failure is reported too.
 * Composition: the three step scripts (writeManifest, waitComponentHealthy, restoreManifest) are generated as
 * usual and embedded as quoted here-documents (lib/remote/scripts/embedScript), each run with `bash -c`, so each keeps its own tested behaviour
 * (idempotent write, checksum refusal, first-copy backup) and its own messages.
 * - `doneContent`: another manifest that counts as the edit done (etcd's, started from a clean data dir after its
 *   member was replaced: lib/remote/scripts/etcdCleanStart); when the file has it, the script only waits.
 * Re-run: the write is a no-op once the file has the new content and the wait passes, so a second run changes
 * nothing. A run after a failed one tries the edit again from the restored manifest.
 * Exit status NOT_HEALTHY_RESTORED: the new manifest was written but the component did not become healthy, and the
 * previous manifest is back (the one failure a caller may answer with a fallback); any other failure exits 1.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { restoreManifest } from "./restoreManifest";
import { WaitComponentHealthyInput, waitComponentHealthy } from "./waitComponentHealthy";
import { sha256Of } from "./shellFunctions";
import { sha256HexOf, writeFileChecked } from "./writeManifest";

export interface GuardedManifestEditInput extends SandboxRoot {
  path: string;
  currentContent: string | Buffer;
  newContent: string | Buffer;
  backupDir: string;
  wait: Omit<WaitComponentHealthyInput, "root">;
  restoreWait?: Omit<WaitComponentHealthyInput, "root">;
  doneContent?: string | Buffer;
}

export const NOT_HEALTHY_RESTORED = 3;

export function guardedManifestEdit(input: GuardedManifestEditInput): string {
  const root = input.root;
  const write = writeFileChecked({ path: input.path, currentContent: input.currentContent, newContent: input.newContent, backupDir: input.backupDir, root });
  const wait = waitComponentHealthy({ ...input.wait, root });
  const restore = restoreManifest({ backupDir: input.backupDir, path: input.path, root });
  const restoreWait = input.restoreWait ? waitComponentHealthy({ ...input.restoreWait, root }) : "";
  const component = input.wait.component;

  return buildScript({ name: "guarded-manifest-edit", root }, [
    sha256Of,
    sh`
      readonly COMPONENT=${component}
      readonly TARGET=${input.path}
      readonly TARGET_FILE=${hostPath(input.path)}
      readonly DONE_SHA=${input.doneContent === undefined ? "" : sha256HexOf(input.doneContent)}
      ${embedScript("WRITE_SCRIPT", write)}
      ${embedScript("WAIT_SCRIPT", wait)}
      ${embedScript("RESTORE_SCRIPT", restore)}
      ${embedScript("RESTORE_WAIT_SCRIPT", restoreWait)}

      if [ -n "$DONE_SHA" ] && [ "$(sha256_of "$TARGET_FILE")" = "$DONE_SHA" ]; then
        note "$TARGET is the manifest an earlier run started $COMPONENT from; waiting for it"
        bash -c "$WAIT_SCRIPT" wait-component-healthy || die "$COMPONENT is not healthy with $TARGET as an earlier run left it; check the static pod (crictl ps -a, crictl logs), then re-run"
        exit 0
      fi
      bash -c "$WRITE_SCRIPT" write-manifest || die "$TARGET was not changed (see the message above); re-read the manifest and plan again"
      if bash -c "$WAIT_SCRIPT" wait-component-healthy; then
        note "$COMPONENT runs with the new manifest $TARGET"
        exit 0
      fi
      note "$COMPONENT did not become healthy with the new $TARGET; restoring the previous manifest"
      bash -c "$RESTORE_SCRIPT" restore-manifest || die "restoring $TARGET failed too; restore it by hand from the backup named above, now"
      if [ -n "$RESTORE_WAIT_SCRIPT" ] && ! bash -c "$RESTORE_WAIT_SCRIPT" wait-component-healthy; then
        die "$COMPONENT is not healthy even with the restored $TARGET; check the static pod (crictl ps -a, crictl logs) now"
      fi
      (die "$COMPONENT did not become healthy with the new $TARGET; the previous manifest is back in place, nothing else was changed") || exit ${NOT_HEALTHY_RESTORED}
    `,
  ]);
}
