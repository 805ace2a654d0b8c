/**
 * The runbook's phases and steps, in order, with our estimates beside the published manual runbook's: the part
 * of the plan that index.ts's graph, the gate and the estimate all read. buildPlan (plan.ts) calls planPhases
 * once it knows which Services and nodes move.
 */
import { RangeMigrationConfig, NodeTarget } from "../config/migrationConfig";
import { rangeLists, RangeLists } from "../config/rangeLists";
import { rangeForFamilyOf } from "../net/rangeList";
import { CILIUM_OPERATOR } from "../podNetwork/ciliumPool";
import { isKubernetesService, serviceRefKey } from "../serviceMove/serviceRef";
import { ControlPlaneStep, stepId } from "./stepIds";
import { coveringRange } from "../net/coveringRange";
import { CalicoPoolPlan, NodeMove, Plan, PlanPhase, PlanStep, PhaseName, ServiceMove } from "./planModel";

/** The published manual runbook's figures, in minutes, per phase (per node for "nodes"). */
export const MANUAL_RUNBOOK_MINUTES: Record<PhaseName, { min: number; max: number }> = {
  preflight: { min: 0, max: 0 },
  snapshot: { min: 0, max: 0 },
  "control-plane": { min: 40, max: 40 },
  services: { min: 30, max: 30 },
  dns: { min: 0, max: 0 },
  "cluster-config": { min: 0, max: 0 },
  cni: { min: 15, max: 15 },
  nodes: { min: 5, max: 8 },
  "kube-proxy": { min: 15, max: 15 },
  verify: { min: 30, max: 30 },
};

/** Our estimates, in seconds, for one unit of each kind of step. */
export const STEP_ESTIMATE_SECONDS = {
  preflight: 30,
  snapshot: 60,
  backupManifests: 10,
  editControllerManager: 60,
  editApiserver: 90,
  reissueCert: 60,
  /** One Service move through the API, per parallel lane. */
  serviceMove: 0.1,
  kubernetesService: 30,
  dnsStep: 5,
  clusterConfig: 10,
  cniStep: 30,
  /** Cordon, drain, CNI cleanup, rejoin, Ready, verify: the drain dominates. */
  nodeMove: 240,
  enableAllocation: 60,
  /** etcd-rewrite: moving a manifest out and waiting for the component to stop; the rewrite; a start on new flags. */
  stopComponents: 30,
  etcdRewrite: 15,
  startApiserver: 60,
  startControllerManager: 30,
  /** etcd-rewrite: cordon, drain, CNI cleanup, kubelet restart, DaemonSet pods replaced: no Node delete. */
  nodeRestart: 180,
  kubeProxy: 60,
  verify: 60,
} as const;

/** Collects the phases in order; a step's dependsOn names the steps that must finish first. */
class PhaseList {
  readonly phases: PlanPhase[] = [];

  phase(name: PhaseName, steps: PlanStep[]): PlanStep[] {
    this.phases.push({ name, steps, estimateSeconds: 0, manualMinutes: MANUAL_RUNBOOK_MINUTES[name] });
    return steps;
  }
}

/** Steps that wait on the same group share one dependsOn array (never mutated), which is also how sumBatches groups them. */
function step(id: string, action: string, target: string, dependsOn: string[], estimateSeconds: number): PlanStep {
  return { id, action, target, dependsOn, estimateSeconds };
}

const E = STEP_ESTIMATE_SECONDS;

/**
 * KCM before the apiserver on each node, one control-plane node at a time (KCM keeps allocation off until the nodes
 * moved: see nodes/enable-cidr-allocation); then the serving certificates once every apiserver serves the new range:
 * in-cluster clients still reach the old kubernetes Service IP until the Services phase, and the re-issued
 * certificate keeps that IP as a SAN. Returns the last step.
 */
