/**
 * stopStaticPods: stops control-plane components the way kubeadm's docs stop a static pod: each manifest is moved
 * out of the kubelet's manifests directory into `heldDir`, and the script waits until no process of it is left.
 * Used by services.strategy etcd-rewrite, which may write etcd only while no apiserver serves it.
 *
 * Input: `{ components, heldDir, manifestsDir?, timeoutSeconds?, root? }`.
 * - `heldDir`: where the manifests wait (kept off the manifests directory: the kubelet would run them there).
 *   startHeldManifest later writes each back with its new flags, never the held one as it is.
 * Idempotent: a manifest already held is not moved again; a re-run only waits. Fails closed: a component still
 * running after the timeout fails the step (the rewrite would refuse anyway), and its manifest stays held.
 * Processes are found through `<root>/proc/<pid>/cmdline`, so tests can stand in fake processes.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { nodePath, notInside, positiveInteger } from "./inputs";
import { sha256Of } from "./shellFunctions";
import { COMPONENTS, ControlPlaneComponent } from "./waitComponentHealthy";

export interface StopStaticPodsInput extends SandboxRoot {
  components: readonly ControlPlaneComponent[];
  heldDir: string;
  manifestsDir?: string;
  timeoutSeconds?: number;
}

export function stopStaticPods(input: StopStaticPodsInput): string {
  const heldDir = nodePath(input.heldDir, "heldDir");
  const manifestsDir = nodePath(input.manifestsDir ?? "/etc/kubernetes/manifests", "manifestsDir");
  notInside(heldDir, "heldDir", manifestsDir, "manifestsDir");
  notInside(manifestsDir, "manifestsDir", heldDir, "heldDir");
  if (input.components.length === 0 || input.components.some((c) => !COMPONENTS.includes(c))) {
    throw new Error(`components must list some of ${COMPONENTS.join(", ")}; got ${JSON.stringify(input.components)}`);
  }
  const timeout = positiveInteger(input.timeoutSeconds ?? 120, "timeoutSeconds");

  return buildScript({ name: "stop-static-pods", root: input.root }, [
    sha256Of,
    sh`
      readonly MANIFESTS=${hostPath(manifestsDir)}
      readonly HELD=${hostPath(heldDir)}
      readonly PROC=${hostPath("/proc")}
      readonly COMPONENTS=(${[...input.components]})
      readonly TIMEOUT=${timeout}

      running() {
        local cmdline
        local -a argv
        for cmdline in "$PROC"/[0-9]*/cmdline; do
          mapfile -d '' -t argv < "$cmdline" 2> /dev/null || continue
          [ "\${#argv[@]}" -gt 0 ] && [ "\${argv[0]##*/}" = "$1" ] && return 0
        done
        return 1
      }

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
          die "neither $manifest nor $held exists: $component does not run from a static-pod manifest here; use services.strategy recreate"
        fi
      done

      deadline=$((SECONDS + TIMEOUT))
      for component in "\${COMPONENTS[@]}"; do
        while running "$component"; do
          [ "$SECONDS" -lt "$deadline" ] || die "$component still runs \${TIMEOUT}s after its manifest was moved out; check the kubelet (journalctl -u kubelet). Its manifest stays in $HELD; to give up, move it back to $MANIFESTS"
          sleep 1
        done
        note "$component has stopped"
      done
    `,
  ]);
}
