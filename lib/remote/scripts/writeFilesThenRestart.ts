/**
 * writeFilesThenRestart: a control-plane node's kubeconfigs and kubelet flags after its address moved (issue 16),
 * and the restarts that make their readers see them: each file written with writeFileChecked (refused if it changed
 * since it was read, backed up once), then the controller-manager and the scheduler restarted (a kubeconfig is read
 * only at start) and the kubelet last.
 *
 * Input: `{ files: [{ path, current, next }], restart, backupDir, healthTimeoutSeconds?, root? }`.
 * - A static-pod component restarts the way its kubelet restarts any container that exits: SIGTERM to its processes,
 *   then the wait for a process of it that was not there before and that answers its health URL "ok". Only on the
 *   real root: a test's stand-in /proc names no real process, so there the script only waits for health.
 * - The kubelet restarts through systemctl.
 * Re-run: the writes find the new content and change nothing; the restarts run again, which is harmless.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { positiveInteger } from "./inputs";
import { pidsOf } from "./shellFunctions";
import { writeFileChecked } from "./writeManifest";

export type Restartable = "kube-controller-manager" | "kube-scheduler" | "kubelet";

export interface WriteFilesThenRestartInput extends SandboxRoot {
  files: readonly { path: string; current: string; next: string }[];
  restart: readonly Restartable[];
  backupDir: string;
  healthTimeoutSeconds?: number;
}

/** The health endpoints kubeadm's manifests probe, on the node itself. */
export const STATIC_POD_HEALTH_URLS = {
  "kube-controller-manager": "https://127.0.0.1:10257/healthz",
  "kube-scheduler": "https://127.0.0.1:10259/healthz",
} as const;

export function writeFilesThenRestart(input: WriteFilesThenRestartInput): string {
  if (input.files.length === 0 && input.restart.length === 0) throw new Error("nothing to write and nothing to restart; leave the step out");
  const timeout = positiveInteger(input.healthTimeoutSeconds ?? 300, "healthTimeoutSeconds");
  const writes = input.files.map((f) => embedScript("WRITE_SCRIPT", writeFileChecked({ path: f.path, currentContent: f.current, newContent: f.next, backupDir: input.backupDir, root: input.root })));
  const staticPods = input.restart.filter((c): c is keyof typeof STATIC_POD_HEALTH_URLS => c !== "kubelet");
  return buildScript({ name: "write-files-then-restart", root: input.root }, [
    pidsOf,
    sh`
      readonly PROC=${hostPath("/proc")}
      readonly TIMEOUT=${timeout}
    `,
    // each write in a subshell of its own: every embedded script is the same readonly variable there
    ...writes.map((w, i) => sh`
      (
        ${w}
        bash -c "$WRITE_SCRIPT" write-file
      ) || die ${`${input.files[i].path} was not changed (see above); re-read the node's files and run again`}
    `),
    ...(staticPods.length > 0 ? [sh`
      # restart_static_pod NAME URL: SIGTERM its processes, wait for a new one that answers URL "ok"
      restart_static_pod() {
        local component=$1 url=$2 before fresh health pid deadline
        before=" $(pids_of "$component" | tr '\n' ' ')"
        if [ "$PROC" = /proc ] && [ "$before" != " " ]; then
          # shellcheck disable=SC2086 # the pids are words
          kill -TERM $before 2> /dev/null || true
          note "$component: sent SIGTERM to$before; its kubelet starts it again"
        fi
        deadline=$((SECONDS + TIMEOUT))
        while :; do
          fresh=''
          for pid in $(pids_of "$component"); do
            case "$before" in *" $pid "*) ;; *) fresh=$pid ;; esac
          done
          [ "$PROC" = /proc ] || fresh=stand-in
          health=$(curl -k -s -S --max-time 5 "$url" 2>&1) || true
          if [ -n "$fresh" ] && [ "$health" = ok ]; then
            note "$component restarted (pid $fresh) and is healthy"
            return 0
          fi
          [ "$SECONDS" -lt "$deadline" ] || die "$component did not come back healthy within \${TIMEOUT}s of its restart (health answer '\${health:0:200}'); check its static pod (crictl ps -a, crictl logs)"
          sleep 1
        done
      }
    `, ...staticPods.map((component) => sh`restart_static_pod ${component} ${STATIC_POD_HEALTH_URLS[component]}`)] : []),
    ...(input.restart.includes("kubelet") ? [sh`
      systemctl restart kubelet
      systemctl is-active --quiet kubelet || die "the kubelet did not start again; see journalctl -u kubelet"
      note "kubelet restarted; it reports the node's new address"
    `] : []),
  ]);
}
