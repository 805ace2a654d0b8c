import { existsSync, readFileSync } from "fs";
import * as path from "path";
import { validateConfig, ConfigSource } from "../lib/config";
import { discoverInventory } from "../lib/discovery";
import { UserError } from "../lib/errors";
import { Inventory } from "../lib/inventory";
import { loadKubeConfig } from "../lib/kubeClient";
import { MigrationConfig } from "../lib/migrationConfig";
import { readStackFile, stackFilePath } from "../lib/stackFile";

/** Where the CLI gets its config and its cluster: shared by plan, preflight, verify, gate and restore. */

export const PROJECT_DIR = path.resolve(__dirname, "..");
export const SANDBOX_STACK = "sandbox";

export interface SourceOptions {
  stack?: string;
  config?: string;
  kubeconfig?: string;
  inventory?: string;
}

export interface StackChoice {
  file: string;
  isSandbox: boolean;
}

/** --config FILE, else --stack NAME (in the current directory, then the project's), else the sandbox stack. */
export function chooseStackFile(opts: SourceOptions): StackChoice {
  if (opts.config && opts.stack) throw new UserError("--config and --stack name the same thing; pass only one");
  if (opts.config) return { file: path.resolve(opts.config), isSandbox: false };
  const stack = opts.stack ?? SANDBOX_STACK;
  const candidates = [stackFilePath(stack, process.cwd()), stackFilePath(stack, PROJECT_DIR)];
  const file = candidates.find((f) => existsSync(f));
  if (!file) throw new UserError(`--stack ${stack}: no Pulumi.${stack}.yaml in ${process.cwd()} or ${PROJECT_DIR}; create it or pass --config FILE`);
  return { file, isSandbox: stack === SANDBOX_STACK };
}

export interface LoadedSources {
  config: MigrationConfig;
  inventory: Inventory;
  source: ConfigSource;
}

/**
 * Validates the config first (bad input stops before any cluster call), then reads the inventory, then validates
 * again with it (capacity and node-address checks need the live cluster).
 */
export async function loadConfigAndInventory(opts: SourceOptions, ensureSandbox: () => Promise<string>): Promise<LoadedSources> {
  const choice = chooseStackFile(opts);
  const source = readStackFile(choice.file);
  const config = validateConfig(source);
  let inventory: Inventory;
  if (opts.inventory) {
    if (opts.kubeconfig) throw new UserError("--inventory and --kubeconfig are two sources of the cluster; pass only one");
    inventory = readInventoryFile(opts.inventory);
  } else {
    const kubeconfig = opts.kubeconfig
      ? { path: opts.kubeconfig }
      : choice.isSandbox
        ? { path: await ensureSandbox() }
        : config.kubeconfig;
    inventory = await discoverInventory(loadKubeConfig(kubeconfig, opts.kubeconfig ? "--kubeconfig" : "cidr-migration:kubeconfig"));
  }
  return { config: validateConfig(source, { inventory }), inventory, source };
}

export function readInventoryFile(file: string): Inventory {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new UserError(`--inventory ${file}: not a readable JSON file (${(err as Error).message.split("\n")[0]}); write one with: cidr-migration inventory --kubeconfig FILE > ${file}`);
  }
  const inv = data as Partial<Inventory>;
  if (!inv || !Array.isArray(inv.services) || !Array.isArray(inv.nodes) || !inv.cni || !inv.serverVersion) {
    throw new UserError(`--inventory ${file}: not an inventory (needs serverVersion, services, nodes, cni); write one with: cidr-migration inventory --kubeconfig FILE`);
  }
  return inv as Inventory;
}
