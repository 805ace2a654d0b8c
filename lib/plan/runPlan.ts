import { MigrationConfig, movesRanges } from "../config/migrationConfig";
import { planAddressRun } from "./addressRunPlan";
import { Inventory } from "./inventory";
import { planNodeAddresses } from "./nodeAddressPlan";
import { buildPlan } from "./plan";
import { Plan } from "./planModel";

/** The plan a run carries out: a range move's, or (nodeAddresses without serviceCidr and podCidr) the address run's. */
export function planRun(config: MigrationConfig, inventory: Inventory): Plan {
  return movesRanges(config) ? buildPlan(config, inventory) : planAddressRun(config, inventory, planNodeAddresses(config, inventory));
}