function controlPlaneSteps(list: PhaseList, controlPlanes: NodeTarget[], after: string[]): string[] {
  const cpSteps: PlanStep[] = [];
  let previous = after;
  for (const cp of controlPlanes) {
    const id = (s: ControlPlaneStep) => stepId.controlPlane(cp.name, s);
    cpSteps.push(step(id("backup"), "backup-manifests", cp.name, previous, E.backupManifests));
    cpSteps.push(step(id("kube-controller-manager"), "edit-manifest", `${cp.name}:kube-controller-manager.yaml`, [id("backup")], E.editControllerManager));
    cpSteps.push(step(id("kube-apiserver"), "edit-manifest", `${cp.name}:kube-apiserver.yaml`, [id("kube-controller-manager")], E.editApiserver));
    previous = [id("kube-apiserver")];
  }
  for (const cp of controlPlanes) {
    cpSteps.push(step(stepId.controlPlane(cp.name, "apiserver-cert"), "reissue-cert", `${cp.name}:apiserver.crt`, previous, E.reissueCert));
    previous = [stepId.controlPlane(cp.name, "apiserver-cert")];
  }
  list.phase("control-plane", cpSteps);
  return previous;
}

/**
 * services.strategy etcd-rewrite: the serving certificates first, while every apiserver still runs (they keep the
 * old kubernetes Service IP as a SAN); then every apiserver and KCM stopped, the rewrite, and each control-plane
 * node started on the new flags, apiserver before KCM. Returns the rewrite step and the last start.
 */
function rewriteControlPlaneSteps(list: PhaseList, controlPlanes: NodeTarget[], after: string[]): { rewrite: string; done: string[] } {
  const cpSteps: PlanStep[] = [];
  let previous = after;
  const chain = (id: string, action: string, target: string, estimate: number) => {
    cpSteps.push(step(id, action, target, previous, estimate));
    previous = [id];
  };
  for (const cp of controlPlanes) chain(stepId.controlPlane(cp.name, "backup"), "backup-manifests", cp.name, E.backupManifests);
  for (const cp of controlPlanes) chain(stepId.controlPlane(cp.name, "apiserver-cert"), "reissue-cert", `${cp.name}:apiserver.crt`, E.reissueCert);
  for (const cp of controlPlanes) chain(stepId.controlPlane(cp.name, "stop"), "stop-static-pods", `${cp.name}: kube-apiserver.yaml, kube-controller-manager.yaml moved out of the manifests directory`, E.stopComponents);
  chain(stepId.etcdRewrite, "rewrite-etcd", "Service ClusterIPs, Node podCIDRs and the allocator's records, in etcd", E.etcdRewrite);
  for (const cp of controlPlanes) {
    chain(stepId.controlPlane(cp.name, "kube-apiserver"), "start-with-new-flags", `${cp.name}:kube-apiserver.yaml`, E.startApiserver);
    chain(stepId.controlPlane(cp.name, "kube-controller-manager"), "start-with-new-flags", `${cp.name}:kube-controller-manager.yaml`, E.startControllerManager);
  }
  list.phase("control-plane", cpSteps);
  return { rewrite: stepId.etcdRewrite, done: previous };
}

/** etcd-rewrite: every planned Service is a step of the rewrite, the kubernetes and DNS Services too. */
function rewrittenServiceSteps(list: PhaseList, moving: ServiceMove[], kubernetesMoves: boolean, rewrite: string): void {
  const kubernetesSteps = kubernetesMoves ? [step(stepId.kubernetesService, "rewrite-in-etcd", "Service default/kubernetes", [rewrite], 0)] : [];
  const moves = moving
    .filter((s) => !isKubernetesService(s))
    .map((s) => step(stepId.service(s), "rewrite-in-etcd", `Service ${serviceRefKey(s)}: ${s.oldClusterIP} -> ${s.newClusterIP}`, [rewrite], 0));
  list.phase("services", [...kubernetesSteps, ...moves]);
}

/**
 * Only what moves gets a step: an expansion re-creates neither the kubernetes Service nor the DNS Service (the DNS
 * Service has its own phase). The phase's estimate is its lanes' time, not the sum. Returns what later phases wait on.
 */
