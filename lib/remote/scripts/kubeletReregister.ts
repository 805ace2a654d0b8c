/**
 * kubeletReregister: the node-side halves of the `reregister` rejoin strategy (issue 7, step 5):
 *   stop (this module's `stop` script) → the caller deletes the Node object through the API → `start` script.
 * The kubelet then registers the Node again, and it gets its planned podCIDR.
 *
 * Input: `{ backupDir, kubeletDir = /var/lib/kubelet, root? }` → `{ stop, start }` (two scripts).
 *
 * What the kubelet keeps on disk, and what happens to it:
 * - The pod CIDR itself is NOT stored by the kubelet: it reads Node.spec.podCIDR from the API after registering.
 *   Old-range state lives in the CNI (cleanupCni) and in the pod sandboxes, which go when the Node's pods do.
 * - Cleared (backed up to `<backupDir><kubeletDir>/` first): `cpu_manager_state` and `memory_manager_state`,
 *   the resource managers' checkpoints that pin CPUs and memory to containers of the pods the re-registration
 *   replaces. The kubelet rebuilds them on start; a stale one can stop it from starting after a policy change.
 * - KEPT: `pki/kubelet-client-current.pem` (the node's client identity; without it the kubelet needs a TLS
 *   bootstrap token, which kubeadm removed after the join, and the node would never come back; the script checks
 *   it exists before stopping anything), `pki/kubelet.crt|key` (serving cert), `config.yaml` and
 *   `kubeadm-flags.env` (its configuration), `pods/` (may still hold mounted volumes: deleting them destroys data;
 *   the kubelet removes orphaned pod directories itself), `device-plugins/`, `plugins/`, `plugins_registry/`.
 * `stop` is idempotent (stopping a stopped kubelet is a no-op; cleared files stay cleared) and `start` too.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { nodePath, notInside } from "./inputs";
import { backupOnce } from "./shellFunctions";

export interface KubeletReregisterInput extends SandboxRoot {
  backupDir: string;
  kubeletDir?: string;
}

export interface KubeletReregisterScripts {
  /** Before the Node object is deleted: checks the client cert, stops the kubelet, clears the checkpoints. */
  stop: string;
  /** After the Node object is deleted: starts the kubelet and checks it stays active. */
  start: string;
}

export const KUBELET_CLEARED_FILES = ["cpu_manager_state", "memory_manager_state"] as const;

export function kubeletReregister(input: KubeletReregisterInput): KubeletReregisterScripts {
  const backupDir = nodePath(input.backupDir, "backupDir");
  const kubeletDir = nodePath(input.kubeletDir ?? "/var/lib/kubelet", "kubeletDir");
  notInside(backupDir, "backupDir", kubeletDir, "kubeletDir");

  const stop = buildScript({ name: "kubelet-stop-for-reregister", root: input.root }, [
    backupOnce,
    sh`
      readonly KUBELET_DIR=${hostPath(kubeletDir)}
      readonly KUBELET_BACKUP=${hostPath(backupDir + kubeletDir)}
      readonly CLIENT_CERT="$KUBELET_DIR/pki/kubelet-client-current.pem"

      [ -e "$CLIENT_CERT" ] || die "$CLIENT_CERT is missing: the kubelet could not authenticate to re-register; use the kubeadm-rejoin strategy for this node"
      systemctl stop kubelet
      if systemctl is-active --quiet kubelet; then
        die "kubelet is still active after systemctl stop; stop it by hand and re-run"
      fi
      for name in ${[...KUBELET_CLEARED_FILES]}; do
        if [ -e "$KUBELET_DIR/$name" ]; then
          backup_once "$KUBELET_DIR/$name" "$KUBELET_BACKUP/$name"
          rm -f -- "\${KUBELET_DIR:?}/$name"
          note "cleared $KUBELET_DIR/$name"
        fi
      done
      note "kubelet stopped; delete the Node object next, then start the kubelet"
    `,
  ]);

  const start = buildScript({ name: "kubelet-start-after-reregister" }, [
    sh`
      systemctl start kubelet
      systemctl is-active --quiet kubelet || die "kubelet did not start; see journalctl -u kubelet"
      note "kubelet started; it registers the Node again"
    `,
  ]);
  return { stop, start };
}
