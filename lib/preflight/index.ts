import { KubeConfig } from "@kubernetes/client-node";
import { buildReport, Finding, FindingReport } from "../report/findings";
import { MigrationConfig } from "../config/migrationConfig";
import { checkCapacityAndVersions } from "./capacityAndVersions";
import { PreflightInput } from "./checkInput";
import { checkClusterKind } from "./clusterKind";
import { collectClusterObjects } from "./collect";
import { kubernetesServiceIP } from "../net/cidr";
import { checkBridgeAdmission, givesExternalIps, probeBridgeAdmission } from "./bridgeAdmission";
import { checkDrains } from "./drains";
import { checkDnsReplicas } from "./dnsReplicas";
import { checkEtcd } from "./etcd";
import { EtcdAccess } from "./etcdAccess";
import { checkEtcdRewriteControlPlane } from "./etcdRewriteControlPlane";
import { checkEtcdRewriteStorage } from "./etcdRewriteStorage";
import { probeEtcd } from "./etcdProbe";
import { checkHardCodedAddresses } from "./hardCodedAddresses";
import { checkOldNodeAddresses } from "./oldNodeAddresses";
import { checkServices } from "./services";
import { checkSizeAndShape, countFixedIpDependencies } from "./sizeAndShape";

/**
 * `cidr-migration preflight`, also the graph's first phase: read-only checks whose blockers stop the run before
 * anything changes. collect → probe etcd → pure checks → one sorted report.
 */

export { PreflightInput } from "./checkInput";
export { EtcdAccess, etcdAccessFromConfig } from "./etcdAccess";

/** The pure part: every check family over the collected data. */
export function preflightFindings(input: PreflightInput): Finding[] {
  const findings = [
    ...checkClusterKind(input),
    ...checkHardCodedAddresses(input),
    ...checkOldNodeAddresses(input),
    ...checkServices(input),
    ...checkDrains(input),
    ...checkDnsReplicas(input),
    ...checkCapacityAndVersions(input),
    ...checkEtcd(input),
    ...checkEtcdRewriteControlPlane(input),
    ...checkEtcdRewriteStorage(input),
    ...checkBridgeAdmission(input),
  ];
  // Size and shape weighs the fixed-IP dependencies the other families found.
  findings.push(...checkSizeAndShape(input, countFixedIpDependencies(findings)));
  return findings;
}

export interface RunPreflightOptions {
  config: MigrationConfig;
  kubeConfig: KubeConfig;
  etcd: EtcdAccess;
  allowSecretValues?: boolean;
}

export interface PreflightRun {
  report: FindingReport;
  /** Wall-clock milliseconds spent collecting and checking, for the bench. */
  timings: { collectMs: number; checkMs: number };
}

export async function runPreflight(opts: RunPreflightOptions): Promise<PreflightRun> {
  const started = performance.now();
  const [cluster, etcd, bridgeAdmission] = await Promise.all([
    collectClusterObjects(opts.kubeConfig),
    probeEtcd({
      endpoints: opts.config.etcd.endpoints,
      credentials: opts.etcd.credentials,
      skippedReason: opts.etcd.skippedReason,
      snapshotDirectory: opts.config.snapshot.directory,
      sampleRewriteKeys: opts.config.services.strategy === "etcd-rewrite",
    }),
    // any address of the old Service range will do: admission judges the field, not the address
    opts.config.serviceCidr && givesExternalIps(opts.config) ? probeBridgeAdmission(opts.kubeConfig, kubernetesServiceIP(opts.config.serviceCidr.from)) : undefined,
  ]);
  const collected = performance.now();
  const findings = preflightFindings({ config: opts.config, cluster, etcd, bridgeAdmission, allowSecretValues: opts.allowSecretValues === true });
  const report = buildReport("preflight", findings);
  return { report, timings: { collectMs: collected - started, checkMs: performance.now() - collected } };
}
