import { MigrationConfig, RangeMigrationConfig, movesRanges } from "../config/migrationConfig";
import { ClusterObjects } from "./clusterObjects";
import { EtcdProbe } from "./etcdProbe";
import { BridgeAdmission } from "./bridgeAdmission";

/** Everything a preflight check reads. Checks are pure functions of this: no I/O, no clock. */
export interface PreflightInput {
  config: MigrationConfig;
  cluster: ClusterObjects;
  /** Report where in a Secret each address is; by default only a count per Secret (see hardCodedAddresses.ts). */
  allowSecretValues: boolean;
  /** etcd health and the snapshot directory, probed before the checks run; undefined skips the etcd checks. */
  etcd?: EtcdProbe;
  /** Whether admission lets a Service carry an externalIP, probed when services.bridgeOldIps is on. */
  bridgeAdmission?: BridgeAdmission;
}

/** The input of a check of the Service and Pod ranges, which a run that changes node addresses only does not have. */
export interface RangePreflightInput extends PreflightInput {
  config: RangeMigrationConfig;
}

export function rangeInput(input: PreflightInput): RangePreflightInput | undefined {
  const { config } = input;
  return movesRanges(config) ? { ...input, config } : undefined;
}

/** Names an object the way findings do: "Kind namespace/name" or "Kind name". */
export function objectLabel(kind: string, meta: { namespace?: string; name?: string } | undefined): string {
  return meta?.namespace ? `${kind} ${meta.namespace}/${meta.name}` : `${kind} ${meta?.name ?? "?"}`;
}

/** A map key in a path, as JSON would quote it: data["prometheus.yml"]. */
export function keyPath(prefix: string, key: string): string {
  return `${prefix}[${JSON.stringify(key)}]`;
}