function serviceSteps(list: PhaseList, moving: ServiceMove[], dnsKey: string, kubernetesMoves: boolean, parallelism: number, after: string[]): string[] {
  const kubernetesSteps = kubernetesMoves
    ? [step(stepId.kubernetesService, "recreate-by-apiserver", "Service default/kubernetes", after, E.kubernetesService)]
    : [];
  const moves = moving
    .filter((s) => !isKubernetesService(s) && serviceRefKey(s) !== dnsKey)
    .map((s) => step(stepId.service(s), "recreate", `Service ${serviceRefKey(s)}: ${s.oldClusterIP} -> ${s.newClusterIP}`, after, E.serviceMove));
  const steps = list.phase("services", [...kubernetesSteps, ...moves]);
  const lanes = Math.max(1, parallelism);
  list.phases[list.phases.length - 1].estimateSeconds = Math.max(kubernetesSteps.length > 0 ? E.kubernetesService : 0, Math.ceil(moves.length / lanes) * E.serviceMove);
  return steps.length > 0 ? steps.map((s) => s.id) : after;
}

/** What each Calico step changes, as plan and preview list it: the Installation's pools or the IPPools themselves. */
function calicoTargets(podCidr: RangeMigrationConfig["podCidr"], podRanges: RangeLists["pod"], pools: CalicoPoolPlan | undefined): { newPool: string; closeOld: string; removeOld: string } {
  if (pools?.management === "operator") {
    const installation = `Installation ${pools.installation}`;
    const old = `${pools.oldPool ?? "the pool"} (${podCidr.from})`;
    return {
      newPool: `${installation} ipPools: add ${pools.newPool} (${podCidr.to}); the Tigera operator creates it`,
      closeOld: `${installation} ipPools: ${old} nodeSelector "!all()"`,
      removeOld: `${installation} ipPools: remove ${old} once no IPAM block is left in it; the operator deletes the IPPool`,
    };
  }
  // a dual-stack run: one pool per family (a family the run adds has no old pool)
  const ippools = (list: string) => (list.includes(",") ? `IPPools in ${list.split(",").join(" and ")}` : `IPPool in ${list}`);
  return { newPool: ippools(podRanges.to), closeOld: ippools(podRanges.from), removeOld: ippools(podRanges.from) };
}

/**
 * The CNI's steps; those that wait until every node has moved (the old Calico pool's removal, flannel's final
 * Network) are returned apart as `afterNodes`, in order: the caller chains them, one after another, after kube-proxy.
 */
