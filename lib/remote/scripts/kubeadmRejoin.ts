/**
 * kubeadmRejoin: the `kubeadm-rejoin` strategy of the node rollout (issue 7, step 5) for a drained worker:
 * back up, `kubeadm reset -f`, clean what reset leaves, `kubeadm join` with a fresh token.
 *
 * Input: `{ endpoint, token, caCertHash, rejoinId, backupDir, nodeName?, criSocket?, kubeletDir, cniConfDir, root? }`
 * - `endpoint`: the apiserver as `host:port` (the control-plane endpoint of the join command).
 * - `token`: a bootstrap token (`abcdef.0123456789abcdef`) made for this join by a step on a control-plane node,
 *   as a `Sensitive`. The returned script embeds it, so the script comes back as a `Sensitive` too: the caller
 *   must hand it to RemoteScript as a Pulumi secret. The script never prints it.
 * - `caCertHash`: `sha256:<64 hex>` (the join command's --discovery-token-ca-cert-hash).
 * - `rejoinId`: names this rollout (e.g. the migration id). After a successful join the id is written to
 *   `/var/lib/cidr-migration/rejoined`; a re-run with the same id on a joined node (kubelet.conf present) does
 *   nothing, so a retried `pulumi up` never resets a node that already came back.
 *
 * Cleaning: `kubeadm reset -f` removes /etc/kubernetes's node files and stops the kubelet but, as it says itself,
 * leaves /etc/cni/net.d and parts of /var/lib/kubelet: both are emptied here. /var/lib/kubelet is only emptied when
 * nothing is mounted below it (a leftover volume mount would lose its data to rm); a filesystem mounted at
 * /var/lib/kubelet itself is fine. Everything is first backed up
 * to `<backupDir>` (/etc/kubernetes, the CNI configs, the kubelet's config.yaml and kubeadm-flags.env), mode 0700
 * because it holds the node's credentials. The join rewrites config.yaml from the kubelet-config ConfigMap, so
 * the node picks up the new clusterDNS from there.
 * A control-plane node (`controlPlane` given; the rollout gives it only where etcd can spare the member, see
 * lib/nodeMove/controlPlaneRejoin) is reset the same way, once its stacked etcd member has left (the rollout removes
 * it through etcd itself, lib/controlPlane/etcdRejoinCheck leaveEtcd; reset's own removal is skipped), and its etcd
 * data dir is emptied; then `kubeadm join --control-plane` with the key of the certificates a control-plane node
 * uploaded (a credential, like the token) adds a member back, empty, and writes the node's certificates and
 * static-pod manifests from kubeadm-config, which by then holds the new ranges. Without `controlPlane` a node with a
 * static apiserver or etcd manifest is refused: reset would remove its etcd member.
 */
import { SandboxRoot, buildScript, hostPath, sh } from "../remoteScript";
import { Sensitive } from "../../config/sensitive";
import { PREFLIGHT_CHECK } from "../../config/nodeIdentity";
import { matching, nodePath, notInside } from "./inputs";
import { backupOnce } from "./shellFunctions";

export interface KubeadmRejoinInput extends SandboxRoot {
  endpoint: string;
  token: Sensitive;
  caCertHash: string;
  rejoinId: string;
  backupDir: string;
  nodeName?: string;
  criSocket?: string;
  /** kubeadm join's --ignore-preflight-errors: the checks this node's first join skipped too (e.g. SystemVerification on cgroup v1) */
  ignorePreflightErrors?: string[];
  kubeletDir?: string;
  cniConfDir?: string;
  /** A control-plane node with a stacked etcd member: joined back as one. */
  controlPlane?: ControlPlaneJoin;
}

export interface ControlPlaneJoin {
  /** kubeadm's key to the uploaded certificates (`kubeadm init phase upload-certs --upload-certs`): a credential. */
  certificateKey: Sensitive;
  /** The apiserver's advertise address on this node: its own address. */
  advertiseAddress: string;
  /** Its etcd data dir (kubeadm-config etcd.local.dataDir; /var/lib/etcd by default): emptied for the join. */
  etcdDataDir?: string;
}

