import { inRangeList, isRangeList } from "../net/rangeList";
import { serviceRefKey } from "./serviceRef";
import { KubeObject } from "./kubeRest";
import { MoveResult, MoverOptions, plannedIps, ServiceMoveRequest, ServiceMoveSpec } from "./moveTypes";
import { clusterIpsOf, differingUserFields, holdsClusterIps, holdsNoClusterIp, spec } from "./recreateBody";
import { ClusterView, Context, Decision, journalWhere, uidOf } from "./moverContext";
import { originalBody } from "./prepare";
import { isHoppedOut } from "./inPlace";

/** Phase 0, read-only: the cluster as the run sees it, and for each requested move whether to skip, move or resume it from the journal. */

export async function readCluster(ctx: Context): Promise<ClusterView> {
  const services = await ctx.rest.list("/api/v1/services");
  const view: ClusterView = { services: new Map(), ipHolders: new Map(), journals: ctx.journal.entries };
  for (const service of services) {
    const key = serviceRefKey({ namespace: service.metadata?.namespace ?? "", name: service.metadata?.name ?? "" });
    view.services.set(key, service);
    for (const ip of clusterIpsOf(service)) if (ip !== "None") view.ipHolders.set(ip, key);
  }
  return view;
}

export function decide(ctx: Context, view: ClusterView, request: ServiceMoveRequest, problems: string[]): Decision | undefined {
  const key = serviceRefKey(request);
  const live = view.services.get(key);
  const journal = view.journals.get(key);
  const where = `Service ${key}`;
  const typeOf = (object: KubeObject | undefined) => spec(object ?? {}).type;
  const refuseLoadBalancer = (object: KubeObject | undefined): boolean => {
    if ((typeOf(object) ?? request.type) !== "LoadBalancer" || ctx.options.allowLoadBalancerRecreate) return false;
    problems.push(`${where} is a LoadBalancer: re-creating it can give its cloud load balancer a new external address; set cidr-migration:services.allowLoadBalancerRecreate to true to consent, nothing was changed`);
    return true;
  };
  const vacateKey = request.vacate ? serviceRefKey(request.vacate) : undefined;
  const targets = plannedIps(request);
  for (const toIP of targets) {
    const holder = view.ipHolders.get(toIP);
    if (holder !== undefined && holder !== key && holder !== vacateKey) {
      problems.push(`${where}: its planned IP ${toIP} is held by Service ${holder}; run preview again so the plan picks a free IP, nothing was changed`);
      return undefined;
    }
  }
  if (vacateKey) {
    const vacate = view.services.get(vacateKey);
    if (vacate && !clusterIpsOf(vacate).includes(request.toIP)) {
      problems.push(`${where}: Service ${vacateKey} was to hold ${request.toIP} until the swap but holds ${clusterIpsOf(vacate).join(", ")}; check the DNS stand-in, nothing was changed`);
      return undefined;
    }
  }

  if (journal) {
    const entry = journal;
    if (plannedIps(entry).join() !== targets.join()) {
      problems.push(`${where}: ${journalWhere(ctx, request)} is for a move to ${plannedIps(entry).join(", ")}, the plan now says ${targets.join(", ")}; finish the old move first (plan it to ${plannedIps(entry).join(", ")}), nothing was changed`);
      return undefined;
    }
    if (refuseLoadBalancer(entry.service)) return undefined;
    if (!live) return { kind: "resume", request, entry };
    if (uidOf(live) === uidOf(entry.service)) {
      // deleted by an interrupted re-create, between an in-place move's two writes or after them: finished from the journal
      if (live.metadata?.deletionTimestamp || isHoppedOut(live, entry.toIP) || holdsClusterIps(live, targets)) return { kind: "resume", request, entry, live };
      return { kind: "move", request, live, previous: entry };
    }
    if (clusterIpsOf(live).includes(entry.toIP)) return { kind: "resume", request, entry, live };
    // put back at its old IP by a run whose create was rejected, cut off before it cleaned up: move it again
    if (clusterIpsOf(live).includes(entry.fromIP) && differingUserFields(originalBody(entry.service), live).length === 0) {
      return { kind: "move", request, live, previous: entry };
    }
    problems.push(`${where} was re-created by someone else at ${clusterIpsOf(live).join(", ")} during an interrupted move; compare it with ${journalWhere(ctx, request)} (the original), then delete that Secret`);
    return undefined;
  }

  if (!live) {
    problems.push(`${where} does not exist (the plan expected it at ${request.fromIP}); run preview again, nothing was changed`);
    return undefined;
  }
  const ips = clusterIpsOf(live);
  const skip = (outcome: MoveResult["outcome"]): Decision => ({
    kind: "skip", request, result: { namespace: request.namespace, name: request.name, outcome, ip: ips[0] ?? "None" },
  });
  if (holdsNoClusterIp(live)) return skip("no-cluster-ip");
  if (holdsClusterIps(live, targets)) return skip("already-moved");
  if (!ips.includes(request.fromIP)) {
    if (ctx.options.serviceCidr && ips.some((ip) => inRangeList(ctx.options.serviceCidr!, ip))) return skip("in-new-range");
    problems.push(`${where} holds ${ips.join(", ")}, the plan expected ${request.fromIP}; the plan is out of date, run preview again, nothing was changed`);
    return undefined;
  }
  if (live.metadata?.deletionTimestamp) {
    problems.push(`${where} is being deleted by someone else; wait until it is gone (or re-created) and run again, nothing was changed`);
    return undefined;
  }
  if (refuseLoadBalancer(live)) return undefined;
  return { kind: "move", request, live };
}

export function validateSpec(moveSpec: ServiceMoveSpec, options: MoverOptions): string[] {
  const problems: string[] = [];
  if (options.serviceCidr !== undefined && !isRangeList(options.serviceCidr)) problems.push(`serviceCidr ${JSON.stringify(options.serviceCidr)} is not a CIDR or a dual-stack pair; pass the new Service range, e.g. 10.100.0.0/16`);
  const keys = new Set<string>();
  const targets = new Map<string, string>();
  for (const move of moveSpec.moves) {
    const key = serviceRefKey(move);
    if (keys.has(key)) problems.push(`Service ${key} is listed twice in the moves; list each Service once`);
    keys.add(key);
    for (const toIP of plannedIps(move)) {
      const other = targets.get(toIP);
      if (other) problems.push(`Services ${other} and ${key} are both planned at ${toIP}; each needs its own IP`);
      targets.set(toIP, key);
    }
  }
  return problems;
}
