import { cidrContains, familyOf, isIpAddress, kubernetesServiceIP, parseCanonicalDottedQuad, parseCidr } from "../net/cidr";
import { Plan, ServiceMove } from "./planModel";
import { serviceMovesFromPlan, standInName } from "../serviceMove/planMoves";
import { serviceRefKey } from "../serviceMove/serviceRef";
import { NODE_STEP_PREFIX, SERVICE_STEP_PREFIX, stepId } from "./stepIds";

/**
 * One check that a Plan agrees with itself, run on every plan built (lib/plan/plan.ts): its summary (kubernetesService,
 * dns, estimate), its tables (services, nodes) and its phases say the same thing, and so does the graph's reading of
 * the kubernetes and DNS moves (serviceMovesFromPlan, what index.ts declares). Pure; linear in the plan's size, and
 * a fraction of the planner's own time at 500,000 Services (no Map of every Service or step).
 * - no two objects get one address: every Service's final ClusterIP and every node's podCIDR is unique (only the
 *   DNS stand-in shares the final DNS IP with the DNS Service, until dns/final-swap);
 * - every Service and node step refers to a planned move, and every planned move has its step;
 * - the kubernetes and DNS summaries equal their table rows, and their steps exist exactly when they move;
 * - step ids are unique, every dependency exists, and nothing waits on itself;
 * - the estimates are the sums of the phases.
 */

/** A plan that contradicts itself: our bug, never the user's. The CLI reports it as an internal error (exit 70). */
export class PlanInconsistencyError extends Error {
  constructor(readonly inconsistencies: string[]) {
    const more = inconsistencies.length > 1 ? ` (and ${inconsistencies.length - 1} more)` : "";
    const message = `the plan contradicts itself: ${inconsistencies[0]}${more}; it was not used. This is a bug in cidr-migration: report it with the inventory (cidr-migration inventory --kubeconfig FILE) and the stack config`;
    super(message);
    this.message = message; // see UserError
    this.name = "PlanInconsistencyError";
  }
}

export function assertPlanConsistent(plan: Plan): void {
  const found = planInconsistencies(plan);
  if (found.length > 0) throw new PlanInconsistencyError(found);
}

/** Enough to find the cause; a broken plan of 500,000 Services need not list them all. */
const MAX_REPORTED = 20;

const isKubernetes = (s: { namespace: string; name: string }) => s.namespace === "default" && s.name === "kubernetes";

