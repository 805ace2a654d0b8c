/**
 * etcdCleanStart: the node's side of an etcd member's replacement (lib/controlPlane/etcdMemberReplace), after the
 * member was removed and added again at its new address: etcd is stopped (its manifest held out of the manifests
 * directory, stopStaticPods), the data dir's `member` directory moved aside into the run's backup (it holds the
 * removed member's identity; it is never deleted), the manifest written with the new member's flags
 * (`--initial-cluster`, `--initial-cluster-state=existing`), and the script waits until etcd is healthy on it.
 *
 * Input: `{ path, heldDir, heldContents, newContent, dataDir, backupDir, wait, root? }`.
 * - `heldContents`: the manifests the node may hold when the script starts: the one read before the run, or the
 *   edited one (a run cut while the edit waited). Anything else is refused: someone else put it there.
 * Idempotent: once the manifest is the new one the script only waits. No restore on failure: the member the old
 * manifest and data dir belonged to is no longer in the cluster, so they cannot come back.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { nodePath, notInside } from "./inputs";
import { sha256Of, writeHeldBack } from "./shellFunctions";
import { stopStaticPods } from "./stopStaticPods";
import { WaitComponentHealthyInput, waitComponentHealthy } from "./waitComponentHealthy";
import { sha256HexOf } from "./writeManifest";

export interface EtcdCleanStartInput extends SandboxRoot {
  /** etcd's manifest, e.g. /etc/kubernetes/manifests/etcd.yaml. */
  path: string;
  heldDir: string;
  heldContents: Array<string | Buffer>;
  newContent: string | Buffer;
  /** etcd's --data-dir. */
  dataDir: string;
  backupDir: string;
  wait: Omit<WaitComponentHealthyInput, "root" | "component">;
  /** Seconds the stop waits for etcd to end (default 120). */
  stopTimeoutSeconds?: number;
}

export function etcdCleanStart(input: EtcdCleanStartInput): string {
  const path = nodePath(input.path, "path");
  const heldDir = nodePath(input.heldDir, "heldDir");
  const dataDir = nodePath(input.dataDir, "dataDir");
  const backupDir = nodePath(input.backupDir, "backupDir");
  const manifestsDir = path.slice(0, path.lastIndexOf("/")) || "/";
  notInside(heldDir, "heldDir", path, "path");
  notInside(backupDir, "backupDir", dataDir, "dataDir");
  if (input.heldContents.length === 0) throw new Error("heldContents must list the manifest(s) the node may hold");
  const stop = stopStaticPods({ components: ["etcd"], heldDir, manifestsDir, timeoutSeconds: input.stopTimeoutSeconds, root: input.root });
  const wait = waitComponentHealthy({ ...input.wait, component: "etcd", root: input.root });
  const newContent = Buffer.from(input.newContent);

  return buildScript({ name: "etcd-clean-start", root: input.root }, [
    sha256Of,
    writeHeldBack,
    sh`
      readonly MANIFEST=${hostPath(path)}
      readonly HELD=${hostPath(`${heldDir}/${path.split("/").pop()}`)}
      readonly HELD_SHAS=(${input.heldContents.map((c) => sha256HexOf(c))})
      readonly NEW_SHA=${sha256HexOf(newContent)}
      readonly NEW_BASE64=${newContent.toString("base64")}
      readonly MEMBER_DIR=${hostPath(`${dataDir}/member`)}
      readonly SET_ASIDE=${hostPath(`${backupDir}/etcd-data-of-the-replaced-member`)}
      ${embedScript("STOP_SCRIPT", stop)}
      ${embedScript("WAIT_SCRIPT", wait)}

      known() {
        local sha
        for sha in "\${HELD_SHAS[@]}"; do [ "$1" = "$sha" ] && return 0; done
        return 1
      }

      if [ "$(sha256_of "$MANIFEST")" = "$NEW_SHA" ]; then
        note "$MANIFEST is the replacement member's already"
      else
        if [ -e "$MANIFEST" ] && ! known "$(sha256_of "$MANIFEST")"; then
          die "$MANIFEST is not a manifest this run wrote or read; compare it with the run's backup and put the right one there, then re-run. Nothing was changed"
        fi
        bash -c "$STOP_SCRIPT" stop-static-pods || die "etcd did not stop (see above); nothing else was changed on this node"
        known "$(sha256_of "$HELD")" || die "$HELD is not a manifest this run wrote or read; compare it with the run's backup, put the right one there, then re-run"
        if [ -d "$MEMBER_DIR" ]; then
          aside=$SET_ASIDE
          [ ! -e "$aside" ] || aside="$SET_ASIDE.$(date +%s)"
          mkdir -p -- "$(dirname -- "$aside")"
          mv -- "$MEMBER_DIR" "$aside"
          note "moved the removed member's data $MEMBER_DIR aside to $aside (kept, never read again)"
        fi
        write_held_back "$HELD" "$MANIFEST" "$NEW_BASE64" "$NEW_SHA" || die "the new manifest did not decode to what was planned; etcd stays stopped, its manifest held in $HELD"
        note "wrote $MANIFEST for the replacement member; the kubelet starts etcd from an empty data dir"
      fi
      bash -c "$WAIT_SCRIPT" wait-component-healthy || die "etcd did not become healthy as the replacement member ($MANIFEST, an empty data dir). The other members keep quorum without it. Read its logs (crictl ps -a; crictl logs), fix, and re-run: the run goes on from here"
    `,
  ]);
}