/** `podRanges`: the pod ranges as lists (a dual-stack pair comma-separated), for flannel's Network and IPv6Network. */
function cniSteps(list: PhaseList, cni: Plan["cni"], calicoPools: CalicoPoolPlan | undefined, podCidr: RangeMigrationConfig["podCidr"], podRanges: RangeLists["pod"], after: string[], rewritten = false, flannelAt: FlannelAt = {}): { steps: PlanStep[]; afterNodes: PlanStep[] } {
  const steps: PlanStep[] = [];
  const afterNodes: PlanStep[] = [];
  if (cni === "calico") {
    const targets = calicoTargets(podCidr, podRanges, calicoPools);
    const manifest = calicoPools?.management !== "operator";
    steps.push(step(stepId.cni({ cni: "calico", step: "new-pool" }), manifest ? "create-ippool" : "patch-installation", targets.newPool, after, E.cniStep));
    steps.push(step(stepId.cni({ cni: "calico", step: "disable-old-pool" }), manifest ? "disable-ippool" : "patch-installation", targets.closeOld, [stepId.cni({ cni: "calico", step: "new-pool" })], E.cniStep));
    const oldPoolRemoval = step(stepId.cni({ cni: "calico", step: "remove-old-pool" }), manifest ? "delete-ippool" : "patch-installation", targets.removeOld, [], E.cniStep);
    steps.push(oldPoolRemoval);
    afterNodes.push(oldPoolRemoval);
  } else if (cni === "flannel") {
    const daemonSet = `DaemonSet ${flannelAt.namespace ?? "kube-flannel"}/${flannelAt.daemonSet ?? "kube-flannel-ds"}`;
    const configMap = `ConfigMap ${flannelAt.namespace ?? "kube-flannel"}/kube-flannel-cfg`;
    // flanneld refuses a Network that does not contain its Node's podCIDR: while nodes move it covers both ranges
    const transition = flannelTransitionNetwork(podRanges);
    steps.push(step(stepId.cni({ cni: "flannel", step: "net-conf" }), "patch-configmap", `${configMap} net-conf.json Network ${transition} (old and new ranges while nodes move)`, after, E.cniStep));
    // after an etcd rewrite each node's flanneld restarts in the node rollout, after that node's CNI cleanup
    if (!rewritten) steps.push(step(stepId.cni({ cni: "flannel", step: "restart" }), "restart-daemonset", daemonSet, [stepId.cni({ cni: "flannel", step: "net-conf" })], E.cniStep));
    const final = step(stepId.cni({ cni: "flannel", step: "net-conf-final" }), "patch-configmap", `${configMap} net-conf.json Network ${podRanges.to}`, [], E.cniStep);
    const finalRestart = step(stepId.cni({ cni: "flannel", step: "restart-final" }), "restart-daemonset", daemonSet, [], E.cniStep);
    steps.push(final, finalRestart);
    afterNodes.push(final, finalRestart);
  } else if (cni === "cilium") {
    steps.push(step(stepId.cni({ cni: "cilium", step: "cluster-pool" }), "patch-configmap", "ConfigMap kube-system/cilium-config cluster-pool-ipv4-cidr", after, E.cniStep));
    const operator = `${CILIUM_OPERATOR.kind} ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}`;
    steps.push(step(stepId.cni({ cni: "cilium", step: "restart" }), "restart-deployment", operator, [stepId.cni({ cni: "cilium", step: "cluster-pool" })], E.cniStep));
  }
  list.phase("cni", steps);
  return { steps, afterNodes };
}

/**
 * Flannel's Network while nodes move: the smallest range holding the old and the new pod range, per family for a
 * dual-stack pair (a family the run adds has no old range: its new one alone).
 */
export function flannelTransitionNetwork(podRanges: RangeLists["pod"]): string {
  return podRanges.to.split(",").map((to) => {
    const from = rangeForFamilyOf(podRanges.from, to);
    return from ? coveringRange(from, to) : to;
  }).join(",");
}

/** Batches in order, the nodes of one batch together; then KCM's allocation back on, one control-plane node at a time. */
function nodeSteps(list: PhaseList, nodes: NodeMove[], controlPlanes: NodeTarget[], after: string[], rewritten = false): string[] {
  const steps: PlanStep[] = [];
  let previous = after;
  const batches = new Map<number, NodeMove[]>();
  for (const n of nodes) if (n.action === "move") batches.set(n.batch, [...(batches.get(n.batch) ?? []), n]);
  for (const batch of [...batches.keys()].sort((a, b) => a - b)) {
    previous = batches.get(batch)!.map((n) => {
      // rewritten: the podCIDR moved in etcd already, the node is drained and restarted, never deleted
      const s = step(stepId.node(n.name), "move-node", `Node ${n.name}: ${n.oldPodCIDR ?? "none"} -> ${n.newPodCIDR}`, previous, rewritten ? E.nodeRestart : E.nodeMove);
      steps.push(s);
      return s.id;
    });
  }
  // after a rewrite KCM starts with allocation on: no Node is left in the old range
  for (const cp of rewritten ? [] : controlPlanes) {
    const s = step(stepId.enableAllocation(cp.name), "edit-manifest", `${cp.name}:kube-controller-manager.yaml --allocate-node-cidrs=true`, previous, E.enableAllocation);
    steps.push(s);
    previous = [s.id];
  }
  list.phase("nodes", steps);
  return previous;
}

