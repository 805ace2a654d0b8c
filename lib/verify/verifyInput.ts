import { Inventory } from "../plan/inventory";
import { MigrationConfig, RangeMigrationConfig, movesRanges } from "../config/migrationConfig";
import { ClusterObjects } from "../preflight/clusterObjects";

/** Where the migration should have put the two Services every pod depends on. */
export interface VerifyTargets {
  /** The new range's first address (the apiserver re-creates the `kubernetes` Service there). */
  kubernetesServiceIP: string;
  /** The DNS Service's planned ClusterIP. */
  dnsServiceIP: string;
  /** Where dnsServiceIP came from, for the message: "the plan file x.json" or "the plan of the live cluster". */
  dnsSource: string;
}

/** Everything a verify check reads. Checks are pure functions of this. */
export interface VerifyInput {
  config: MigrationConfig;
  /** Services, Nodes and Calico pools, from lib/plan/discovery. */
  inventory: Inventory;
  /** Pods, ConfigMaps, Calico IPAM blocks and block affinities, from the preflight collector. */
  cluster: ClusterObjects;
  /** Absent on a run that changes node addresses only: no Service moves. */
  targets?: VerifyTargets;
}

/** The input of a check of the Service and Pod ranges, which a run that changes node addresses only does not have. */
export interface RangeVerifyInput extends VerifyInput {
  config: RangeMigrationConfig;
  targets: VerifyTargets;
}

export function rangeVerifyInput(input: VerifyInput): RangeVerifyInput | undefined {
  const { config, targets } = input;
  return movesRanges(config) && targets ? { ...input, config, targets } : undefined;
}