export const REJOIN_MARKER = "/var/lib/cidr-migration/rejoined";

export function kubeadmRejoin(input: KubeadmRejoinInput): Sensitive {
  const endpoint = matching(input.endpoint, /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}$/, "endpoint", "host:port such as 10.0.0.10:6443");
  const token = matching(input.token.reveal("token"), /^[a-z0-9]{6}\.[a-z0-9]{16}$/, "token", "a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16}); create one with kubeadm token create", true);
  const caCertHash = matching(input.caCertHash, /^sha256:[0-9a-f]{64}$/, "caCertHash", "sha256:<64 hex digits>, as printed by kubeadm token create --print-join-command");
  const rejoinId = matching(input.rejoinId, /^[A-Za-z0-9._-]{1,128}$/, "rejoinId", "a short id of letters, digits, . _ -");
  const backupDir = nodePath(input.backupDir, "backupDir");
  const kubeletDir = nodePath(input.kubeletDir ?? "/var/lib/kubelet", "kubeletDir");
  const cniConfDir = nodePath(input.cniConfDir ?? "/etc/cni/net.d", "cniConfDir");
  for (const [dir, field] of [[kubeletDir, "kubeletDir"], [cniConfDir, "cniConfDir"], ["/etc/kubernetes", "/etc/kubernetes"]] as const) {
    notInside(backupDir, "backupDir", dir, field);
  }
  const controlPlane = input.controlPlane;
  const certificateKey = controlPlane
    ? matching(controlPlane.certificateKey.reveal("certificateKey"), /^[0-9a-f]{64}$/, "certificateKey", "the 64 hex digits kubeadm init phase upload-certs --upload-certs prints", true)
    : undefined;
  const etcdDataDir = nodePath(controlPlane?.etcdDataDir ?? "/var/lib/etcd", "etcdDataDir");
  const extraArgs = [
    ...(controlPlane
      ? ["--control-plane", "--apiserver-advertise-address", matching(controlPlane.advertiseAddress, /^[0-9a-fA-F:.]+$/, "advertiseAddress", "the node's IP address")]
      : []),
    ...(input.nodeName ? ["--node-name", matching(input.nodeName, /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/, "nodeName", "a Kubernetes node name")] : []),
    ...(input.criSocket ? ["--cri-socket", matching(input.criSocket, /^(unix:\/\/)?\/[^\s]+$/, "criSocket", "a socket path such as unix:///run/containerd/containerd.sock")] : []),
    ...(input.ignorePreflightErrors?.length
      ? [`--ignore-preflight-errors=${input.ignorePreflightErrors.map((c) => matching(c, PREFLIGHT_CHECK, "ignorePreflightErrors", "a kubeadm preflight check name such as SystemVerification")).join(",")}`]
      : []),
  ];

  const script = buildScript({ name: "kubeadm-rejoin", root: input.root }, [
    backupOnce,
    sh`
      readonly MARKER=${hostPath(REJOIN_MARKER)}
      readonly REJOIN_ID=${rejoinId}
      readonly KUBERNETES_DIR=${hostPath("/etc/kubernetes")}
      readonly KUBELET_DIR=${hostPath(kubeletDir)}
      readonly CNI_CONF_DIR=${hostPath(cniConfDir)}
      readonly BACKUP_DIR=${hostPath(backupDir)}
      readonly ENDPOINT=${endpoint}
      readonly TOKEN=${token}
      readonly CA_CERT_HASH=${caCertHash}
      readonly CONTROL_PLANE=${controlPlane ? "yes" : ""}
      readonly CERTIFICATE_KEY=${certificateKey ?? ""}
      readonly ETCD_DATA_DIR=${hostPath(etcdDataDir)}

      if [ -f "$MARKER" ] && [ "$(cat -- "$MARKER")" = "$REJOIN_ID" ] && [ -f "$KUBERNETES_DIR/kubelet.conf" ]; then
        note "node already rejoined for $REJOIN_ID; nothing to do"
        exit 0
      fi
      if [ -z "$CONTROL_PLANE" ]; then
        for manifest in kube-apiserver.yaml etcd.yaml; do
          if [ -e "$KUBERNETES_DIR/manifests/$manifest" ]; then
            die "refusing to kubeadm reset a control-plane node ($KUBERNETES_DIR/manifests/$manifest exists); use the reregister strategy"
          fi
        done
      fi

      umask 077
      if [ -d "$KUBERNETES_DIR" ]; then backup_once "$KUBERNETES_DIR" "$BACKUP_DIR"${"/etc/kubernetes"}; fi
      if [ -d "$CNI_CONF_DIR" ]; then backup_once "$CNI_CONF_DIR" "$BACKUP_DIR"${cniConfDir}; fi
      for name in config.yaml kubeadm-flags.env; do
        if [ -e "$KUBELET_DIR/$name" ]; then backup_once "$KUBELET_DIR/$name" "$BACKUP_DIR"${kubeletDir}/"$name"; fi
      done

      if [ -n "$CONTROL_PLANE" ]; then kubeadm reset -f --skip-phases=remove-etcd-member; else kubeadm reset -f; fi
      # below the directory only: /var/lib/kubelet on its own filesystem (a data disk; the node lab's nodes) is
      # emptied like any other, a volume mounted inside it would lose its data
      mounted=$(awk -v dir="$KUBELET_DIR" 'index($2, dir "/") == 1 { print $2 }' /proc/self/mounts)
      [ -z "$mounted" ] || die "still mounted below $KUBELET_DIR after kubeadm reset: $mounted; unmount, then re-run"
      # a control-plane node's member left with the reset (kubeadm removes it, the rollout checked etcd can spare it);
      # its old data would make the member that joins next someone it no longer is
      cleaned=("$KUBELET_DIR" "$CNI_CONF_DIR")
      if [ -n "$CONTROL_PLANE" ]; then cleaned+=("$ETCD_DATA_DIR"); fi
      for dir in "\${cleaned[@]}"; do
        if [ -d "$dir" ]; then
          find "$dir" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
          note "emptied $dir"
        fi
      done

      # a control-plane node's join takes the uploaded certificates (the key, like the token, never printed)
      key_args=()
      if [ -n "$CERTIFICATE_KEY" ]; then key_args=(--certificate-key "$CERTIFICATE_KEY"); fi
      kubeadm join "$ENDPOINT" --token "$TOKEN" --discovery-token-ca-cert-hash "$CA_CERT_HASH" "\${key_args[@]}"${extraArgs.length ? sh` ${extraArgs}` : sh``}
      mkdir -p -- "$(dirname -- "$MARKER")"
      printf '%s\n' "$REJOIN_ID" > "$MARKER"
      note "node joined $ENDPOINT again"
    `,
  ]);
  return new Sensitive(script);
}

/** Prints "rejoined" when the node has joined again for `rejoinId` (the marker and kubelet.conf), "not rejoined" otherwise. */
export function rejoinedProbe(input: { rejoinId: string } & SandboxRoot): string {
  const rejoinId = matching(input.rejoinId, /^[A-Za-z0-9._-]{1,128}$/, "rejoinId", "a short id of letters, digits, . _ -");
  return buildScript({ name: "kubeadm-rejoined", root: input.root }, [sh`
    if [ -f ${hostPath(REJOIN_MARKER)} ] && [ "$(cat -- ${hostPath(REJOIN_MARKER)})" = ${rejoinId} ] && [ -f ${hostPath("/etc/kubernetes/kubelet.conf")} ]; then
      echo rejoined
    else
      echo "not rejoined"
    fi
  `]);
}
