/**
 * waitComponentHealthy: after a manifest edit, wait until the component answers its health URL AND every running
 * process of it carries the new flags. Health alone is not enough: during the restart the old process can still
 * answer "ok" with the old flags. Fail closed: on timeout the script exits 1 (the caller then restores the backup).
 *
 * Input: `{ component, url, expectFlags, timeoutSeconds, intervalSeconds = 2, root? }`.
 * - `component`: "kube-apiserver", "kube-controller-manager", "kube-scheduler" or "etcd" (matched against the
 *   basename of argv[0]).
 * - `url`: health endpoint, e.g. https://127.0.0.1:6443/healthz or https://127.0.0.1:10257/healthz. Fetched with
 *   `curl -k` (the serving certs are the cluster's own) and must answer exactly "ok".
 * - `expectFlags`: e.g. ["--service-cluster-ip-range=10.112.0.0/12"]; each must be in the process's argv, joined
 *   (`--x=y`), separate (`--x`, `y`) or, for `--x=true`, bare (`--x`): the forms lib/controlPlane/manifestFlags leaves.
 * Processes are found through `<root>/proc/<pid>/cmdline`, so tests can stand in fake processes.
 * Read-only: a re-run changes nothing.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { matching, oneOf, positiveInteger } from "./inputs";

export const COMPONENTS = ["kube-apiserver", "kube-controller-manager"] as const;
export type ControlPlaneComponent = (typeof COMPONENTS)[number];
/** Every static-pod component the wait can check: a node address change restarts etcd too. */
export const WAITED_COMPONENTS = [...COMPONENTS, "kube-scheduler", "etcd"] as const;
export type WaitedComponent = (typeof WAITED_COMPONENTS)[number];

export interface WaitComponentHealthyInput extends SandboxRoot {
  component: WaitedComponent;
  url: string;
  expectFlags: readonly string[];
  timeoutSeconds: number;
  intervalSeconds?: number;
}

export function waitComponentHealthy(input: WaitComponentHealthyInput): string {
  const component = oneOf(input.component, WAITED_COMPONENTS, "component");
  const url = matching(input.url, /^https?:\/\/[^\s]+$/, "url", "an http(s) URL such as https://127.0.0.1:6443/healthz");
  if (input.expectFlags.length === 0) throw new Error("expectFlags is empty; pass the flags the component must run with, e.g. [\"--cluster-cidr=10.48.0.0/16\"]");
  const flags = input.expectFlags.map((f, i) => matching(f, /^--[a-z0-9][a-z0-9.-]*=/, `expectFlags[${i}]`, "a --name=value flag"));
  const timeout = positiveInteger(input.timeoutSeconds, "timeoutSeconds");
  const interval = positiveInteger(input.intervalSeconds ?? 2, "intervalSeconds");

  return buildScript({ name: "wait-component-healthy", root: input.root }, [
    sh`
      readonly COMPONENT=${component}
      readonly URL=${url}
      readonly PROC=${hostPath("/proc")}
      readonly EXPECT_FLAGS=(${flags})
      readonly TIMEOUT=${timeout}
      readonly INTERVAL=${interval}

      # has_flag WANT ARGV...: WANT (--name=value) is in ARGV joined, separate, or bare when the value is true.
      has_flag() {
        local want=$1 name=\${1%%=*} value=\${1#*=} previous='' arg
        shift
        for arg in "$@"; do
          [ "$arg" = "$want" ] && return 0
          [ "$previous" = "$name" ] && [ "$arg" = "$value" ] && return 0
          previous=$arg
        done
        if [ "$value" = true ]; then
          for arg in "$@"; do [ "$arg" = "$name" ] && return 0; done
        fi
        return 1
      }

      # Sets RUNNING (processes of COMPONENT) and STALE (those missing an expected flag).
      scan_processes() {
        local cmdline flag
        local -a argv
        RUNNING=0
        STALE=0
        for cmdline in "$PROC"/[0-9]*/cmdline; do
          mapfile -d '' -t argv < "$cmdline" 2>/dev/null || continue
          [ "\${#argv[@]}" -gt 0 ] || continue
          [ "\${argv[0]##*/}" = "$COMPONENT" ] || continue
          RUNNING=$((RUNNING + 1))
          for flag in "\${EXPECT_FLAGS[@]}"; do
            if ! has_flag "$flag" "\${argv[@]:1}"; then
              STALE=$((STALE + 1))
              break
            fi
          done
        done
      }

      deadline=$((SECONDS + TIMEOUT))
      started=$SECONDS
      old_gone=''
      while :; do
        scan_processes
        # when the last process without the flags went: the kubelet's share of the restart, for the log
        [ -n "$old_gone" ] || [ "$STALE" -gt 0 ] || old_gone=$((SECONDS - started))
        health=$(curl -k -s -S --max-time 5 "$URL" 2>&1) || true
        if [ "$RUNNING" -gt 0 ] && [ "$STALE" -eq 0 ] && [ "$health" = ok ]; then
          note "$COMPONENT is healthy and runs with \${EXPECT_FLAGS[*]} after $((SECONDS - started))s (no old process left after \${old_gone}s)"
          exit 0
        fi
        if [ "$SECONDS" -ge "$deadline" ]; then
          die "$COMPONENT not healthy with \${EXPECT_FLAGS[*]} after \${TIMEOUT}s: $RUNNING process(es), $STALE without the flags, health answer '\${health:0:200}'; check the static pod's logs (crictl logs), the backup is restored next"
        fi
        sleep "$INTERVAL"
      done
    `,
  ]);
}
