import { MigrationConfig } from "../config/migrationConfig";
import { PlanWarning, ServiceMove } from "./planModel";

/**
 * At thousands of Services the re-create strategy's run is long: each Service is its own delete and create, held
 * to a gap budget per Service. bench:services measured 10,000 in 271 s on the project's 2-core test bed (about 37
 * moves a second); bench:etcd-rewrite moved the same 10,000 (and 1,000 Nodes) in one apiserver stop of 11 s. The
 * plan says so, with the trade-off, so that the operator chooses before the window rather than during it.
 */
export const MANY_SERVICES = 2_000;
const MEASURED_MOVES_PER_SECOND = 37;

export function largeServiceMoveWarning(config: MigrationConfig, services: readonly ServiceMove[]): PlanWarning[] {
  const moving = services.filter((s) => s.action === "recreate").length;
  if (moving < MANY_SERVICES || config.services.strategy !== "recreate") return [];
  const minutes = Math.max(1, Math.round(moving / MEASURED_MOVES_PER_SECOND / 60));
  const alternative = config.secondFamily
    ? "the etcd-rewrite strategy, which does it in one apiserver stop, is not available to a dual-stack run"
    : "services.strategy etcd-rewrite moves them all in one apiserver stop instead (10,000 in 11 s there), with the whole API down for that stop rather than a gap per Service";
  return [{
    code: "MANY_SERVICES_RECREATED",
    message: `${moving} Services are re-created one by one: about ${minutes} min at the ${MEASURED_MOVES_PER_SECOND} moves a second measured on a 2-core control plane (more on a larger one); ${alternative}`,
    object: "services.strategy",
  }];
}
