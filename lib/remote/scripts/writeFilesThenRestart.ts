/**
 * writeFilesThenRestart: a control-plane node's kubeconfigs and kubelet flags after its address moved (issue 16),
 * and the restarts that make their readers see them: each file written with writeFileChecked (refused if it changed
 * since it was read, backed up once), then the static pods asked for restarted, and the kubelet last.
 *
 * Input: `{ files: [{ path, current, next }], restart, backupDir, healthTimeoutSeconds?, manifestsDir?, root? }`.
 * - A static pod (the controller-manager, the scheduler) restarts the way kubeadm's docs restart one: its manifest
 *   moved out of the kubelet's directory (to `<backupDir>/restart-held`) until its process is gone, then back; then
 *   the wait for a process of it that was not there before and that answers its health URL "ok". It comes back as a
 *   new pod, which takes the Node's current address (a running pod keeps the one it started with). In a test's
 *   sandbox root no real process is named, so there the script only moves the manifest and waits for health.
 * - The kubelet restarts through systemctl.
 * Re-run: the writes find the new content and change nothing; a manifest a cut-short run held is put back; the
 * restarts run again, which is harmless.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { embedScript } from "./embedScript";
import { nodePath, notInside, positiveInteger } from "./inputs";
import { pidsOf } from "./shellFunctions";
import { writeFileChecked } from "./writeManifest";

export type Restartable = "kube-controller-manager" | "kube-scheduler" | "kubelet";

export interface WriteFilesThenRestartInput extends SandboxRoot {
  files: readonly { path: string; current: string; next: string }[];
  restart: readonly Restartable[];
  backupDir: string;
  healthTimeoutSeconds?: number;
  /** The kubelet's static-pod directory (default /etc/kubernetes/manifests). */
  manifestsDir?: string;
}

/** The health endpoints kubeadm's manifests probe, on the node itself. */
export const STATIC_POD_HEALTH_URLS = {
  "kube-controller-manager": "https://127.0.0.1:10257/healthz",
  "kube-scheduler": "https://127.0.0.1:10259/healthz",
} as const;

export function writeFilesThenRestart(input: WriteFilesThenRestartInput): string {
  if (input.files.length === 0 && input.restart.length === 0) throw new Error("nothing to write and nothing to restart; leave the step out");
  const timeout = positiveInteger(input.healthTimeoutSeconds ?? 300, "healthTimeoutSeconds");
  const backupDir = nodePath(input.backupDir, "backupDir");
  const manifestsDir = nodePath(input.manifestsDir ?? "/etc/kubernetes/manifests", "manifestsDir");
  notInside(backupDir, "backupDir", manifestsDir, "manifestsDir");
  const writes = input.files.map((f) => embedScript("WRITE_SCRIPT", writeFileChecked({ path: f.path, currentContent: f.current, newContent: f.next, backupDir: input.backupDir, root: input.root })));
  const staticPods = input.restart.filter((c): c is keyof typeof STATIC_POD_HEALTH_URLS => c !== "kubelet");
  return buildScript({ name: "write-files-then-restart", root: input.root }, [
    // each write in a subshell of its own: every embedded script is the same readonly variable there
    ...writes.map((w, i) => sh`
      (
        ${w}
        bash -c "$WRITE_SCRIPT" write-file
      ) || die ${`${input.files[i].path} was not changed (see above); re-read the node's files and run again`}
    `),
    ...(staticPods.length > 0 ? [pidsOf, sh`
      readonly PROC=${hostPath("/proc")}
      readonly MANIFESTS=${hostPath(manifestsDir)}
      readonly HELD=${hostPath(`${backupDir}/restart-held`)}
      readonly TIMEOUT=${timeout}

      # restart_static_pod NAME URL: its manifest moved out of the kubelet's directory until the pod is gone, then
      # back: the kubelet starts it as a new pod (a new address; the same process would keep the old one) that
      # reads its kubeconfig again; wait until a new process answers URL "ok". A manifest left out by a run cut
      # short is put back first.
      restart_static_pod() {
        local component=$1 url=$2 before fresh health pid deadline
        local manifest="$MANIFESTS/$component.yaml" held="$HELD/$component.yaml"
        if [ ! -f "$manifest" ] && [ -f "$held" ]; then
          mv -f -- "$held" "$manifest"
          note "$component: put back $manifest, which an earlier run held"
        fi
        if [ ! -f "$manifest" ]; then
          note "$component: no $manifest here (not a static pod of this node); nothing to restart"
          return 0
        fi
        before=" $(pids_of "$component" | tr '\n' ' ')"
        mkdir -p -- "$HELD"
        mv -f -- "$manifest" "$held"
        deadline=$((SECONDS + TIMEOUT))
        while [ "$PROC" = /proc ] && [ -n "$(pids_of "$component")" ]; do
          [ "$SECONDS" -lt "$deadline" ] || { mv -f -- "$held" "$manifest"; die "$component still runs \${TIMEOUT}s after its manifest was moved out; its manifest is back, check the kubelet (journalctl -u kubelet)"; }
          sleep 1
        done
        mv -f -- "$held" "$manifest"
        note "$component: stopped, manifest back in $MANIFESTS"
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
