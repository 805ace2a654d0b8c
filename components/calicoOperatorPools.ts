/**
 * The Calico pools moved through the Tigera operator (lib/podNetwork/calicoInstallation.ts has the procedure): on
 * an operator-managed cluster the IPPool objects are the operator's, so each step edits Installation default's
 * ipPools, a server-side-apply patch that touches only spec.calicoNetwork.ipPools (patchForce, retainOnDelete:
 * removing the stack never puts the old pools back), and then waits for the operator to carry it out
 * (CalicoOperatorReconciled: the IPPools as listed, TigeraStatus Available and not Degraded).
 *
 * - CalicoOperatorPools, in the CNI phase: the operator's health first, then `add` (the new pool beside the old one)
 *   and `close` (the old one's nodeSelector "!all()": no node gets a new block from it).
 * - CalicoOperatorPoolRemoval, after kube-proxy: the old pool proven drained (no IPAM block or affinity left), then
 *   `remove` (no longer listed), then the pool deleted, by the operator or, failing that, here.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { CalicoOperatorReconciled } from "../dynamic-providers/calicoOperatorReconciled";
import { CalicoPoolRemoval } from "../dynamic-providers/calicoPoolRemoval";
import { CLOSED_NODE_SELECTOR, INSTALLATION_API_VERSION, INSTALLATION_KIND, InstallationStages } from "../lib/podNetwork/calicoInstallation";
import { InstallationPool } from "../lib/plan/inventory";
import { PATCH_FORCE_ANNOTATION } from "./systemObjectPatch";
import { withParentDependsOn } from "./parentDependsOn";

interface PoolRef {
  name: string;
  cidr: string;
}

export interface CalicoOperatorPoolsArgs {
  kubeconfig: pulumi.Input<string>;
  /** The Installation's name ("default"). */
  installation: string;
  /** The ipPools lists of the three steps, from lib/podNetwork/calicoInstallation.installationStages. */
  stages: InstallationStages;
  oldPool: PoolRef;
  newPool: PoolRef;
  /** Seconds the operator gets for each step (default: the provider's). */
  timeoutSeconds?: number;
}

/** The Installation patch that sets spec.calicoNetwork.ipPools to `pools`, and nothing else. */
function installationPatch(name: string, installation: string, pools: InstallationPool[], opts: pulumi.CustomResourceOptions): k8s.apiextensions.CustomResourcePatch {
  return new k8s.apiextensions.CustomResourcePatch(name, {
    apiVersion: INSTALLATION_API_VERSION,
    kind: INSTALLATION_KIND,
    metadata: { name: installation, annotations: { [PATCH_FORCE_ANNOTATION]: "true" } },
    spec: { calicoNetwork: { ipPools: pools } },
  }, { ...opts, retainOnDelete: true });
}

export class CalicoOperatorPools extends pulumi.ComponentResource {
  readonly operatorHealthy: CalicoOperatorReconciled;
  readonly addNewPool: k8s.apiextensions.CustomResourcePatch;
  readonly newPoolReady: CalicoOperatorReconciled;
  readonly closeOldPool: k8s.apiextensions.CustomResourcePatch;
  readonly oldPoolClosed: CalicoOperatorReconciled;

  constructor(name: string, args: CalicoOperatorPoolsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:calicoIPPool:CalicoOperatorPools", name, {}, opts);
    const { kubeconfig, installation, oldPool, newPool, timeoutSeconds } = args;
    const where = `Installation ${installation}`;
    // A degraded operator would not carry out the edits: stop before the first one.
    this.operatorHealthy = new CalicoOperatorReconciled(`${name}-operator-healthy`, {
      kubeconfig, timeoutSeconds, purpose: `its current pools (before any change)`, expect: [{ cidr: oldPool.cidr }],
    }, { parent: this, dependsOn: withParentDependsOn(opts) });
    this.addNewPool = installationPatch(`${name}-add-new-pool`, installation, args.stages.add, { parent: this, dependsOn: [this.operatorHealthy] });
    this.newPoolReady = new CalicoOperatorReconciled(`${name}-new-pool-ready`, {
      kubeconfig, timeoutSeconds, purpose: `the new pool ${newPool.name} (${newPool.cidr}) listed in ${where}`, expect: [{ cidr: oldPool.cidr }, { cidr: newPool.cidr }],
    }, { parent: this, dependsOn: [this.addNewPool] });
    this.closeOldPool = installationPatch(`${name}-close-old-pool`, installation, args.stages.close, { parent: this, dependsOn: [this.newPoolReady] });
    this.oldPoolClosed = new CalicoOperatorReconciled(`${name}-old-pool-closed`, {
      kubeconfig, timeoutSeconds, purpose: `nodeSelector "${CLOSED_NODE_SELECTOR}" on the old pool ${oldPool.name} (${oldPool.cidr}) in ${where}`,
      expect: [{ cidr: oldPool.cidr, nodeSelector: CLOSED_NODE_SELECTOR }, { cidr: newPool.cidr }],
    }, { parent: this, dependsOn: [this.closeOldPool] });
    this.registerOutputs({ newPoolName: newPool.name });
  }
}

export interface CalicoOperatorPoolRemovalArgs {
  kubeconfig: pulumi.Input<string>;
  installation: string;
  /** The ipPools list without the old pool (InstallationStages.remove). */
  remaining: InstallationPool[];
  oldPool: PoolRef;
  timeoutSeconds?: number;
}

export class CalicoOperatorPoolRemoval extends pulumi.ComponentResource {
  readonly drained: CalicoPoolRemoval;
  readonly unlist: k8s.apiextensions.CustomResourcePatch;
  readonly removal: CalicoPoolRemoval;

  constructor(name: string, args: CalicoOperatorPoolRemovalArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:calicoIPPool:CalicoOperatorPoolRemoval", name, {}, opts);
    const pool = { kubeconfig: args.kubeconfig, poolName: args.oldPool.name, poolCidr: args.oldPool.cidr, installation: args.installation, timeoutSeconds: args.timeoutSeconds };
    this.drained = new CalicoPoolRemoval(`${name}-drained`, { ...pool, step: "check" }, { parent: this, dependsOn: withParentDependsOn(opts) });
    this.unlist = installationPatch(`${name}-remove-from-installation`, args.installation, args.remaining, { parent: this, dependsOn: [this.drained] });
    this.removal = new CalicoPoolRemoval(`${name}-deleted`, { ...pool, step: "delete" }, { parent: this, dependsOn: [this.unlist] });
    this.registerOutputs({ result: this.removal.result });
  }
}
