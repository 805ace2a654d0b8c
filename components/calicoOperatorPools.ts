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
 * A dual-stack run moves one pool per family in the same steps: ipPools is one list, so each patch carries both.
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

/** An old pool to remove; `suffix` keeps a second family's resource names apart ("-ipv6"; the first has none). */
interface OldPoolRef extends PoolRef {
  suffix?: string;
}

/** One family's pools: the old one and its replacement. */
export interface OperatorPoolPair {
  oldPool: OldPoolRef;
  newPool: PoolRef;
}

export interface CalicoOperatorPoolsArgs {
  kubeconfig: pulumi.Input<string>;
  /** The Installation's name ("default"). */
  installation: string;
  /** The ipPools lists of the three steps, from lib/podNetwork/calicoInstallation.installationStages. */
  stages: InstallationStages;
  /** One per family the run moves, the first family first. */
  pairs: OperatorPoolPair[];
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
    const { kubeconfig, installation, pairs, timeoutSeconds } = args;
    const where = `Installation ${installation}`;
    const olds = pairs.map((p) => p.oldPool);
    const news = pairs.map((p) => p.newPool);
    const named = (pools: PoolRef[]) => pools.map((p) => `${p.name} (${p.cidr})`).join(" and ");
    // A degraded operator would not carry out the edits: stop before the first one.
    this.operatorHealthy = new CalicoOperatorReconciled(`${name}-operator-healthy`, {
      kubeconfig, timeoutSeconds, purpose: `its current pools (before any change)`, expect: olds.map((p) => ({ cidr: p.cidr })),
    }, { parent: this, dependsOn: withParentDependsOn(opts) });
    this.addNewPool = installationPatch(`${name}-add-new-pool`, installation, args.stages.add, { parent: this, dependsOn: [this.operatorHealthy] });
    this.newPoolReady = new CalicoOperatorReconciled(`${name}-new-pool-ready`, {
      kubeconfig, timeoutSeconds, purpose: `the new pool ${named(news)} listed in ${where}`, expect: [...olds, ...news].map((p) => ({ cidr: p.cidr })),
    }, { parent: this, dependsOn: [this.addNewPool] });
    this.closeOldPool = installationPatch(`${name}-close-old-pool`, installation, args.stages.close, { parent: this, dependsOn: [this.newPoolReady] });
    this.oldPoolClosed = new CalicoOperatorReconciled(`${name}-old-pool-closed`, {
      kubeconfig, timeoutSeconds, purpose: `nodeSelector "${CLOSED_NODE_SELECTOR}" on the old pool ${named(olds)} in ${where}`,
      expect: [...olds.map((p) => ({ cidr: p.cidr, nodeSelector: CLOSED_NODE_SELECTOR })), ...news.map((p) => ({ cidr: p.cidr }))],
    }, { parent: this, dependsOn: [this.closeOldPool] });
    this.registerOutputs({ newPoolName: news[0].name });
  }
}

export interface CalicoOperatorPoolRemovalArgs {
  kubeconfig: pulumi.Input<string>;
  installation: string;
  /** The ipPools list without the old pools (InstallationStages.remove). */
  remaining: InstallationPool[];
  /** One per family the run moves, the first family first. */
  oldPools: OldPoolRef[];
  timeoutSeconds?: number;
}

export class CalicoOperatorPoolRemoval extends pulumi.ComponentResource {
  readonly drained: CalicoPoolRemoval[];
  readonly unlist: k8s.apiextensions.CustomResourcePatch;
  readonly removal: CalicoPoolRemoval[];

  constructor(name: string, args: CalicoOperatorPoolRemovalArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:calicoIPPool:CalicoOperatorPoolRemoval", name, {}, opts);
    const pool = (p: OldPoolRef) => ({ kubeconfig: args.kubeconfig, poolName: p.name, poolCidr: p.cidr, installation: args.installation, timeoutSeconds: args.timeoutSeconds });
    this.drained = args.oldPools.map((p) => new CalicoPoolRemoval(`${name}-drained${p.suffix ?? ""}`, { ...pool(p), step: "check" }, { parent: this, dependsOn: withParentDependsOn(opts) }));
    this.unlist = installationPatch(`${name}-remove-from-installation`, args.installation, args.remaining, { parent: this, dependsOn: this.drained });
    this.removal = args.oldPools.map((p) => new CalicoPoolRemoval(`${name}-deleted${p.suffix ?? ""}`, { ...pool(p), step: "delete" }, { parent: this, dependsOn: [this.unlist] }));
    this.registerOutputs({ result: this.removal[0].result });
  }
}
