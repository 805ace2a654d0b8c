import * as assert from "assert";
import { MigrationConfig, RangeMigrationConfig, movesRanges } from "../../lib/config/migrationConfig";

/** A validated config that moves ranges, typed so: what the range checks and the CIDR plan take. */
export function rangeConfig(config: MigrationConfig): RangeMigrationConfig {
  assert.ok(movesRanges(config), "the test's config sets serviceCidr and podCidr");
  return config;
}