export function planInconsistencies(plan: Plan): string[] {
  const out: string[] = [];
  const add = (message: string) => {
    if (out.length < MAX_REPORTED) out.push(message);
  };
  const phase = (name: string) => plan.phases.find((p) => p.name === name)?.steps ?? [];

  // Services: one row per Service, in namespace/name order (the planner sorts), what each ends up holding, and the
  // services phase's steps in the same order, in one pass.
  const services = plan.services;
  const dnsKey = serviceRefKey(plan.dns);
  const dnsRow = services.find((s) => s.namespace === plan.dns.namespace && s.name === plan.dns.name);
  const dnsMoves = dnsRow?.action === "recreate";
  const standInKey = serviceRefKey({ namespace: plan.dns.namespace, name: standInName(plan.dns.name) });
  // etcd-rewrite: every Service, the DNS Service too, is a step of the rewrite; the DNS phase is empty
  const rewrite = plan.strategy === "etcd-rewrite";
  const moveAction = rewrite ? "rewrite-in-etcd" : "recreate";
  const allServiceSteps = phase("services");
  const kubernetesSteps = allServiceSteps.filter((st) => st.id === stepId.kubernetesService).length;
  const serviceSteps = allServiceSteps.filter((st) => st.id !== stepId.kubernetesService);
  // Final addresses: IPv4 ones as numbers, sorted and compared neighbour to neighbour (a Map of 500,000 strings
  // costs more than the plan); anything else in a Map. Owners are looked up only for a duplicate.
  const numeric: number[] = [];
  const duplicates = new Set<string>();
  const holder = new Map<string, number>();
  const range = parseCidr(plan.serviceCidr.to);
  // A dual-stack plan's addresses are each held to their own family's new range.
  const second = plan.secondFamily;
  const newRangeOf = (address: string) => (second && familyOf(address) === second.family ? second.serviceCidr.to : plan.serviceCidr.to);
  const [low, high] = range.family === "IPv4" ? [Number(range.network), Number(range.network + range.size)] : [0, -1];
  let previous = "";
  let expected = 0;
  let stepsAgree = true;
  for (let i = 0; i < services.length; i++) {
    const s = services[i];
    const key = serviceRefKey(s);
    if (i > 0 && previous >= key) add(previous === key ? `Service ${key} has two rows` : `Service ${key} is listed after ${previous}, out of namespace/name order`);
    previous = key;
    const final = s.newClusterIP ?? (s.oldClusterIP !== undefined && s.oldClusterIP !== "None" && isIpAddress(s.oldClusterIP) ? s.oldClusterIP : undefined);
    const n = final === undefined ? undefined : parseCanonicalDottedQuad(final);
    if (s.action === "recreate") {
      // The old IP came from discovery, checked there; the new one must lie in the new range.
      if (s.oldClusterIP === undefined || s.newClusterIP === undefined || s.oldClusterIP === s.newClusterIP) {
        add(`Service ${key} is re-created from ${s.oldClusterIP ?? "no IP"} to ${s.newClusterIP ?? "no IP"}`);
      } else if (n !== undefined ? n < low || n >= high : !inRange(newRangeOf(s.newClusterIP), s.newClusterIP)) {
        add(`Service ${key} moves to ${s.newClusterIP}, outside the new range ${newRangeOf(s.newClusterIP)}`);
      }
      if ((rewrite || s !== dnsRow) && !isKubernetes(s)) {
        const step = serviceSteps[expected++];
        stepsAgree &&=
          step !== undefined &&
          step.action === moveAction &&
          joins(step.id, SERVICE_STEP_PREFIX, s.namespace, "/", s.name) &&
          joins(step.target, "Service ", s.namespace, "/", s.name, ": ", s.oldClusterIP, " -> ", s.newClusterIP);
      }
    } else if (s.newClusterIP !== undefined && s.newClusterIP !== s.oldClusterIP) {
      add(`Service ${key} is unchanged but planned from ${s.oldClusterIP ?? "no IP"} to ${s.newClusterIP}`);
    }
    if (n !== undefined) numeric.push(n);
    else if (final !== undefined) {
      if (holder.has(final)) duplicates.add(final);
      else holder.set(final, i);
    }
    if (s.oldClusterIPs || s.newClusterIPs) {
      for (const m of dualStackRowProblems(s, newRangeOf)) add(`Service ${key} ${m}`);
      // the first address is spec.clusterIP, counted above; the second family's is counted here
      for (const other of s.newClusterIPs?.slice(1) ?? []) {
        if (holder.has(other)) duplicates.add(other);
        else holder.set(other, i);
      }
    }
  }
  const sorted = Float64Array.from(numeric).sort();
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i] === sorted[i - 1]) duplicates.add(formatIPv4(sorted[i]));
  }
  for (const address of duplicates) {
    const owners = services.filter((s) => (s.newClusterIP ?? s.oldClusterIP) === address || s.newClusterIPs?.includes(address)).map(serviceRefKey);
    const standInShares = dnsMoves && owners.length === 2 && owners.includes(dnsKey) && owners.includes(standInKey) && address === plan.dns.newClusterIP;
    if (!standInShares) add(`Services ${owners.join(" and ")} both get ${address}`);
  }
  const holds = (address: string) => {
    const n = parseCanonicalDottedQuad(address);
    return n === undefined ? holder.has(address) : binaryHas(sorted, n);
  };
  // Every Service step is a planned move, and every planned move has its step: said per Service once they disagree.
  if (!stepsAgree || expected !== serviceSteps.length) for (const m of serviceStepMismatches(services, serviceSteps, rewrite ? undefined : dnsKey, moveAction)) add(m);

  // The kubernetes Service: the summary is its row; its step exists exactly when it moves.
  const k = plan.kubernetesService;
  const kubernetesMoves = k.oldClusterIP !== k.newClusterIP;
  if (k.newClusterIP !== kubernetesServiceIP(plan.serviceCidr.to)) {
    add(`the kubernetes Service is planned at ${k.newClusterIP}, not the new range's first IP ${kubernetesServiceIP(plan.serviceCidr.to)}`);
  }
  const kubernetesRow = services.find(isKubernetes);
  if (kubernetesRow) {
    if (kubernetesRow.oldClusterIP !== k.oldClusterIP || kubernetesRow.newClusterIP !== k.newClusterIP) {
      add(`the summary says kubernetes ${k.oldClusterIP} -> ${k.newClusterIP}, the table ${kubernetesRow.oldClusterIP ?? "-"} -> ${kubernetesRow.newClusterIP ?? "-"}`);
    }
    if ((kubernetesRow.action === "recreate") !== kubernetesMoves) add(`Service default/kubernetes is "${kubernetesRow.action}" while its IP goes ${k.oldClusterIP} -> ${k.newClusterIP}`);
  } else if (holds(k.newClusterIP)) {
    add(`Service ${services.filter((s) => (s.newClusterIP ?? s.oldClusterIP) === k.newClusterIP).map(serviceRefKey).join(", ")} gets ${k.newClusterIP}, the kubernetes Service's new IP`);
  }

  // The DNS Service: the summary is its row.
  if (dnsRow) {
    const final = dnsRow.newClusterIP ?? (isIpAddress(dnsRow.oldClusterIP) ? dnsRow.oldClusterIP : undefined);
    if (plan.dns.oldClusterIP !== dnsRow.oldClusterIP || (final !== undefined && plan.dns.newClusterIP !== final)) {
      add(`the summary says DNS ${plan.dns.oldClusterIP ?? "-"} -> ${plan.dns.newClusterIP}, the table ${dnsRow.oldClusterIP ?? "-"} -> ${final ?? "-"}`);
    }
  }

  if (kubernetesSteps !== (kubernetesMoves ? 1 : 0)) {
    add(`${kubernetesSteps} steps re-create Service default/kubernetes while its IP goes ${k.oldClusterIP} -> ${k.newClusterIP}`);
  }

  // The DNS phase runs exactly when the DNS Service moves, and says where to.
  const dnsSteps = phase("dns");
  if (dnsMoves && !rewrite) {
    const target = `Service ${dnsKey}: ${dnsRow!.oldClusterIP} -> ${dnsRow!.newClusterIP}`;
    const ids = dnsSteps.map((s) => s.id).join(", ");
    if (ids !== `${stepId.dnsTemporary}, ${stepId.dnsFinal}`) add(`the DNS Service moves but the dns phase has ${ids || "no steps"}`);
    for (const s of dnsSteps) if (s.target !== target) add(`step ${s.id} says "${s.target}", the table ${dnsRow!.oldClusterIP} -> ${dnsRow!.newClusterIP}`);
  } else if (dnsSteps.length > 0) {
    add(`the dns phase has ${dnsSteps.map((s) => s.id).join(", ")} but Service ${dnsKey} ${dnsRow ? `is "${dnsRow.action}"` : "does not exist"}`);
  }

  // The graph reads the kubernetes and DNS moves the same way (index.ts declares the kubernetes re-create and the DNS
  // stand-in and swap from serviceMovesFromPlan). Its bulk moves take the same rows as the services phase, by the
  // same predicate; building that record for 500,000 Services here would double the check (test/unit proves it).
  // (the rewrite's targets come from the plan's rows directly: lib/etcdRewrite/rewriteTargets.ts)
  if (!rewrite) {
    const graph = serviceMovesFromPlan({ ...plan, services: [kubernetesRow, dnsRow].filter((r): r is ServiceMove => r !== undefined) });
    if ((graph.kubernetesService !== undefined) !== kubernetesMoves) add(`the graph ${graph.kubernetesService ? "re-creates" : "keeps"} Service default/kubernetes, the plan ${kubernetesMoves ? "re-creates" : "keeps"} it`);
    if ((graph.dns !== undefined) !== dnsMoves) add(`the graph ${graph.dns ? "moves" : "keeps"} the DNS Service, the plan ${dnsMoves ? "moves" : "keeps"} it`);
    if (graph.dns && (graph.dns.fromIP !== plan.dns.oldClusterIP || graph.dns.toIP !== plan.dns.newClusterIP)) {
      add(`the graph moves DNS ${graph.dns.fromIP} -> ${graph.dns.toIP}, the summary ${plan.dns.oldClusterIP} -> ${plan.dns.newClusterIP}`);
    }
  }

  // Nodes: one row each, one subnet each, in the new range; a step exactly for each node that moves.
  const { to: podTo, nodeMaskSize } = plan.podCidr;
  const fitsSecond = (pair: string[] | undefined) =>
    pair !== undefined && pair.length === 2 && parseCidr(pair[1]).prefix === second!.podCidr.nodeMaskSize && cidrContains(second!.podCidr.to, pair[1]);
  const nodeRows = new Map<string, Plan["nodes"][number]>();
  const subnets = new Map<string, string>();
  const batches = new Map<number, string[]>();
  for (const n of plan.nodes) {
    if (nodeRows.has(n.name)) add(`Node ${n.name} has two rows`);
    nodeRows.set(n.name, n);
    for (const subnet of n.newPodCIDRs ? n.newPodCIDRs.slice(1).concat(n.newPodCIDR) : [n.newPodCIDR]) {
      const other = subnets.get(subnet);
      if (other !== undefined) add(`Nodes ${other} and ${n.name} both get ${subnet}`);
      subnets.set(subnet, n.name);
    }
    if (second && !fitsSecond(n.newPodCIDRs)) add(`Node ${n.name} is planned ${JSON.stringify(n.newPodCIDRs)}: not ${n.newPodCIDR} then a /${second.podCidr.nodeMaskSize} of ${second.podCidr.to}`);
    if (n.action === "move") {
      if (n.batch < 0) add(`Node ${n.name} moves but is in no batch`);
      const batch = batches.get(n.batch);
      if (batch) batch.push(n.name);
      else batches.set(n.batch, [n.name]);
      // Its address against the range (the fast address parser), its prefix as text: node subnets outnumber the
      // parsed-range cache, and ip-address would parse each of 50,000 of them again.
      const slash = n.newPodCIDR.indexOf("/");
      const fits = slash > 0 && n.newPodCIDR.slice(slash + 1) === String(nodeMaskSize) && inRange(podTo, n.newPodCIDR.slice(0, slash));
      if (!fits) add(`Node ${n.name} moves to ${n.newPodCIDR}, not a /${nodeMaskSize} of ${podTo}`);
    } else if (n.batch !== -1 || n.canary || n.newPodCIDR !== n.oldPodCIDR) {
      add(`Node ${n.name} is unchanged but planned ${n.oldPodCIDR ?? "none"} -> ${n.newPodCIDR} in batch ${n.batch}`);
    }
  }
  const canaries = plan.nodes.filter((n) => n.canary);
  if (canaries.length > 1) add(`${canaries.length} canaries: ${canaries.map((n) => n.name).join(", ")}`);
  if (canaries.length === 1 && (canaries[0].batch !== 0 || (batches.get(0) ?? []).length !== 1)) add(`the canary ${canaries[0].name} does not go first and alone`);
  const nodeSteps = new Set<string>();
  for (const step of phase("nodes")) {
    if (step.action !== "move-node") continue;
    const name = step.id.slice(NODE_STEP_PREFIX.length);
    const row = nodeRows.get(name);
    if (!row || row.action !== "move") add(`step ${step.id} moves Node ${name}, which the plan ${row ? `has as "${row.action}"` : "does not have"}`);
    else if (step.target !== `Node ${name}: ${row.oldPodCIDR ?? "none"} -> ${row.newPodCIDR}`) add(`step ${step.id} says "${step.target}", the table ${row.oldPodCIDR ?? "none"} -> ${row.newPodCIDR}`);
    nodeSteps.add(name);
  }
  for (const n of plan.nodes) if (n.action === "move" && !nodeSteps.has(n.name)) add(`Node ${n.name} moves but no step moves it`);

  // Steps: unique ids, dependencies that exist, no cycle. Steps that wait on one group share its array (lib/plan/plan.ts),
  // so each array is resolved once. The bulk Service steps, once matched one to one with their sorted, unique rows
  // above, are unique already: they stay out of the Map, and the group "the whole services phase" (what the next
  // phase waits on) is resolved by position.
  const steps = plan.phases.flatMap((p) => p.steps);
  const servicesAt = steps.indexOf(allServiceSteps[0]);
  const bulkMatched = stepsAgree && expected === serviceSteps.length && servicesAt >= 0;
  const isBulk = (i: number) => bulkMatched && i >= servicesAt && i < servicesAt + allServiceSteps.length && steps[i].action !== "recreate-by-apiserver";
  const index = new Map<string, number>();
  steps.forEach((st, i) => {
    if (isBulk(i)) return;
    const before = index.size;
    if (index.set(st.id, i).size === before) add(`two steps are named ${st.id}`);
  });
  // Found by a scan: no planner group names a single bulk step, so this runs for a broken plan only.
  const indexOf = (id: string): number | undefined => {
    const i = index.get(id);
    if (i !== undefined || !bulkMatched) return i;
    const j = allServiceSteps.findIndex((st) => st.id === id);
    return j >= 0 ? servicesAt + j : undefined;
  };
  if (bulkMatched) {
    for (const [id, i] of index) {
      const outside = i < servicesAt || i >= servicesAt + allServiceSteps.length;
      if (outside && id.startsWith(SERVICE_STEP_PREFIX) && serviceSteps.some((st) => st.id === id)) add(`two steps are named ${id}`);
    }
  }
  const resolved = new Map<string[], number[]>();
  const edges = steps.map((st) => {
    let deps = resolved.get(st.dependsOn);
    if (!deps) {
      const wholePhase = bulkMatched && st.dependsOn.length === allServiceSteps.length && st.dependsOn.every((d, j) => d === allServiceSteps[j].id);
      deps = [];
      for (let j = 0; j < st.dependsOn.length; j++) {
        const at = wholePhase ? servicesAt + j : indexOf(st.dependsOn[j]);
        if (at === undefined) add(`step ${st.id} waits on ${st.dependsOn[j]}, which is no step`);
        else deps.push(at);
      }
      resolved.set(st.dependsOn, deps);
    }
    return deps;
  });
  const cycle = findCycle(edges);
  if (cycle !== undefined) add(`step ${steps[cycle].id} waits on itself`);

  // The estimates are the phases' sums.
  const ours = plan.phases.reduce((sum, p) => sum + p.estimateSeconds, 0);
  if (Math.abs(ours - plan.estimate.oursSeconds) > 1e-6) add(`the estimate says ${plan.estimate.oursSeconds} s, its phases add up to ${ours} s`);
  const movingNodes = plan.nodes.filter((n) => n.action === "move").length;
  const manual = plan.phases.reduce(
    (sum, p) => {
      const factor = p.name === "nodes" ? movingNodes : 1;
      return { min: sum.min + p.manualMinutes.min * factor, max: sum.max + p.manualMinutes.max * factor };
    },
    { min: 0, max: 0 },
  );
  if (manual.min !== plan.estimate.manualMinutes.min || manual.max !== plan.estimate.manualMinutes.max) {
    add(`the manual runbook says ${plan.estimate.manualMinutes.min}-${plan.estimate.manualMinutes.max} min, its phases add up to ${manual.min}-${manual.max} min`);
  }
  return out;
}

