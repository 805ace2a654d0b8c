/**
 * The Calico part of the graph, on the path the plan chose (plan.calicoPools): the IPPool objects directly
 * (CalicoIPPool, CalicoOldPoolRemoval) or through the Tigera operator's Installation (CalicoOperatorPools,
 * CalicoOperatorPoolRemoval). index.ts declares both halves through PlanOrder; the Calico e2e program declares
 * them alone. A dual-stack run moves each family's pool (one pool per family, Calico's dual-stack layout).
 */
import * as pulumi from "@pulumi/pulumi";
import { CalicoIPPool, CalicoOldPoolRemoval } from "./calicoIPPool";
import { CalicoOperatorPoolRemoval, CalicoOperatorPools } from "./calicoOperatorPools";
import { cidrsOverlap } from "../lib/net/cidr";
import { installationStages, listedOldPool, newPoolNameIn } from "../lib/podNetwork/calicoInstallation";
import { Inventory } from "../lib/plan/inventory";
import { Plan } from "../lib/plan/planModel";
import { calicoPoolRangeMoves, cniSummary } from "../lib/plan/calicoPools";

type Make = (opts: pulumi.ComponentResourceOptions) => pulumi.Resource;

/** Each half: how to make its resource, or why there is nothing left to do (a re-run after it was done). */
export interface CalicoPoolMove {
  /** The CNI-phase half: the new pool, then the old one closed (steps new-pool and disable-old-pool). */
  pools: Make | string;
  /** The old pool's removal, after kube-proxy (step remove-old-pool). */
  removal: Make | string;
  /** A dual-stack run's second family on the IPPool-object path, its own pool moved the same way (the operator path moves both in `pools` and `removal`). */
  otherFamily?: CalicoPoolMove;
}

export interface CalicoPoolMoveArgs {
  plan: Plan;
  inventory: Inventory;
  kubeconfig: pulumi.Input<string>;
  /** The cluster's kubernetes provider, for the IPPool and Installation patches. */
  provider: pulumi.ProviderResource;
  /** Seconds the operator gets for each step (operator path). */
  operatorTimeoutSeconds?: number;
}

export function calicoPoolMove(args: CalicoPoolMoveArgs): CalicoPoolMove {
  const { plan, inventory, kubeconfig, provider } = args;
  const podCidr = plan.podCidr;
  const livePool = inventory.cni.calicoPools.find((p) => cidrsOverlap(p.cidr, podCidr.from));
  const moved = `no Calico IPPool in ${podCidr.from} (moved already)`;
  // Preview shows reviewers which way the pools move, and why.
  if (plan.calicoPools) void pulumi.log.info(`Calico pools: ${cniSummary(plan)}; ${plan.calicoPools.reason}`);
  if (plan.calicoPools?.management === "operator") {
    const installation = plan.calicoPools.installation!;
    const listed = inventory.cni.calicoOperator!.ipPools!;
    // Per family: the pool to move while the Installation lists it, else (a re-run after the unlist step, which
    // takes both families in one patch) the pool to delete while it is there.
    const pairs = calicoPoolRangeMoves(podCidr, plan.secondFamily).flatMap((m, i) => {
      const live = inventory.cni.calicoPools.find((p) => cidrsOverlap(p.cidr, m.from));
      const listedOld = listedOldPool(listed, m.from, m.to);
      if (!live && !listedOld) return [];
      const oldName = live?.name ?? listedOld?.name ?? (i === 0 ? plan.calicoPools!.oldPool : undefined) ?? "";
      const suffix = i === 0 ? "" : `-${plan.secondFamily!.family.toLowerCase()}`;
      return [{ move: m, listed: listedOld !== undefined, oldPool: { name: oldName, cidr: live?.cidr ?? listedOld?.cidr ?? m.from, suffix }, newPool: { name: newPoolNameIn(inventory.cni.calicoOperator!, m.to), cidr: m.to } }];
    });
    const toMove = pairs.filter((p) => p.listed);
    const timeoutSeconds = args.operatorTimeoutSeconds;
    const stages = toMove.length > 0 ? installationStages(listed, toMove.map((p) => p.move)) : { add: listed, close: listed, remove: listed };
    return {
      pools: toMove.length > 0
        ? (o) => new CalicoOperatorPools("calico-pool", { kubeconfig, installation, stages, pairs: toMove, timeoutSeconds }, { ...o, provider })
        : `Installation ${installation} no longer lists a pool in ${podCidr.from}`,
      removal: pairs.length > 0
        ? (o) => new CalicoOperatorPoolRemoval("calico-old-pool", { kubeconfig, installation, remaining: stages.remove, oldPools: pairs.map((p) => p.oldPool), timeoutSeconds }, { ...o, provider })
        : moved,
    };
  }
  const second = plan.secondFamily;
  const otherFamily = second?.role === "move" && second.podCidr.from
    ? manifestPoolMove(inventory, { from: second.podCidr.from, to: second.podCidr.to }, `-${second.family.toLowerCase()}`, kubeconfig, provider)
    : undefined;
  return { ...manifestPoolMove(inventory, podCidr, "", kubeconfig, provider), ...(otherFamily ? { otherFamily } : {}) };
}

/** One family's pools as IPPool objects; `suffix` keeps each family's resource names apart (the first has none). */
function manifestPoolMove(inventory: Inventory, podCidr: { from: string; to: string }, suffix: string, kubeconfig: pulumi.Input<string>, provider: pulumi.ProviderResource): CalicoPoolMove {
  const livePool = inventory.cni.calicoPools.find((p) => cidrsOverlap(p.cidr, podCidr.from));
  const moved = `no Calico IPPool in ${podCidr.from} (moved already)`;
  if (!livePool) return { pools: moved, removal: moved };
  return {
    pools: (o) => new CalicoIPPool(`calico-pool${suffix}`, { oldPool: livePool, newCidr: podCidr.to }, { ...o, provider }),
    removal: (o) => new CalicoOldPoolRemoval(`calico-old-pool${suffix}`, { kubeconfig, oldPool: livePool }, o),
  };
}
