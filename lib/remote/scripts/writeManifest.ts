/**
 * writeManifest: the checked write of one file on a node (a static-pod manifest, the kubelet's config.yaml).
 *
 * Input: `{ path, expectedSha256, newContentBase64, backupDir, root? }`.
 * - `expectedSha256`: sha256 (hex) of the content the edit was computed from (what the caller read from the node).
 * - `newContentBase64`: the full new content, base64 (bytes exact: CRLF, no final newline, all kept).
 * - `backupDir`: the dated backup directory; the current file is copied to `<backupDir><path>` unless a copy is
 *   already there (the first copy is the pre-migration original and is never overwritten).
 *
 * Behaviour, in order: the file already has the new content → no-op (exit 0, a re-run is safe); its sha256 is not
 * `expectedSha256` → exit 1 with a message on stderr (someone changed it since the plan: re-read and re-plan);
 * otherwise back up, decode to a hidden temp file next to the target, check the decoded sha256, give it the target's
 * owner and mode and rename it into place. The kubelet notices the renamed manifest and restarts the static pod.
 *
 * Also exported: `sha256HexOf(text | Buffer)` for the caller computing `expectedSha256`, and `writeFileChecked`
 * for callers that have the old and new text rather than a hash and base64.
 */
import { createHash } from "crypto";
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { canonicalBase64, nodePath, notInside, sha256Hex } from "./inputs";
import { backupOnce, replaceFile, sha256Of } from "./shellFunctions";

export interface WriteManifestInput extends SandboxRoot {
  path: string;
  expectedSha256: string;
  newContentBase64: string;
  backupDir: string;
}

export function sha256HexOf(content: string | Buffer): string {
  return createHash("sha256").update(content).digest("hex");
}

export function writeManifest(input: WriteManifestInput): string {
  const path = nodePath(input.path, "path");
  const backupDir = nodePath(input.backupDir, "backupDir");
  notInside(backupDir, "backupDir", path, "path");
  const expected = sha256Hex(input.expectedSha256, "expectedSha256");
  const content = canonicalBase64(input.newContentBase64, "newContentBase64");
  const newSha = sha256HexOf(content);
  // Hidden (dot) name next to the target: the kubelet skips dot-files in the static-pod directory.
  const slash = path.lastIndexOf("/");
  const decodedPath = `${path.slice(0, slash)}/.${path.slice(slash + 1)}.cidr-migration.new`;

  return buildScript({ name: "write-manifest", root: input.root }, [
    sha256Of,
    backupOnce,
    replaceFile,
    sh`
      readonly TARGET=${hostPath(path)}
      readonly BACKUP=${hostPath(backupDir + path)}
      readonly EXPECTED_SHA=${expected}
      readonly NEW_SHA=${newSha}
      readonly DECODED=${hostPath(decodedPath)}

      [ -f "$TARGET" ] || die "$TARGET does not exist; nothing to edit (was the node set up differently than planned?)"
      current=$(sha256_of "$TARGET")
      if [ "$current" = "$NEW_SHA" ]; then
        note "$TARGET already has the new content; nothing to do"
        exit 0
      fi
      if [ "$current" != "$EXPECTED_SHA" ]; then
        die "$TARGET changed since the edit was planned (sha256 $current, planned from $EXPECTED_SHA); re-read the file and plan again"
      fi

      backup_once "$TARGET" "$BACKUP"
      trap 'rm -f -- "$DECODED"' EXIT
      printf '%s' ${input.newContentBase64} | base64 -d > "$DECODED"
      [ "$(sha256_of "$DECODED")" = "$NEW_SHA" ] || die "decoded content for $TARGET does not match its sha256; nothing was changed"
      replace_file "$DECODED" "$TARGET"
      note "wrote $TARGET (sha256 $NEW_SHA; previous content backed up in $BACKUP)"
    `,
  ]);
}

export interface WriteFileCheckedInput extends SandboxRoot {
  path: string;
  /** The content read from the node that the edit was computed from. */
  currentContent: string | Buffer;
  newContent: string | Buffer;
  backupDir: string;
}

export function writeFileChecked(input: WriteFileCheckedInput): string {
  return writeManifest({
    path: input.path,
    expectedSha256: sha256HexOf(input.currentContent),
    newContentBase64: Buffer.from(input.newContent).toString("base64"),
    backupDir: input.backupDir,
    root: input.root,
  });
}
