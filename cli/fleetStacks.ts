/**
 * Everything a fleet command checks before it runs anything: the fleet file, that each stack exists, each stack's
 * config (its own, with the fleet file's overrides) and plan from its live cluster, and, when the clusters must be
 * routable together, that no two move to overlapping ranges. Every problem at once, each naming the stack.
 */
import * as path from "path";
import { checkStacksExist, readStackRecord, stackConfigSource } from "../engine/fleetWorkspace";
import { stackPhase } from "../lib/fleet/stackPhase";
import { validateConfig } from "../lib/config/config";
import { ConfigError, ConfigProblem, UserError } from "../lib/config/errors";
import { loadKubeConfig } from "../lib/config/kubeClient";
import { FleetFile, FleetStack, overlappingRanges, parseFleetFile, StackRanges } from "../lib/fleet/fleetFile";
import { discoverInventory } from "../lib/plan/discovery";
import { buildPlan } from "../lib/plan/plan";
import { Plan } from "../lib/plan/planModel";
import { MigrationConfig, movesRanges } from "../lib/config/migrationConfig";
import { KubeConfig } from "@kubernetes/client-node";
import { readInputFile } from "./context";

export async function readFleet(file: string): Promise<FleetFile> {
  const fleet = parseFleetFile(readInputFile("fleet file", file), path.resolve(file));
  await checkStacksExist(fleet);
  return fleet;
}

/**
 * The stacks whose verify already ran. They are left out of planning: their clusters are in the new ranges, so
 * their config's `from` ranges no longer match what discovery finds, and there is nothing left to plan.
 */
export async function doneStacks(fleet: FleetFile): Promise<Set<FleetStack>> {
  const done = new Set<FleetStack>();
  for (const stack of fleet.stacks) if (stackPhase(await readStackRecord(fleet, stack)).phase === "done") done.add(stack);
  return done;
}

export interface PlannedStack {
  config: MigrationConfig;
  kubeConfig: KubeConfig;
  plan: Plan;
}

/** Each stack's config and plan, keyed by stack; refuses (ConfigError, exit 2) with every problem of every stack. */
export async function planStacks(fleet: FleetFile): Promise<Map<FleetStack, PlannedStack>> {
  const plans = new Map<FleetStack, PlannedStack>();
  const ranges = new Map<string, StackRanges>();
  const problems: ConfigProblem[] = [];
  for (const stack of fleet.stacks) {
    try {
      const source = await stackConfigSource(fleet, stack);
      const config = validateConfig(source);
      if (!movesRanges(config)) {
        // a fleet moves ranges, wave by wave, and checks them across clusters
        problems.push({ key: `stack ${stack.name}`, message: `changes node addresses only (no serviceCidr or podCidr): a fleet moves Service and Pod ranges; run it on its own (\`pulumi up --stack ${stack.name}\`), or remove it from the fleet file` });
        continue;
      }
      ranges.set(stack.name, { serviceCidr: config.serviceCidr.to, podCidr: config.podCidr.to });
      const kubeConfig = loadKubeConfig(config.kubeconfig, `stack ${stack.name}: cidr-migration:kubeconfig`);
      const inventory = await discoverInventory(kubeConfig);
      const checked = validateConfig(source, { inventory });
      plans.set(stack, { config: checked, kubeConfig, plan: buildPlan(checked, inventory) });
    } catch (err) {
      if (err instanceof ConfigError) problems.push(...err.problems.map((p) => ({ key: p.key.startsWith("stack ") ? p.key : `stack ${stack.name}: ${p.key}`, message: p.message })));
      else if (err instanceof UserError) problems.push({ key: `stack ${stack.name}`, message: err.message });
      else throw err;
    }
  }
  problems.push(...overlappingRanges(fleet, ranges));
  if (problems.length > 0) throw new ConfigError(problems);
  return plans;
}
