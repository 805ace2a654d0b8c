import * as pulumi from "@pulumi/pulumi";
import { PreflightGate, Verification } from "../dynamic-providers/clusterAudit";
import { HostAddressSettings, MigrationConfig, NodeAddressChange } from "../lib/config/migrationConfig";
import { Plan } from "../lib/plan/planModel";
import { NODE_STEP_PREFIX, stepId } from "../lib/plan/stepIds";
import { ControlPlaneAddress } from "./controlPlaneAddress";
import { NodeRollout, NodeRolloutArgs } from "./nodeRollout";
import { PlanOrder } from "./planOrder";
import { SshCredentials } from "./remoteConnection";
import { dnsBudgetAroundRollout } from "./dnsBudgetAroundRollout";
import { EtcdTlsInputs, declareRunStart } from "./runStart";

export interface ControlPlaneAddressDeclaration {
  nodeAccess: { nodes: MigrationConfig["nodes"]; ssh: SshCredentials; runId: string };
  changes: NodeAddressChange[];
  host: HostAddressSettings;
  kubeconfig: pulumi.Output<string>;
  config: MigrationConfig;
  etcdTls: EtcdTlsInputs;
  /** The Service range the apiserver runs on once the run is done (kubeadm's serviceSubnet for the re-issue). */
  serviceSubnet: string;
  apiserverExtraSans: string[];
}

/** The node rollout as both runs declare it: the plan's node moves, and the workers whose address changes on the way. */
export function declareNodeRollout(order: PlanOrder, ids: readonly string[], after: Array<pulumi.Resource | undefined>, args: {
  plan: Plan;
  config: MigrationConfig;
  ssh: SshCredentials;
  kubeconfig: pulumi.Output<string>;
  runId: string;
  workerChanges: NodeAddressChange[];
  /** kubeadm-rejoin: the control-plane nodes joined again as such (lib/nodeMove/controlPlaneRejoin), and etcd to check first. */
  controlPlaneRejoin?: Pick<NodeRolloutArgs, "controlPlaneJoins" | "etcd">;
}): NodeRollout {
  const { plan, config, ssh, kubeconfig, runId } = args;
  const nodes = order.declare("nodes", ids, after, (o) => new NodeRollout("nodes", {
    plan,
    nodes: config.nodes,
    ssh,
    kubeconfig,
    rollout: config.nodeRollout,
    runId,
    ...(config.hostAddress ? { addressChanges: { changes: args.workerChanges, host: config.hostAddress } } : {}),
    ...args.controlPlaneRejoin,
  }, o));
  order.finishedBy(nodes, nodes.done);
  return nodes;
}

/** Control-plane nodes' addresses: one node at a time, once everything before them has finished. */
export function declareControlPlaneAddress(order: PlanOrder, after: pulumi.Resource[], args: ControlPlaneAddressDeclaration): ControlPlaneAddress | undefined {
  if (args.changes.length === 0) return undefined;
  const { etcdTls } = args;
  return order.declare("control-plane-address", [], after, (o) => new ControlPlaneAddress("control-plane-address", {
    ...args.nodeAccess,
    changes: args.changes,
    host: args.host,
    kubeconfig: args.kubeconfig,
    etcd: { endpoints: args.config.etcd.endpoints, caCert: etcdTls.etcdCaCert, cert: etcdTls.etcdCert, key: etcdTls.etcdKey },
    serviceSubnet: args.serviceSubnet,
    apiserverExtraSans: args.apiserverExtraSans,
  }, o));
}

/**
 * A run that changes node addresses only (nodeAddresses without serviceCidr and podCidr; lib/plan/addressRunPlan):
 * preflight and the snapshot, the workers whose address changes rolled in the address plan's batches (drained,
 * re-registered at the new address, under the DNS disruption budget), then control-plane nodes one at a time, then
 * verify. Nothing of the range move is declared: no manifest, Service, ConfigMap or CNI change.
 */
export function declareNodeAddressRun(order: PlanOrder, args: Omit<ControlPlaneAddressDeclaration, "changes" | "serviceSubnet" | "apiserverExtraSans"> & {
  plan: Plan;
  workerChanges: NodeAddressChange[];
  controlPlaneChanges: NodeAddressChange[];
}): { preflight: PreflightGate; nodes: NodeRollout; verify: Verification } {
  const { plan, config, kubeconfig, nodeAccess } = args;
  const { runId, ssh } = nodeAccess;
  const { preflight, snapshot } = declareRunStart(order, { kubeconfig, config, runId, etcdTls: args.etcdTls });
  // while the moved workers drain, one DNS pod keeps answering (nodeRollout.dnsDisruptionBudget), as in a range move
  const dnsBudget = dnsBudgetAroundRollout(order, { config, plan, kubeconfig, runId }, [snapshot]);
  const nodeSteps = order.steps((id) => id.startsWith(NODE_STEP_PREFIX));
  const nodes = declareNodeRollout(order, nodeSteps, [snapshot, dnsBudget.open], { plan, config, ssh, kubeconfig, runId, workerChanges: args.workerChanges });
  const dnsBudgetClose = dnsBudget.close(nodes.done);
  // the apiserver keeps its Service range: the re-issued certificate names the kubernetes Service IP it always had
  const controlPlaneAddress = declareControlPlaneAddress(order, nodes.done, { ...args, changes: args.controlPlaneChanges, serviceSubnet: plan.serviceCidr.to, apiserverExtraSans: [] });
  const verify = order.declare("verify", [stepId.verify], [...(controlPlaneAddress ? [controlPlaneAddress] : nodes.done), dnsBudgetClose], (o) => new Verification("verify", { kubeconfig, config, plan, trigger: runId }, o));
  return { preflight, nodes, verify };
}
