import { UserError } from "../config/errors";
import { KUBEADM_FLAGS_ENV, moveKubeletNodeIp } from "../nodeMove/kubeletNodeIp";
import { moveNodeAddressInYaml } from "./nodeAddressFileEdit";

/**
 * Pure: a control-plane node's own files after its address moves (issue 16, control-plane step 4), from what the
 * node holds now, and which component must restart to read each. The node's files are its own, so every mention
 * of its old address in them moves (lib/controlPlane/nodeAddressFileEdit); the kubelet's --node-ip moves in
 * kubeadm-flags.env (lib/nodeMove/kubeletNodeIp).
 *
 * The kubelet restarts etcd and the apiserver itself when their manifests change. A kubeconfig is read once at
 * start: the controller-manager, the scheduler and the kubelet must be restarted to dial the new `server:`;
 * admin.conf and super-admin.conf are the operator's and need nothing. Files that already name the new address
 * (a re-run) give no edit.
 */

export const MANIFESTS_DIR = "/etc/kubernetes/manifests";
export const ETCD_MANIFEST = `${MANIFESTS_DIR}/etcd.yaml`;
export const APISERVER_MANIFEST = `${MANIFESTS_DIR}/kube-apiserver.yaml`;
const KUBECONFIG_RESTARTS = {
  "/etc/kubernetes/admin.conf": undefined,
  "/etc/kubernetes/super-admin.conf": undefined,
  "/etc/kubernetes/controller-manager.conf": "kube-controller-manager",
  "/etc/kubernetes/scheduler.conf": "kube-scheduler",
  "/etc/kubernetes/kubelet.conf": "kubelet",
} as const;
export type RestartedByUs = "kube-controller-manager" | "kube-scheduler" | "kubelet";

/** Every file the edit reads, in the order the read step lists them. */
export const CONTROL_PLANE_NODE_FILES: readonly string[] = [ETCD_MANIFEST, APISERVER_MANIFEST, ...Object.keys(KUBECONFIG_RESTARTS), KUBEADM_FLAGS_ENV];

export interface FileEdit {
  path: string;
  current: string;
  next: string;
  /** What moved, for the log: dotted YAML paths, or the flag. */
  changed: string[];
}

export interface ControlPlaneAddressEdits {
  /** etcd.yaml; absent with external etcd, or once it names the new address. */
  etcd?: FileEdit;
  apiserver?: FileEdit;
  /** The kubeconfigs and kubeadm-flags.env that name the old address. */
  files: FileEdit[];
  /** The components to restart once `files` are written, so they read them. */
  restart: RestartedByUs[];
}

function yamlEdit(path: string, current: string, from: string, to: string): FileEdit | undefined {
  const { text, changed } = moveNodeAddressInYaml(current, path, from, to);
  return changed.length > 0 ? { path, current, next: text, changed } : undefined;
}

/**
 * The edits for `node` moving `from` → `to`, from `files` (path → text, undefined where the file does not exist:
 * readNodeFiles). The apiserver manifest and kubeadm-flags.env must exist: a control-plane node of a kubeadm
 * cluster has both.
 */
export function controlPlaneAddressEdits(node: string, files: ReadonlyMap<string, string | undefined>, from: string, to: string): ControlPlaneAddressEdits {
  const text = (path: string) => files.get(path);
  for (const required of [APISERVER_MANIFEST, KUBEADM_FLAGS_ENV]) {
    if (text(required) === undefined) throw new UserError(`node ${node}: ${required} does not exist; nodeAddresses lists it as a control-plane node of a kubeadm cluster, which has one. Check the node's role`);
  }
  const etcdText = text(ETCD_MANIFEST);
  const files_: FileEdit[] = [];
  const restart = new Set<RestartedByUs>();
  for (const [path, restarts] of Object.entries(KUBECONFIG_RESTARTS)) {
    const current = text(path);
    const edit = current === undefined ? undefined : yamlEdit(path, current, from, to);
    if (!edit) continue;
    files_.push(edit);
    if (restarts) restart.add(restarts);
  }
  const flags = moveKubeletNodeIp(text(KUBEADM_FLAGS_ENV)!, from, to);
  if (flags.changed) {
    files_.push({ path: KUBEADM_FLAGS_ENV, current: text(KUBEADM_FLAGS_ENV)!, next: flags.text, changed: [`--node-ip=${to}`] });
    restart.add("kubelet");
  }
  return {
    ...(etcdText !== undefined ? { etcd: yamlEdit(ETCD_MANIFEST, etcdText, from, to) } : {}),
    apiserver: yamlEdit(APISERVER_MANIFEST, text(APISERVER_MANIFEST)!, from, to),
    files: files_,
    // the kubelet last: its restart must not race the other two restarts it supervises
    restart: (["kube-controller-manager", "kube-scheduler", "kubelet"] as const).filter((c) => restart.has(c)),
  };
}
