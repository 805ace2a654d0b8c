/**
 * The etcd rewrite's part of the graph (services.strategy etcd-rewrite), in the plan's order: backups; the serving
 * certificates while every apiserver still runs (old and new kubernetes Service IP as SANs); the old-IP bridges (the
 * DNS and kubernetes Services' among them: pods reach them at their old IPs until they restart); every apiserver and
 * KCM stopped; the rewrite; each control-plane node started on the new flags. index.ts declares it in place of the
 * re-create strategy's control-plane, Services and DNS stand-in steps; what follows waits for `start`.
 */
import * as pulumi from "@pulumi/pulumi";
import { EtcdRewrite, movesForPreview } from "../dynamic-providers/etcdRewrite";
import { OldIpBridgeOpen } from "../dynamic-providers/oldIpBridgeOpen";
import { RangeMigrationConfig } from "../lib/config/migrationConfig";
import { expandHome } from "../lib/config/paths";
import { bridgeTargets, rewriteTargetsFromPlan } from "../lib/etcdRewrite/rewriteTargets";
import { Plan } from "../lib/plan/planModel";
import { SERVICE_STEP_PREFIX, stepId } from "../lib/plan/stepIds";
import { serviceRefKey } from "../lib/serviceMove/serviceRef";
import { ApiserverCerts } from "./apiserverCerts";
import { NodeAccessArgs } from "./controlPlane";
import { ControlPlaneBackup, ControlPlaneStart, ControlPlaneStop } from "./controlPlaneRewrite";
import { PlanOrder } from "./planOrder";

export interface RewriteWindowArgs {
  plan: Plan;
  config: RangeMigrationConfig;
  nodeAccess: NodeAccessArgs;
  kubeconfig: pulumi.Input<string>;
  etcdTls: { etcdCaCert?: pulumi.Input<string>; etcdCert?: pulumi.Input<string>; etcdKey?: pulumi.Input<string> };
  runId: string;
  /** What the window waits for: the proven snapshot. */
  after: pulumi.Resource;
  /** kubeadm-config's ClusterConfiguration, for the certificates. */
  clusterConfiguration: pulumi.Input<string>;
}

const isStep = (step: string) => (id: string) => id.startsWith("control-plane/") && id.endsWith(`/${step}`);

export function declareRewriteWindow(order: PlanOrder, args: RewriteWindowArgs): { rewrite: EtcdRewrite; start: ControlPlaneStart } {
  const { plan, config, nodeAccess } = args;
  const backup = order.declare("control-plane-backup", order.steps(isStep("backup")), [args.after], (o) => new ControlPlaneBackup("control-plane-backup", nodeAccess, o));
  const certs = order.declare("apiserver-certs", order.steps(isStep("apiserver-cert")), [backup], (o) => new ApiserverCerts("apiserver-certs", {
    ...nodeAccess,
    serviceCidr: config.serviceCidr,
    clusterConfiguration: args.clusterConfiguration,
  }, o));
  const targets = rewriteTargetsFromPlan(plan);
  const bridged = bridgeTargets(targets, config.services.bridgeOldIps ? undefined : [serviceRefKey(plan.dns), "default/kubernetes"]);
  const bridges = order.declare("old-ip-bridges-open", [], [certs], (o) => new OldIpBridgeOpen("old-ip-bridges-open", { kubeconfig: args.kubeconfig, services: bridged, trigger: args.runId }, o));
  const stop = order.declare("control-plane-stop", order.steps(isStep("stop")), [certs, bridges], (o) => new ControlPlaneStop("control-plane-stop", nodeAccess, o));
  const rewriteSteps = [stepId.etcdRewrite, ...order.steps((id) => id.startsWith(SERVICE_STEP_PREFIX))];
  const rewrite = order.declare("etcd-rewrite", rewriteSteps, [stop], (o) => new EtcdRewrite("etcd-rewrite", {
    endpoints: config.etcd.endpoints,
    caCert: args.etcdTls.etcdCaCert,
    cert: args.etcdTls.etcdCert,
    key: args.etcdTls.etcdKey,
    apiservers: nodeAccess.nodes.map((n) => `https://${n.host.includes(":") ? `[${n.host}]` : n.host}:6443`),
    serviceCidr: { from: config.serviceCidr.from, to: config.serviceCidr.to },
    podCidr: targets.podCidr,
    ...movesForPreview(targets),
    journalDirectory: expandHome(config.snapshot.directory),
    trigger: args.runId,
  }, o));
  const isStart = (id: string) => isStep("kube-apiserver")(id) || isStep("kube-controller-manager")(id);
  const start = order.declare("control-plane-start", order.steps(isStart), [rewrite], (o) => new ControlPlaneStart("control-plane-start", {
    ...nodeAccess,
    stopped: stop.steps,
    serviceCidr: config.serviceCidr,
    podCidr: config.podCidr,
  }, o));
  return { rewrite, start };
}
