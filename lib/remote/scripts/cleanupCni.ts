/**
 * cleanupCni: node-side CNI cleanup of the node rollout (issue 7, step 4), run on a drained node before it
 * re-registers, so the CNI sets the node up again in its new pod subnet.
 *
 * Input: `{ cni, oldPodCidrs, backupDir, cniConfDir = /etc/cni/net.d, root? }`.
 * - `cni`: the detected CNI ("calico" | "flannel" | "cilium" | "none").
 * - `oldPodCidrs`: the strings that mark a config as stale: the old cluster pod range and the node's old podCIDR
 *   (e.g. ["10.244.0.0/16", "10.244.3.0/24"]), written as in the configs (normalised CIDRs).
 *
 * What is removed, and why:
 * - Any CNI: files in `cniConfDir` that name one of `oldPodCidrs` (e.g. a bridge/host-local config pinned to the
 *   old subnet). Each is moved to `<backupDir><cniConfDir>/` first. Configs that do not name the old range stay
 *   (flannel's 10-flannel.conflist and calico's 10-calico.conflist take their ranges from elsewhere).
 * - Flannel: the `cni0` bridge and the `flannel.1` VXLAN device (they carry the old subnet's gateway address;
 *   flanneld and the bridge plugin recreate them), `/run/flannel/subnet.env` (flanneld's lease of the old subnet,
 *   backed up first), and `/var/lib/cni/networks` + `/var/lib/cni/flannel` (host-local IPAM allocations and
 *   cached netconfs of the old subnet; the node is drained, so no live pod needs them).
 * - Calico: nothing beyond stale configs; its IPAM blocks and affinities are released through the API.
 * - Cilium: nothing beyond stale configs; the agent owns its devices and state and is restarted by the CNI step.
 * Links are looked up before deletion and files tested before removal, so a second run succeeds and changes nothing.
 */
import { parseCidr } from "../../net/cidr";
import { UserError } from "../../config/errors";
import { SandboxRoot, ShellCode, buildScript, hostPath, sh } from "../remoteScript";
import { DetectedCni } from "../../plan/inventory";
import { nodePath, notInside, oneOf } from "./inputs";
import { backupOnce } from "./shellFunctions";

export interface CleanupCniInput extends SandboxRoot {
  cni: DetectedCni;
  oldPodCidrs: readonly string[];
  backupDir: string;
  cniConfDir?: string;
}

const CNIS: readonly DetectedCni[] = ["calico", "flannel", "cilium", "none"];
export const FLANNEL_LINKS = ["cni0", "flannel.1"] as const;

function flannelCleanup(backupDir: string): ShellCode {
  return sh`
    for link in ${[...FLANNEL_LINKS]}; do
      if ip link show dev "$link" > /dev/null 2>&1; then
        ip link delete dev "$link"
        note "deleted link $link"
      fi
    done
    readonly SUBNET_ENV=${hostPath("/run/flannel/subnet.env")}
    if [ -e "$SUBNET_ENV" ]; then
      backup_once "$SUBNET_ENV" ${hostPath(`${backupDir}/run/flannel/subnet.env`)}
      rm -f -- "$SUBNET_ENV"
      note "removed $SUBNET_ENV"
    fi
    for state in ${hostPath("/var/lib/cni/networks")} ${hostPath("/var/lib/cni/flannel")}; do
      if [ -e "$state" ]; then
        rm -rf -- "$state"
        note "removed $state"
      fi
    done
  `;
}

export function cleanupCni(input: CleanupCniInput): string {
  const cni = oneOf(input.cni, CNIS, "cni");
  const backupDir = nodePath(input.backupDir, "backupDir");
  const confDir = nodePath(input.cniConfDir ?? "/etc/cni/net.d", "cniConfDir");
  notInside(backupDir, "backupDir", confDir, "cniConfDir");
  if (input.oldPodCidrs.length === 0) throw new UserError("oldPodCidrs is empty; pass the old pod range and the node's old podCIDR");
  const markers = input.oldPodCidrs.map((c) => parseCidr(c).cidr);

  return buildScript({ name: "cleanup-cni", root: input.root }, [
    backupOnce,
    sh`
      readonly CONF_DIR=${hostPath(confDir)}
      readonly CONF_BACKUP=${hostPath(backupDir + confDir)}
      readonly OLD_RANGES=(${markers})

      # Any CNI: configs that still name the old range would hand pods old addresses.
      if [ -d "$CONF_DIR" ]; then
        for conf in "$CONF_DIR"/*; do
          [ -f "$conf" ] || continue
          for range in "\${OLD_RANGES[@]}"; do
            if grep -qF -- "$range" "$conf"; then
              backup_once "$conf" "$CONF_BACKUP/\${conf##*/}"
              rm -f -- "$conf"
              note "removed stale $conf (names $range; copy in $CONF_BACKUP)"
              break
            fi
          done
        done
      fi
    `,
    ...(cni === "flannel" ? [flannelCleanup(backupDir)] : []),
    sh`note ${`${cni} cleanup done`}`,
  ]);
}
