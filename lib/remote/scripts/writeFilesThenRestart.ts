/**
 * writeFilesThenRestart: a control-plane node's kubeconfigs and kubelet flags after its address moved (issue 16),
 * and the restarts that make their readers see them: each file written with writeFileChecked (refused if it changed
 * since it was read, backed up once), then each static pod's manifest edit, then the kubelet.
 *
 * Input: `{ files: [{ path, current, next }], manifests?, restartKubelet?, backupDir, healthTimeoutSeconds?, root? }`.
 * - `manifests`: `[{ component, path, current, next }]`, a static pod (the controller-manager, the scheduler) whose
 *   manifest edit (lib/controlPlane/staticPodRestartEdit) makes the kubelet start it as a new pod, which reads its
 *   kubeconfig again and takes the Node's current address. Each is written checked, then the script waits for a
 *   process of it that was not there before and that answers its health URL "ok". A manifest that already had the
 *   new content (a re-run of a step cut short after its write) waits for health only. In a test's sandbox root no
 *   real process is named, so there the script waits for health.
 * - `restartKubelet`: the kubelet restarted through systemctl, last.
 * Re-run: the writes find the new content and change nothing; the kubelet restarts again, which is harmless.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { positiveInteger } from "./inputs";
import { pidsOf, sha256Of } from "./shellFunctions";
import { writeFileChecked } from "./writeManifest";

export interface FileWrite {
  path: string;
  current: string;
  next: string;
}

export interface WriteFilesThenRestartInput extends SandboxRoot {
  files: readonly FileWrite[];
  manifests?: readonly (FileWrite & { component: keyof typeof STATIC_POD_HEALTH_URLS })[];
  restartKubelet?: boolean;
  backupDir: string;
  healthTimeoutSeconds?: number;
}

/** The health endpoints kubeadm's manifests probe, on the node itself. */
export const STATIC_POD_HEALTH_URLS = {
  "kube-controller-manager": "https://127.0.0.1:10257/healthz",
  "kube-scheduler": "https://127.0.0.1:10259/healthz",
} as const;

export function writeFilesThenRestart(input: WriteFilesThenRestartInput): string {
  const manifests = input.manifests ?? [];
  if (input.files.length === 0 && manifests.length === 0 && !input.restartKubelet) throw new Error("nothing to write and nothing to restart; leave the step out");
  const timeout = positiveInteger(input.healthTimeoutSeconds ?? 300, "healthTimeoutSeconds");
  const writeOf = (f: FileWrite) => embedScript("WRITE_SCRIPT", writeFileChecked({ path: f.path, currentContent: f.current, newContent: f.next, backupDir: input.backupDir, root: input.root }));
  return buildScript({ name: "write-files-then-restart", root: input.root }, [
    // each write in a subshell of its own: every embedded script is the same readonly variable there
    ...input.files.map((f) => sh`
      (
        ${writeOf(f)}
        bash -c "$WRITE_SCRIPT" write-file
      ) || die ${`${f.path} was not changed (see above); re-read the node's files and run again`}
    `),
    ...(manifests.length > 0 ? [pidsOf, sha256Of, sh`
      readonly PROC=${hostPath("/proc")}
      readonly TIMEOUT=${timeout}

      # wait_restarted NAME URL BEFORE: until a process of NAME not among the pids BEFORE (" 1 2 ") answers URL "ok"
      wait_restarted() {
        local component=$1 url=$2 before=$3 fresh health pid deadline=$((SECONDS + TIMEOUT))
        while :; do
          fresh=''
          for pid in $(pids_of "$component"); do
            case "$before" in *" $pid "*) ;; *) fresh=$pid ;; esac
          done
          [ "$PROC" = /proc ] || fresh=stand-in
          health=$(curl -k -s -S --max-time 5 "$url" 2>&1) || true
          if [ -n "$fresh" ] && [ "$health" = ok ]; then
            note "$component restarted as a new pod (pid $fresh) and is healthy"
            return 0
          fi
          [ "$SECONDS" -lt "$deadline" ] || die "$component did not come back healthy within \${TIMEOUT}s of its manifest edit (health answer '\${health:0:200}'); check its static pod (crictl ps -a, crictl logs)"
          sleep 1
        done
      }
    `, ...manifests.map((m) => sh`
      (
        ${writeOf(m)}
        readonly MANIFEST=${hostPath(m.path)} COMPONENT=${m.component} URL=${STATIC_POD_HEALTH_URLS[m.component]}
        before=" $(pids_of "$COMPONENT" | tr '\n' ' ')"
        sha_before=$(sha256_of "$MANIFEST")
        bash -c "$WRITE_SCRIPT" write-file || die "$MANIFEST was not changed (see above); re-read the node's files and run again"
        # written before (a step cut short): whichever process runs now must only be healthy
        [ "$(sha256_of "$MANIFEST")" != "$sha_before" ] || before=" "
        wait_restarted "$COMPONENT" "$URL" "$before"
      ) || exit 1
    `)] : []),
    ...(input.restartKubelet ? [sh`
      systemctl restart kubelet
      systemctl is-active --quiet kubelet || die "the kubelet did not start again; see journalctl -u kubelet"
      note "kubelet restarted; it reports the node's new address"
    `] : []),
  ]);
}
