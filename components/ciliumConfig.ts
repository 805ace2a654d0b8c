/**
 * CiliumConfig: Cilium's pod range, changed as Cilium documents it (see lib/podNetwork/ciliumPool for the reasoning).
 *
 * - the live kube-system/cilium-config, read while the program runs (components/liveConfigMaps.ts).
 * - `<name>-config`: a ConfigMapPatch of `cluster-pool-ipv4-cidr` only, in cluster-pool mode: the new range first,
 *   the old range kept after it ("10.48.0.0/16 10.244.0.0/16"), because Cilium forbids changing existing pool
 *   elements or the mask size and allocates from the first element with room. In `ipam: kubernetes` mode the
 *   patch is empty (Cilium follows Node.spec.podCIDR, which the node rollout sets). Other modes are refused.
 *   Server-side apply, patchForce, retainOnDelete.
 * - `<name>-restart-operator`: a DeploymentPatch bumping cilium-operator's restartedAt annotation to the run id,
 *   after the ConfigMap patch: the operator reads the pool list at start.
 * CiliumNode handling (node rollout, issue 7): for each drained node, delete its CiliumNode and restart the Cilium
 * agent pod on it; the agent recreates the CiliumNode and the operator allocates its podCIDR from the new range.
 * Existing CiliumNodes keep their old-range podCIDRs until then, which stay valid because the old element stays.
 * The read → patch → restart shape is shared with KubeProxyConfig and FlannelConfig (configMapEditThenRestart.ts).
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { CILIUM_OPERATOR, planCiliumPool } from "../lib/podNetwork/ciliumPool";
import { checkRunIdOf, configMapEditThenRestart } from "./configMapEditThenRestart";
import { checkCidr } from "./controlPlane";

export interface CiliumConfigArgs {
  /** The new pod range. */
  podCidr: string;
  /** The plan's node mask size; must equal cluster-pool-ipv4-mask-size (Cilium cannot change it). */
  nodeMaskSize: number;
  /** The migration run id (config `snapshot.trigger`); the restart annotation's value. */
  runId: string;
  /** Namespace of Cilium (default CILIUM_OPERATOR's, "kube-system"). */
  namespace?: string;
  /** The ConfigMap (default "cilium-config"). */
  configMapName?: string;
  /** The operator Deployment (default CILIUM_OPERATOR's, "cilium-operator"). */
  operatorDeploymentName?: string;
}

export class CiliumConfig extends pulumi.ComponentResource {
  readonly configPatch: k8s.core.v1.ConfigMapPatch;
  readonly restartOperator: k8s.apps.v1.DeploymentPatch;
  /** The keys the patch sets (empty in ipam: kubernetes mode). */
  readonly data: pulumi.Output<Record<string, string>>;

  constructor(name: string, args: CiliumConfigArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:ciliumConfig:CiliumConfig", name, {}, opts);
    const podCidr = checkCidr(args.podCidr, "podCidr", this);
    if (!Number.isInteger(args.nodeMaskSize) || args.nodeMaskSize < 1 || args.nodeMaskSize > 32) {
      throw new pulumi.ResourceError(`nodeMaskSize ${args.nodeMaskSize} is not an IPv4 mask size; pass the plan's podCidr.nodeMaskSize`, this);
    }
    checkRunIdOf(args.runId, this);
    const namespace = args.namespace ?? CILIUM_OPERATOR.namespace;
    const step = configMapEditThenRestart(this, name, {
      namespace,
      configMap: args.configMapName ?? "cilium-config",
      edit: (live) => {
        const data = live.data.apply((d) => planCiliumPool(d ?? {}, { newPodCidr: podCidr, nodeMaskSize: args.nodeMaskSize }).data);
        return { edited: data, data };
      },
      restart: { kind: CILIUM_OPERATOR.kind, name: args.operatorDeploymentName ?? CILIUM_OPERATOR.name, suffix: "restart-operator" },
      runId: args.runId,
    }, opts);
    this.data = step.edited;
    this.configPatch = step.configPatch;
    this.restartOperator = step.restart as k8s.apps.v1.DeploymentPatch;
    this.registerOutputs({ data: this.data });
  }
}