/** text === parts.join(""), without building the joined string (this runs once per Service step). */
function joins(text: string, ...parts: Array<string | undefined>): boolean {
  let at = 0;
  for (const part of parts) {
    if (part === undefined || !text.startsWith(part, at)) return false;
    at += part.length;
  }
  return at === text.length;
}

/** Whether a sorted array holds value. */
function binaryHas(sorted: Float64Array, value: number): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] === value) return true;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

function formatIPv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join(".");
}

/** True when ip is an address inside cidr; false for anything that is not an address. */
function inRange(cidr: string, ip: string): boolean {
  try {
    return cidrContains(cidr, ip);
  } catch {
    return false;
  }
}

/** Where steps and services phase disagree, said per step and per Service (only run once they do disagree). */
function serviceStepMismatches(services: ServiceMove[], serviceSteps: Plan["phases"][number]["steps"], dnsKey: string | undefined, moveAction: string): string[] {
  const out: string[] = [];
  const rows = new Map(services.map((s) => [serviceRefKey(s), s]));
  const stepped = new Set<string>();
  for (const step of serviceSteps) {
    const key = step.id.slice(SERVICE_STEP_PREFIX.length);
    const row = rows.get(key);
    if (step.action !== moveAction || !row || row.action !== "recreate" || key === dnsKey || isKubernetes(row)) {
      out.push(`step ${step.id} re-creates Service ${key}, which the plan ${row ? `has as "${row.action}"${key === dnsKey ? " (the DNS Service moves in the dns phase)" : ""}` : "does not have"}`);
    } else if (step.target !== `Service ${key}: ${row.oldClusterIP} -> ${row.newClusterIP}`) {
      out.push(`step ${step.id} says "${step.target}", the table ${row.oldClusterIP} -> ${row.newClusterIP}`);
    }
    if (stepped.has(key)) out.push(`two steps re-create Service ${key}`);
    stepped.add(key);
  }
  for (const [key, s] of rows) {
    if (s.action === "recreate" && key !== dnsKey && !isKubernetes(s) && !stepped.has(key)) out.push(`Service ${key} moves but no step moves it`);
  }
  if (out.length === 0) out.push("the services phase lists its steps out of table order");
  return out;
}

