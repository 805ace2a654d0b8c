/**
 * Bash functions shared by the step scripts, as ShellCode steps to list before the steps that call them.
 *
 * - `sha256_of FILE` prints the file's sha256 (hex), or "absent" when there is no such file.
 * - `backup_once SRC DEST` copies SRC (file or directory, with owner, mode and times) to DEST unless DEST exists.
 *   The first backup is the pre-migration state, so a re-run must never overwrite it with an already-edited file.
 *   The copy lands under a temporary name and is renamed, so DEST is never a half-written copy.
 * - `pids_of NAME` prints the pid of every process whose argv[0] is NAME, one per line, read from `$PROC/<pid>/cmdline`
 *   (the caller sets PROC: the node's /proc, or a test's stand-in).
 * - `sans_of CERT` prints the certificate's SANs, one per line, sorted, in openssl's text form ("DNS:kubernetes",
 *   "IP Address:10.96.0.1").
 * - `replace_file SRC TARGET [REFERENCE]` puts SRC's content at TARGET through a hidden temp file in TARGET's
 *   directory and a rename, with REFERENCE's owner and mode (default: TARGET's, or SRC's when TARGET is new). The kubelet ignores dot-files in the
 *   static-pod directory, and the rename is atomic, so it never starts a pod from a half-written manifest.
 * - `write_held_back HELD MANIFEST BASE64 SHA` starts a held component on a new manifest: BASE64 decoded next to
 *   MANIFEST, checked against SHA, given HELD's owner and mode, renamed into place, and HELD removed. Fails (1,
 *   nothing written) when the content does not decode to SHA. Needs `sha256_of`.
 */
import { ShellCode, sh } from "../remoteScript";

export const sha256Of: ShellCode = sh`
  sha256_of() {
    if [ -f "$1" ]; then sha256sum < "$1" | cut -d ' ' -f 1; else printf 'absent\n'; fi
  }
`;

export const backupOnce: ShellCode = sh`
  backup_once() {
    local src=$1 dest=$2
    [ -e "$dest" ] && return 0
    mkdir -p -- "$(dirname -- "$dest")"
    rm -rf -- "$dest.partial"
    cp -a -- "$src" "$dest.partial"
    mv -- "$dest.partial" "$dest"
  }
`;

export const sansOf: ShellCode = sh`
  sans_of() {
    openssl x509 -noout -ext subjectAltName -in "$1" | sed -n '2,$p' | tr ',' '\n' | sed -e 's/^[[:space:]]*//' -e '/^$/d' | sort -u
  }
`;

export const replaceFile: ShellCode = sh`
  replace_file() {
    local src=$1 target=$2 reference=\${3:-} tmp
    [ -n "$reference" ] || reference=$target
    [ -e "$reference" ] || reference=$src
    tmp="$(dirname -- "$target")/.$(basename -- "$target").cidr-migration.tmp"
    rm -f -- "$tmp"
    cp -- "$src" "$tmp"
    chown --reference="$reference" -- "$tmp"
    chmod --reference="$reference" -- "$tmp"
    mv -f -- "$tmp" "$target"
  }
`;

export const pidsOf: ShellCode = sh`
  pids_of() {
    local cmdline pid
    local -a argv
    for cmdline in "$PROC"/[0-9]*/cmdline; do
      mapfile -d '' -t argv < "$cmdline" 2> /dev/null || continue
      pid=\${cmdline%/cmdline}
      [ "\${#argv[@]}" -gt 0 ] && [ "\${argv[0]##*/}" = "$1" ] && printf '%s\n' "\${pid##*/}"
    done
    return 0
  }
`;

export const writeHeldBack: ShellCode = sh`
  write_held_back() {
    local held=$1 manifest=$2 content=$3 sha=$4 tmp
    tmp="$(dirname -- "$manifest")/.$(basename -- "$manifest").cidr-migration.tmp"
    printf '%s' "$content" | base64 -d > "$tmp"
    [ "$(sha256_of "$tmp")" = "$sha" ] || { rm -f -- "$tmp"; return 1; }
    chown --reference="$held" -- "$tmp"
    chmod --reference="$held" -- "$tmp"
    mv -f -- "$tmp" "$manifest"
    rm -f -- "$held"
  }
`;
