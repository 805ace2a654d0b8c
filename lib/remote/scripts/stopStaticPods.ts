/**
 * stopStaticPods: stops control-plane components the way kubeadm's docs stop a static pod: each manifest is moved
 * out of the kubelet's manifests directory into `heldDir`, and the script waits until no process of it is left.
 * Used by services.strategy etcd-rewrite, which may write etcd only while no apiserver serves it, and by an etcd
 * member's clean start after its replacement (etcdCleanStart).
 *
 * Input: `{ components, heldDir, manifestsDir?, timeoutSeconds?, root? }`.
 * - `heldDir`: where the manifests wait (kept off the manifests directory: the kubelet would run them there).
 *   startHeldManifest later writes each back with its new flags, never the held one as it is.
 * Idempotent: a manifest already held is not moved again; a re-run only waits. Fails closed: a component still
 * running after the timeout fails the step (the rewrite would refuse anyway), and its manifest stays held.
 * The kubelet ends a static pod whose manifest is gone with SIGTERM, then SIGKILL at the end of its grace period
 * (30 s by default, which on the node lab was most of the API's outage). A component still running
 * `killAfterSeconds` after the move gets that SIGKILL now: the apiserver is leaving anyway, and etcd sees a
 * client go, never half a write. Only on the real root: a test's stand-in /proc names no real process.
 * Processes are found through `<root>/proc/<pid>/cmdline`, so tests can stand in fake processes.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { nodePath, notInside, positiveInteger } from "./inputs";
import { pidsOf, sha256Of } from "./shellFunctions";
import { COMPONENTS, ControlPlaneComponent } from "./waitComponentHealthy";

/** What the stop can hold: the rewrite's two components, and etcd for its clean start (etcdCleanStart). */
export const STOPPABLE = [...COMPONENTS, "etcd"] as const;
export type StoppableComponent = ControlPlaneComponent | "etcd";

export interface StopStaticPodsInput extends SandboxRoot {
  components: readonly StoppableComponent[];
  heldDir: string;
  manifestsDir?: string;
  timeoutSeconds?: number;
  /** Seconds after the move before a still-running component is killed (default 5). */
  killAfterSeconds?: number;
}

export function stopStaticPods(input: StopStaticPodsInput): string {
  const heldDir = nodePath(input.heldDir, "heldDir");
  const manifestsDir = nodePath(input.manifestsDir ?? "/etc/kubernetes/manifests", "manifestsDir");
  notInside(heldDir, "heldDir", manifestsDir, "manifestsDir");
  notInside(manifestsDir, "manifestsDir", heldDir, "heldDir");
  if (input.components.length === 0 || input.components.some((c) => !STOPPABLE.includes(c))) {
    throw new Error(`components must list some of ${STOPPABLE.join(", ")}; got ${JSON.stringify(input.components)}`);
  }
  const timeout = positiveInteger(input.timeoutSeconds ?? 120, "timeoutSeconds");
  const killAfter = positiveInteger(input.killAfterSeconds ?? 5, "killAfterSeconds");

  return buildScript({ name: "stop-static-pods", root: input.root }, [
    sha256Of,
    pidsOf,
    sh`
      readonly MANIFESTS=${hostPath(manifestsDir)}
      readonly HELD=${hostPath(heldDir)}
      readonly PROC=${hostPath("/proc")}
      readonly COMPONENTS=(${[...input.components]})
      readonly TIMEOUT=${timeout}
      readonly KILL_AFTER=${killAfter}

      running() { [ -n "$(pids_of "$1")" ]; }

      mkdir -p -- "$HELD"
      chmod 700 -- "$HELD"
      for component in "\${COMPONENTS[@]}"; do
        manifest="$MANIFESTS/$component.yaml"
        held="$HELD/$component.yaml"
        if [ -f "$manifest" ]; then
          if [ -f "$held" ] && [ "$(sha256_of "$held")" != "$(sha256_of "$manifest")" ]; then
            die "$manifest is back and differs from the held $held: someone put a manifest in place while this run held it; compare the two and leave one, then re-run"
          fi
          mv -f -- "$manifest" "$held"
          note "moved $manifest out to $held"
        elif [ -f "$held" ]; then
          note "$component is held already ($held)"
        else
          die "neither $manifest nor $held exists: $component does not run from a static-pod manifest here (for services.strategy etcd-rewrite: use recreate instead)"
        fi
      done

      deadline=$((SECONDS + TIMEOUT))
      kill_at=$((SECONDS + KILL_AFTER))
      for component in "\${COMPONENTS[@]}"; do
        while running "$component"; do
          if [ "$SECONDS" -ge "$kill_at" ] && [ "$PROC" = /proc ]; then
            note "$component still runs \${KILL_AFTER}s after its manifest moved; sending the SIGKILL its grace period would end with"
            pids_of "$component" | xargs -r kill -KILL 2> /dev/null || true
          fi
          [ "$SECONDS" -lt "$deadline" ] || die "$component still runs \${TIMEOUT}s after its manifest was moved out; check the kubelet (journalctl -u kubelet). Its manifest stays in $HELD; to give up, move it back to $MANIFESTS"
          sleep 1
        done
        note "$component has stopped"
      done
    `,
  ]);
}
