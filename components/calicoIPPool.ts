/**
 * CalicoIPPool: the Calico side of the pod-range move (Calico's documented pool migration).
 *
 * - `<name>-new`: a new crd.projectcalico.org/v1 IPPool in the new range with the old pool's ipipMode, vxlanMode,
 *   natOutgoing, blockSize and nodeSelector (lib/podNetwork/calicoPool.newPoolManifest), as a CustomResource. It is kept when
 *   the stack is destroyed (retainOnDelete): pods use it.
 * - `<name>-disable-old`: a CustomResourcePatch setting only `spec.disabled: true` on the old pool (server-side
 *   apply, patchForce, retainOnDelete), after the new pool exists: from then on new pods (and re-registered
 *   nodes' new blocks) get new-range addresses, existing pods keep theirs.
 * The old pool is deleted later, by `CalicoPoolRemoval` (dynamic-providers/calicoPoolRemoval), which the lead wires
 * after kube-proxy: it deletes the pool only when no IPAM block or block affinity is left in its CIDR, else fails.
 * Wire CalicoIPPool in the CNI phase (before the node rollout), with `opts.provider` = the cluster provider.
 * Operator-managed installs also list pools in Installation.spec.calicoNetwork.ipPools; that object is not
 * changed here (the operator would re-create a pool from it): edit it by hand before the migration.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { IPPoolManifest, disabledPoolPatch, newPoolManifest } from "../lib/podNetwork/calicoPool";
import { CalicoPoolInfo } from "../lib/plan/inventory";
import { CalicoPoolRemoval } from "../dynamic-providers/calicoPoolRemoval";
import { checkCidr } from "./controlPlane";
import { PATCH_FORCE_ANNOTATION } from "./systemObjectPatch";
import { withParentDependsOn } from "./parentDependsOn";

export interface CalicoIPPoolArgs {
  /** The pool that holds the old pod range (from inventory.cni.calicoPools). */
  oldPool: CalicoPoolInfo;
  /** The new pod range. */
  newCidr: string;
  /** Name of the new pool (default lib/podNetwork/calicoPool.defaultNewPoolName(newCidr), e.g. cidr-migration-10-48-0-0-16). */
  newPoolName?: string;
}

export class CalicoIPPool extends pulumi.ComponentResource {
  readonly newPool: k8s.apiextensions.CustomResource;
  readonly disableOldPool: k8s.apiextensions.CustomResourcePatch;
  /** What the new pool is created with. */
  readonly manifest: IPPoolManifest;

  constructor(name: string, args: CalicoIPPoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:calicoIPPool:CalicoIPPool", name, {}, opts);
    const newCidr = checkCidr(args.newCidr, "newCidr", this);
    if (!args.oldPool?.name || !args.oldPool.cidr) {
      throw new pulumi.ResourceError("oldPool needs name and cidr; pass the inventory's Calico pool that holds the old pod range", this);
    }
    try {
      this.manifest = newPoolManifest(args.oldPool, { cidr: newCidr, name: args.newPoolName });
    } catch (error) {
      throw new pulumi.ResourceError((error as Error).message, this);
    }
    this.newPool = new k8s.apiextensions.CustomResource(`${name}-new`, {
      apiVersion: this.manifest.apiVersion,
      kind: this.manifest.kind,
      metadata: this.manifest.metadata,
      spec: this.manifest.spec,
    }, { parent: this, retainOnDelete: true, dependsOn: withParentDependsOn(opts) });
    const disable = disabledPoolPatch(args.oldPool.name);
    this.disableOldPool = new k8s.apiextensions.CustomResourcePatch(`${name}-disable-old`, {
      apiVersion: disable.apiVersion,
      kind: disable.kind,
      metadata: { name: disable.metadata.name, annotations: { [PATCH_FORCE_ANNOTATION]: "true" } },
      spec: disable.spec,
    }, { parent: this, retainOnDelete: true, dependsOn: [this.newPool] });
    this.registerOutputs({ newPoolName: this.manifest.metadata.name });
  }
}

export interface CalicoOldPoolRemovalArgs {
  /** Content of the admin kubeconfig (index.ts passes pulumi.secret(...)); stored as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** The old pool (name and cidr from inventory.cni.calicoPools). */
  oldPool: CalicoPoolInfo;
}

/** The fail-closed removal of the old pool, as a component so the graph reads like the runbook. */
export class CalicoOldPoolRemoval extends pulumi.ComponentResource {
  readonly removal: CalicoPoolRemoval;

  constructor(name: string, args: CalicoOldPoolRemovalArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:calicoIPPool:CalicoOldPoolRemoval", name, {}, opts);
    if (!args.oldPool?.name || !args.oldPool.cidr) {
      throw new pulumi.ResourceError("oldPool needs name and cidr; pass the inventory's Calico pool that holds the old pod range", this);
    }
    if (args.kubeconfig === undefined) throw new pulumi.ResourceError("kubeconfig is missing; pass the admin kubeconfig content as a secret", this);
    this.removal = new CalicoPoolRemoval(`${name}-check-and-delete`, {
      kubeconfig: args.kubeconfig,
      poolName: args.oldPool.name,
      poolCidr: checkCidr(args.oldPool.cidr, "oldPool.cidr", this),
    }, { parent: this, dependsOn: withParentDependsOn(opts) });
    this.registerOutputs({ result: this.removal.result });
  }
}