/** Where discovery found flannel (its ConfigMap's namespace, the DaemonSet mounting it); current manifests' names otherwise. */
export interface FlannelAt {
  namespace?: string;
  daemonSet?: string;
}

/**
 * Builds the phases in the runbook's order. The DNS Service moves in two halves around the node rollout: a stand-in
 * at the final IP before the cluster config points kubelets at it, the real swap once every node has moved.
 */
export function planPhases(config: RangeMigrationConfig, cni: Plan["cni"], calicoPools: CalicoPoolPlan | undefined, services: ServiceMove[], nodes: NodeMove[], dnsKey: string, kubernetesMoves: boolean, flannelAt: FlannelAt = {}): PlanPhase[] {
  const list = new PhaseList();
  list.phase("preflight", [step(stepId.preflight, "audit", "cluster", [], E.preflight)]);
  list.phase("snapshot", [step(stepId.snapshot, "etcd-snapshot", config.etcd.endpoints[0] ?? "etcd", [stepId.preflight], E.snapshot)]);
  const controlPlanes = config.nodes.filter((n) => n.role === "control-plane");
  const moving = services.filter((s) => s.action === "recreate");
  if (config.services.strategy === "etcd-rewrite") return rewritePhases(list, config, cni, calicoPools, moving, nodes, kubernetesMoves, controlPlanes, flannelAt);
  const controlPlaneDone = controlPlaneSteps(list, controlPlanes, [stepId.snapshot]);

  const servicesDone = serviceSteps(list, moving, dnsKey, kubernetesMoves, config.services.parallelism, controlPlaneDone);

  const dnsMove = moving.find((s) => serviceRefKey(s) === dnsKey);
  const dnsTarget = dnsMove ? `Service ${dnsKey}: ${dnsMove.oldClusterIP} -> ${dnsMove.newClusterIP}` : "";
  const dnsTemporary = dnsMove ? step(stepId.dnsTemporary, "create-temporary-dns", dnsTarget, servicesDone, E.dnsStep) : undefined;
  const dnsFinal = dnsMove ? step(stepId.dnsFinal, "recreate-dns", dnsTarget, [], E.dnsStep) : undefined;
  list.phase("dns", dnsTemporary && dnsFinal ? [dnsTemporary, dnsFinal] : []);

  const afterTemporaryDns = dnsTemporary ? [dnsTemporary.id] : servicesDone;
  const clusterConfig = list.phase("cluster-config", [
    step(stepId.clusterConfig("kubeadm-config"), "patch-configmap", "ConfigMap kube-system/kubeadm-config", afterTemporaryDns, E.clusterConfig),
    step(stepId.clusterConfig("kubelet-config"), "patch-configmap", "ConfigMap kube-system/kubelet-config", afterTemporaryDns, E.clusterConfig),
  ]);
  const clusterConfigDone = clusterConfig.map((s) => s.id);

  const cniPhase = cniSteps(list, cni, calicoPools, config.podCidr, rangeLists(config).pod, clusterConfigDone, false, flannelAt);
  const lastCniStep = cniPhase.steps.filter((s) => !cniPhase.afterNodes.includes(s)).pop();
  const nodesDone = nodeSteps(list, nodes, controlPlanes, lastCniStep ? [lastCniStep.id] : clusterConfigDone);
  if (dnsFinal) dnsFinal.dependsOn = [...nodesDone];

  return finishPhases(list, dnsFinal ? [dnsFinal.id] : [...nodesDone], cniPhase.afterNodes);
}

/**
 * A run that changes node addresses only (nodeAddresses without serviceCidr and podCidr): the workers whose address
 * changes roll as nodes/<name> (re-registered at their new address); control-plane nodes follow outside the plan's
 * phases, one at a time (components/controlPlaneAddress), as in a range move.
 */