/** The index of a step that reaches itself through its dependencies, if any (iterative: a long chain must not overflow). */
function findCycle(edges: number[][]): number | undefined {
  const state = new Uint8Array(edges.length); // 0 unseen, 1 on the current path, 2 done
  const stack: number[] = [];
  const next: number[] = [];
  for (let start = 0; start < edges.length; start++) {
    if (state[start] !== 0) continue;
    stack.push(start);
    next.push(0);
    state[start] = 1;
    while (stack.length > 0) {
      const top = stack.length - 1;
      const node = stack[top];
      const deps = edges[node];
      if (next[top] >= deps.length) {
        state[node] = 2;
        stack.pop();
        next.pop();
        continue;
      }
      const d = deps[next[top]++];
      if (state[d] === 1) return d;
      if (state[d] === 0) {
        state[d] = 1;
        stack.push(d);
        next.push(0);
      }
    }
  }
  return undefined;
}

/** A dual-stack row: one old and one new address per family, in one order, the first being spec.clusterIP's. */
function dualStackRowProblems(s: ServiceMove, newRangeOf: (address: string) => string): string[] {
  const olds = s.oldClusterIPs ?? [];
  const news = s.newClusterIPs ?? [];
  if (olds.length !== 2 || news.length !== 2) return [`lists ${olds.length} old and ${news.length} new ClusterIPs; a dual-stack row lists two of each`];
  const problems: string[] = [];
  if (olds[0] !== s.oldClusterIP || news[0] !== (s.newClusterIP ?? s.oldClusterIP)) problems.push(`lists ${olds[0]} -> ${news[0]} first but its ClusterIP goes ${s.oldClusterIP} -> ${s.newClusterIP}`);
  for (let i = 0; i < 2; i++) {
    if (familyOf(olds[i]) !== familyOf(news[i])) problems.push(`changes the family of ClusterIP ${olds[i]} to ${news[i]}`);
    else if (olds[i] !== news[i] && !cidrContains(newRangeOf(news[i]), news[i])) problems.push(`moves to ${news[i]}, outside the new range ${newRangeOf(news[i])}`);
  }
  if (s.action !== "recreate" && (olds[0] !== news[0] || olds[1] !== news[1])) problems.push(`is unchanged but planned ${olds.join(", ")} -> ${news.join(", ")}`);
  return problems;
}
