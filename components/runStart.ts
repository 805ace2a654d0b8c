import * as pulumi from "@pulumi/pulumi";
import { PreflightGate } from "../dynamic-providers/clusterAudit";
import { EtcdSnapshot } from "../dynamic-providers/etcdSnapshot";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { expandHome } from "../lib/config/paths";
import { stepId } from "../lib/plan/stepIds";
import { PlanOrder } from "./planOrder";

export interface EtcdTlsInputs {
  etcdCaCert?: pulumi.Output<string>;
  etcdCert?: pulumi.Output<string>;
  etcdKey?: pulumi.Output<string>;
}

/**
 * The first two phases of every run, a range move or node addresses only: preflight, whose blockers stop
 * everything, then an etcd snapshot proven to restore, before anything changes.
 */
export function declareRunStart(order: PlanOrder, args: { kubeconfig: pulumi.Output<string>; config: MigrationConfig; runId: string; etcdTls: EtcdTlsInputs }): { preflight: PreflightGate; snapshot: EtcdSnapshot } {
  const { kubeconfig, config, runId, etcdTls } = args;
  const preflight = order.declare("preflight", [stepId.preflight], [], (o) =>
    new PreflightGate("preflight", { kubeconfig, config, trigger: runId, ...etcdTls }, o));
  const snapshot = order.declare("etcd-snapshot", [stepId.snapshot], [preflight], (o) => new EtcdSnapshot("etcd-snapshot", {
    endpoints: config.etcd.endpoints,
    caCert: etcdTls.etcdCaCert,
    cert: etcdTls.etcdCert,
    key: etcdTls.etcdKey,
    directory: expandHome(config.snapshot.directory),
    trigger: runId,
  }, o));
  return { preflight, snapshot };
}
