/**
 * The runbook's phases and steps, in order, with our estimates beside the published manual runbook's: the part
 * of the plan that index.ts's graph, the gate and the estimate all read. buildPlan (plan.ts) calls planPhases
 * once it knows which Services and nodes move.
 */
import { MigrationConfig } from "../config/migrationConfig";
import { CILIUM_OPERATOR } from "../podNetwork/ciliumPool";
import { isKubernetesService, serviceRefKey } from "../serviceMove/serviceRef";
import { ControlPlaneStep, stepId } from "./stepIds";
import { NodeMove, Plan, PlanPhase, PlanStep, PhaseName, ServiceMove } from "./planModel";

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
  kubeProxy: 60,
  verify: 60,
} as const;

/** Builds the phases; each step's dependsOn names the steps that must finish first. */
export function planPhases(config: MigrationConfig, cni: Plan["cni"], services: ServiceMove[], nodes: NodeMove[], dnsKey: string, kubernetesMoves: boolean): PlanPhase[] {
  const E = STEP_ESTIMATE_SECONDS;
  const phases: PlanPhase[] = [];
  let previous: string[] = [];
  const phase = (name: PhaseName, steps: PlanStep[]) => {
    phases.push({ name, steps, estimateSeconds: 0, manualMinutes: MANUAL_RUNBOOK_MINUTES[name] });
    return steps;
  };
  // Steps that wait on the same group share one dependsOn array (never mutated), which is also how sumBatches groups them.
  const step = (id: string, action: string, target: string, dependsOn: string[], estimateSeconds: number): PlanStep => ({
    id,
    action,
    target,
    dependsOn,
    estimateSeconds,
  });

  phase("preflight", [step(stepId.preflight, "audit", "cluster", [], E.preflight)]);
  previous = [stepId.preflight];
  phase("snapshot", [step(stepId.snapshot, "etcd-snapshot", config.etcd.endpoints[0] ?? "etcd", previous, E.snapshot)]);
  previous = [stepId.snapshot];

  // KCM before the apiserver on each node, one control-plane node at a time (KCM keeps allocation off until the
  // nodes moved: see nodes/enable-cidr-allocation).
  const cpSteps: PlanStep[] = [];
  const controlPlanes = config.nodes.filter((n) => n.role === "control-plane");
  for (const cp of controlPlanes) {
    const id = (s: ControlPlaneStep) => stepId.controlPlane(cp.name, s);
    cpSteps.push(step(id("backup"), "backup-manifests", cp.name, previous, E.backupManifests));
    cpSteps.push(step(id("kube-controller-manager"), "edit-manifest", `${cp.name}:kube-controller-manager.yaml`, [id("backup")], E.editControllerManager));
    cpSteps.push(step(id("kube-apiserver"), "edit-manifest", `${cp.name}:kube-apiserver.yaml`, [id("kube-controller-manager")], E.editApiserver));
    previous = [id("kube-apiserver")];
  }
  // The serving certificates once every apiserver serves the new range: in-cluster clients still reach the old
  // kubernetes Service IP until the Services phase, and the re-issued certificate keeps that IP as a SAN.
  for (const cp of controlPlanes) {
    cpSteps.push(step(stepId.controlPlane(cp.name, "apiserver-cert"), "reissue-cert", `${cp.name}:apiserver.crt`, previous, E.reissueCert));
    previous = [stepId.controlPlane(cp.name, "apiserver-cert")];
  }
  phase("control-plane", cpSteps);
  const controlPlaneDone = previous;

  // Only what moves gets a step: an expansion re-creates neither the kubernetes Service nor the DNS Service.
  const moving = services.filter((s) => s.action === "recreate");
  const kubernetesSteps = kubernetesMoves
    ? [step(stepId.kubernetesService, "recreate-by-apiserver", "Service default/kubernetes", controlPlaneDone, E.kubernetesService)]
    : [];
  const serviceSteps = moving
    .filter((s) => !isKubernetesService(s) && serviceRefKey(s) !== dnsKey)
    .map((s) => step(stepId.service(s), "recreate", `Service ${serviceRefKey(s)}: ${s.oldClusterIP} -> ${s.newClusterIP}`, controlPlaneDone, E.serviceMove));
  const servicesPhase = phase("services", [...kubernetesSteps, ...serviceSteps]);
  const lanes = Math.max(1, config.services.parallelism);
  phases[phases.length - 1].estimateSeconds = Math.max(kubernetesSteps.length > 0 ? E.kubernetesService : 0, Math.ceil(serviceSteps.length / lanes) * E.serviceMove);
  const servicesDone = servicesPhase.length > 0 ? servicesPhase.map((s) => s.id) : controlPlaneDone;

  const dnsMove = moving.find((s) => serviceRefKey(s) === dnsKey);
  const dnsTarget = dnsMove ? `Service ${dnsKey}: ${dnsMove.oldClusterIP} -> ${dnsMove.newClusterIP}` : "";
  const dnsTemporary = dnsMove ? step(stepId.dnsTemporary, "create-temporary-dns", dnsTarget, servicesDone, E.dnsStep) : undefined;
  const dnsFinal = dnsMove ? step(stepId.dnsFinal, "recreate-dns", dnsTarget, [], E.dnsStep) : undefined;
  phase("dns", dnsTemporary && dnsFinal ? [dnsTemporary, dnsFinal] : []);

  const afterTemporaryDns = dnsTemporary ? [dnsTemporary.id] : servicesDone;
  const clusterConfig = phase("cluster-config", [
    step(stepId.clusterConfig("kubeadm-config"), "patch-configmap", "ConfigMap kube-system/kubeadm-config", afterTemporaryDns, E.clusterConfig),
    step(stepId.clusterConfig("kubelet-config"), "patch-configmap", "ConfigMap kube-system/kubelet-config", afterTemporaryDns, E.clusterConfig),
  ]);
  previous = clusterConfig.map((s) => s.id);

  const cniSteps: PlanStep[] = [];
  let oldPoolRemoval: PlanStep | undefined;
  if (cni === "calico") {
    cniSteps.push(step(stepId.cni({ cni: "calico", step: "new-pool" }), "create-ippool", `IPPool in ${config.podCidr.to}`, previous, E.cniStep));
    cniSteps.push(step(stepId.cni({ cni: "calico", step: "disable-old-pool" }), "disable-ippool", `IPPool in ${config.podCidr.from}`, [stepId.cni({ cni: "calico", step: "new-pool" })], E.cniStep));
    oldPoolRemoval = step(stepId.cni({ cni: "calico", step: "remove-old-pool" }), "delete-ippool", `IPPool in ${config.podCidr.from}`, [], E.cniStep);
    cniSteps.push(oldPoolRemoval);
  } else if (cni === "flannel") {
    cniSteps.push(step(stepId.cni({ cni: "flannel", step: "net-conf" }), "patch-configmap", "ConfigMap kube-flannel-cfg net-conf.json", previous, E.cniStep));
    cniSteps.push(step(stepId.cni({ cni: "flannel", step: "restart" }), "restart-daemonset", "DaemonSet kube-flannel-ds", [stepId.cni({ cni: "flannel", step: "net-conf" })], E.cniStep));
  } else if (cni === "cilium") {
    cniSteps.push(step(stepId.cni({ cni: "cilium", step: "cluster-pool" }), "patch-configmap", "ConfigMap kube-system/cilium-config cluster-pool-ipv4-cidr", previous, E.cniStep));
    const operator = `${CILIUM_OPERATOR.kind} ${CILIUM_OPERATOR.namespace}/${CILIUM_OPERATOR.name}`;
    cniSteps.push(step(stepId.cni({ cni: "cilium", step: "restart" }), "restart-deployment", operator, [stepId.cni({ cni: "cilium", step: "cluster-pool" })], E.cniStep));
  }
  phase("cni", cniSteps);
  const lastCniStep = cniSteps.filter((s) => s !== oldPoolRemoval).pop();
  if (lastCniStep) previous = [lastCniStep.id];

  // Batches run in order; the nodes of one batch run together.
  const nodeSteps: PlanStep[] = [];
  const batches = new Map<number, NodeMove[]>();
  for (const n of nodes) if (n.action === "move") batches.set(n.batch, [...(batches.get(n.batch) ?? []), n]);
  for (const batch of [...batches.keys()].sort((a, b) => a - b)) {
    previous = batches.get(batch)!.map((n) => {
      const s = step(stepId.node(n.name), "move-node", `Node ${n.name}: ${n.oldPodCIDR ?? "none"} -> ${n.newPodCIDR}`, previous, E.nodeMove);
      nodeSteps.push(s);
      return s.id;
    });
  }
  for (const cp of controlPlanes) {
    const s = step(stepId.enableAllocation(cp.name), "edit-manifest", `${cp.name}:kube-controller-manager.yaml --allocate-node-cidrs=true`, previous, E.enableAllocation);
    nodeSteps.push(s);
    previous = [s.id];
  }
  phase("nodes", nodeSteps);
  if (dnsFinal) dnsFinal.dependsOn = [...previous];

  const kubeProxy = phase("kube-proxy", [
    step(stepId.kubeProxy("config"), "patch-configmap", "ConfigMap kube-system/kube-proxy clusterCIDR", dnsFinal ? [dnsFinal.id] : [...previous], E.kubeProxy),
    step(stepId.kubeProxy("restart"), "restart-daemonset", "DaemonSet kube-system/kube-proxy", [stepId.kubeProxy("config")], E.kubeProxy),
  ]);
  previous = [kubeProxy[kubeProxy.length - 1].id];
  if (oldPoolRemoval) {
    oldPoolRemoval.dependsOn = [...previous];
    previous = [oldPoolRemoval.id];
  }
  phase("verify", [step(stepId.verify, "verify", "cluster", previous, E.verify)]);

  for (const p of phases) {
    if (p.name !== "services") p.estimateSeconds = sumBatches(p.steps);
  }
  return phases;
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
