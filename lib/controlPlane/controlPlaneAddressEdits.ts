import { UserError } from "../config/errors";
import { KUBEADM_FLAGS_ENV, moveKubeletNodeIp } from "../nodeMove/kubeletNodeIp";
import { moveNodeAddressInYaml } from "./nodeAddressFileEdit";
import { markNodeAddress, NODE_ADDRESS_ANNOTATION } from "./staticPodRestartEdit";

/**
 * Pure: a control-plane node's own files after its address moves (issue 16, control-plane step 4), from what the
 * node holds now, and which component must restart to read each. The node's files are its own, so every mention
 * of its old address in them moves (lib/controlPlane/nodeAddressFileEdit); the kubelet's --node-ip moves in
 * kubeadm-flags.env (lib/nodeMove/kubeletNodeIp).
 *
 * Two groups, written at two points of the node's change:
 * - `kubelet`: kubelet.conf and kubeadm-flags.env, then the kubelet restarted. First, so that the Node reports the
 *   new address before any static pod restarts: a host-network pod takes the Node's address when it starts and
 *   keeps it (the kubelet never changes a pod's IP once set).
 * - `components`: admin.conf, super-admin.conf, controller-manager.conf and scheduler.conf; then `restarts`: the
 *   controller-manager's and the scheduler's manifests marked with the new address (lib/controlPlane/
 *   staticPodRestartEdit), so that the kubelet restarts them as new pods, which read their kubeconfigs again and
 *   take the new address. Marked even when no kubeconfig of theirs names the node, for the latter.
 * The kubelet restarts etcd and the apiserver itself when their manifests change. Files that already name the new
 * address (a re-run) give no edit.
 */

export const MANIFESTS_DIR = "/etc/kubernetes/manifests";
export const ETCD_MANIFEST = `${MANIFESTS_DIR}/etcd.yaml`;
export const APISERVER_MANIFEST = `${MANIFESTS_DIR}/kube-apiserver.yaml`;
const KUBELET_KUBECONFIG = "/etc/kubernetes/kubelet.conf";
const COMPONENT_KUBECONFIGS = ["/etc/kubernetes/admin.conf", "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf"];
/** The static pods that name no address but must start again as new pods. */
export const RESTARTED_COMPONENTS = ["kube-controller-manager", "kube-scheduler"] as const;
export type RestartedComponent = (typeof RESTARTED_COMPONENTS)[number];
const manifestOf = (component: RestartedComponent) => `${MANIFESTS_DIR}/${component}.yaml`;

/** Every file the edit reads, in the order the read step lists them. */
export const CONTROL_PLANE_NODE_FILES: readonly string[] = [ETCD_MANIFEST, APISERVER_MANIFEST, ...RESTARTED_COMPONENTS.map(manifestOf), ...COMPONENT_KUBECONFIGS, KUBELET_KUBECONFIG, KUBEADM_FLAGS_ENV];

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
  /** kubelet.conf and kubeadm-flags.env where they name the old address; the kubelet restarts after them. */
  kubelet: FileEdit[];
  /** The other kubeconfigs that name the old address; written before `restarts`. */
  components: FileEdit[];
  /** The controller-manager's and the scheduler's manifests marked with the new address (restarted by the kubelet). */
  restarts: Array<FileEdit & { component: RestartedComponent }>;
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
  const kubeconfigEdit = (path: string) => {
    const current = text(path);
    return current === undefined ? undefined : yamlEdit(path, current, from, to);
  };
  const flags = moveKubeletNodeIp(text(KUBEADM_FLAGS_ENV)!, from, to);
  const kubelet = [
    kubeconfigEdit(KUBELET_KUBECONFIG),
    flags.changed ? { path: KUBEADM_FLAGS_ENV, current: text(KUBEADM_FLAGS_ENV)!, next: flags.text, changed: [`--node-ip=${to}`] } : undefined,
  ].filter((e): e is FileEdit => e !== undefined);
  const etcdText = text(ETCD_MANIFEST);
  return {
    ...(etcdText !== undefined ? { etcd: yamlEdit(ETCD_MANIFEST, etcdText, from, to) } : {}),
    apiserver: yamlEdit(APISERVER_MANIFEST, text(APISERVER_MANIFEST)!, from, to),
    kubelet,
    components: COMPONENT_KUBECONFIGS.map(kubeconfigEdit).filter((e): e is FileEdit => e !== undefined),
    restarts: RESTARTED_COMPONENTS.flatMap((component) => {
      const path = manifestOf(component);
      const current = text(path);
      const next = current === undefined ? undefined : markNodeAddress(current, path, to);
      return next === undefined ? [] : [{ component, path, current: current!, next, changed: [`metadata.annotations.${NODE_ADDRESS_ANNOTATION}`] }];
    }),
  };
}