export function planAddressPhases(etcdEndpoint: string, workers: NodeMove[]): PlanPhase[] {
  const list = new PhaseList();
  list.phase("preflight", [step(stepId.preflight, "audit", "cluster", [], E.preflight)]);
  list.phase("snapshot", [step(stepId.snapshot, "etcd-snapshot", etcdEndpoint, [stepId.preflight], E.snapshot)]);
  const nodesDone = nodeSteps(list, workers, [], [stepId.snapshot]);
  list.phase("verify", [step(stepId.verify, "verify", "cluster", nodesDone, E.verify)]);
  for (const p of list.phases) p.estimateSeconds = sumBatches(p.steps);
  return list.phases;
}

/** kube-proxy after the nodes (and the DNS swap), then the CNI's steps that wait for every node, then verify. */
function finishPhases(list: PhaseList, after: string[], cniAfterNodes: PlanStep[]): PlanPhase[] {
  const kubeProxy = list.phase("kube-proxy", [
    step(stepId.kubeProxy("config"), "patch-configmap", "ConfigMap kube-system/kube-proxy clusterCIDR", after, E.kubeProxy),
    step(stepId.kubeProxy("restart"), "restart-daemonset", "DaemonSet kube-system/kube-proxy", [stepId.kubeProxy("config")], E.kubeProxy),
  ]);
  let previous = [kubeProxy[kubeProxy.length - 1].id];
  for (const s of cniAfterNodes) {
    s.dependsOn = [...previous];
    previous = [s.id];
  }
  list.phase("verify", [step(stepId.verify, "verify", "cluster", previous, E.verify)]);

  for (const p of list.phases) {
    if (p.name !== "services") p.estimateSeconds = sumBatches(p.steps);
  }
  return list.phases;
}

/**
 * services.strategy etcd-rewrite: the control plane stops, etcd is rewritten (every Service, the DNS Service among
 * them, and every Node's podCIDR), the control plane starts on the new flags; the cluster config, the CNI and the
 * nodes (restarted, not re-registered) follow. The DNS Service needs no stand-in: it answers at its old IP through
 * the old-IP bridge until every pod has restarted.
 */
function rewritePhases(list: PhaseList, config: RangeMigrationConfig, cni: Plan["cni"], calicoPools: CalicoPoolPlan | undefined, moving: ServiceMove[], nodes: NodeMove[], kubernetesMoves: boolean, controlPlanes: NodeTarget[], flannelAt: FlannelAt): PlanPhase[] {
  const controlPlane = rewriteControlPlaneSteps(list, controlPlanes, [stepId.snapshot]);
  rewrittenServiceSteps(list, moving, kubernetesMoves, controlPlane.rewrite);
  list.phase("dns", []);
  const clusterConfig = list.phase("cluster-config", [
    step(stepId.clusterConfig("kubeadm-config"), "patch-configmap", "ConfigMap kube-system/kubeadm-config", controlPlane.done, E.clusterConfig),
    step(stepId.clusterConfig("kubelet-config"), "patch-configmap", "ConfigMap kube-system/kubelet-config", controlPlane.done, E.clusterConfig),
  ]);
  const clusterConfigDone = clusterConfig.map((s) => s.id);
  const cniPhase = cniSteps(list, cni, calicoPools, config.podCidr, rangeLists(config).pod, clusterConfigDone, true, flannelAt);
  const lastCniStep = cniPhase.steps.filter((s) => !cniPhase.afterNodes.includes(s)).pop();
  const nodesDone = nodeSteps(list, nodes, controlPlanes, lastCniStep ? [lastCniStep.id] : clusterConfigDone, true);
  return finishPhases(list, nodesDone, cniPhase.afterNodes);
}

/** Steps of a phase that share dependencies run together: count the longest step per group once. */
function sumBatches(steps: PlanStep[]): number {
  const groups = new Map<string[], number>();
  for (const s of steps) {
    const key = s.dependsOn;
    groups.set(key, Math.max(groups.get(key) ?? 0, s.estimateSeconds));
  }
  return [...groups.values()].reduce((a, b) => a + b, 0);
}
