import { V1Pod } from "@kubernetes/client-node";

/**
 * The kubeadm control plane as the API sees it: the mirror pods the kubelet of each control-plane node publishes for
 * its static pods (/etc/kubernetes/manifests) in kube-system, and the flags they run with. Reading flags from the
 * mirror pods compares every control-plane node without SSH.
 */

export type ControlPlaneComponent = "kube-apiserver" | "kube-controller-manager";
export const CONTROL_PLANE_COMPONENTS: readonly ControlPlaneComponent[] = ["kube-apiserver", "kube-controller-manager"];

const MIRROR_ANNOTATION = "kubernetes.io/config.mirror";

export interface ControlPlanePod {
  component: ControlPlaneComponent;
  node: string;
  podName: string;
  /** Flag name without dashes → value ("true" for a bare boolean flag). */
  flags: Map<string, string>;
}

export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[MIRROR_ANNOTATION] !== undefined;
}

/**
 * kubeadm labels its static pods component=<name>; older manifests are known by the pod name <name>-<node>. Mirror
 * or not: the etcd rewrite's preflight (etcdRewriteControlPlane.ts) also looks for components run some other way.
 */
export function componentOf(pod: V1Pod): ControlPlaneComponent | undefined {
  const label = pod.metadata?.labels?.component;
  for (const c of CONTROL_PLANE_COMPONENTS) {
    if (label === c) return c;
  }
  const node = pod.spec?.nodeName;
  for (const c of CONTROL_PLANE_COMPONENTS) {
    if (node && pod.metadata?.name === `${c}-${node}`) return c;
  }
  return undefined;
}

/** `--name=value` and `--name value` tokens of a container's command followed by its args. */
export function parseFlags(tokens: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i];
    if (!token.startsWith("--")) continue;
    const eq = token.indexOf("=");
    if (eq > 2) {
      flags.set(token.slice(2, eq), token.slice(eq + 1));
    } else if (i + 1 < tokens.length && !tokens[i + 1].startsWith("-")) {
      flags.set(token.slice(2), tokens[++i]);
    } else {
      flags.set(token.slice(2), "true");
    }
  }
  return flags;
}

/** The kube-apiserver and kube-controller-manager mirror pods in kube-system, sorted by component and node. */
export function controlPlanePods(pods: readonly V1Pod[]): ControlPlanePod[] {
  const found: ControlPlanePod[] = [];
  for (const pod of pods) {
    if (pod.metadata?.namespace !== "kube-system" || !isMirrorPod(pod)) continue;
    const component = componentOf(pod);
    if (!component) continue;
    const container = pod.spec?.containers?.find((c) => c.name === component) ?? pod.spec?.containers?.[0];
    found.push({
      component,
      node: pod.spec?.nodeName ?? "",
      podName: pod.metadata.name ?? "",
      flags: parseFlags([...(container?.command ?? []), ...(container?.args ?? [])]),
    });
  }
  return found.sort((a, b) => (a.component + a.node < b.component + b.node ? -1 : a.component + a.node > b.component + b.node ? 1 : 0));
}

/** True when a mirror pod is one of the control-plane components the migration rewrites itself. */
export function isMigratedControlPlanePod(pod: V1Pod): boolean {
  return pod.metadata?.namespace === "kube-system" && isMirrorPod(pod) && componentOf(pod) !== undefined;
}
