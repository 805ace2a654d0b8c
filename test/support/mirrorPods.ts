import { V1Pod } from "@kubernetes/client-node";

/** A static pod's mirror, as the kubelet reports it, for `component` on cp-1 running with `flags`. */
export function mirrorPod(component: string, flags: string[]): V1Pod {
  return {
    metadata: { namespace: "kube-system", name: `${component}-cp-1`, labels: { component }, annotations: { "kubernetes.io/config.mirror": "x" } },
    spec: { nodeName: "cp-1", containers: [{ name: component, command: [component, ...flags] }] },
  };
}
