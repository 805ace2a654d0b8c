import { Command } from "commander";
import { KubeConfig } from "@kubernetes/client-node";
import { existsSync, readFileSync } from "fs";
import * as path from "path";
import { validateConfig, ValidationContext } from "../lib/config/config";
import { ConfigSource } from "../lib/config/configReader";
import { discoverInventory } from "../lib/plan/discovery";
import { UserError } from "../lib/config/errors";
import { Inventory } from "../lib/plan/inventory";
import { checkInventory } from "../lib/plan/inventoryCheck";
import { loadKubeConfig } from "../lib/config/kubeClient";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { Sensitive } from "../lib/config/sensitive";
import { readStackFile, stackFilePath } from "../lib/config/stackFile";

/** Where the CLI gets its config and its cluster: shared by plan, preflight, verify, gate and restore. */

export const PROJECT_DIR = path.resolve(__dirname, "..");
export const SANDBOX_STACK = "sandbox";

export interface SourceOptions {
  stack?: string;
  config?: string;
  kubeconfig?: string;
  inventory?: string;
}

/** --stack, --config and --kubeconfig: where the config and the cluster come from. */
export function addStackOptions(cmd: Command): Command {
  return cmd
    .option("--stack <name>", "read Pulumi.<name>.yaml (default: the local sandbox stack)")
    .option("--config <file>", "read this Pulumi.<stack>.yaml file")
    .option("--kubeconfig <file>", "admin kubeconfig (default: the stack's cidr-migration:kubeconfig)");
}

/** The stack options plus --inventory, for commands that can plan from a recorded inventory. */
export function addSourceOptions(cmd: Command): Command {
  return addStackOptions(cmd).option("--inventory <file>", "plan from an inventory JSON written by `cidr-migration inventory`");
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

export type EnsureSandbox = () => Promise<{ kubeconfigPath: string; etcdEndpoint: string }>;

export interface LoadedCluster {
  config: MigrationConfig;
  source: ConfigSource;
  /** Where the cluster was named: --kubeconfig, the sandbox, or the stack's cidr-migration:kubeconfig. */
  kubeconfig: { path?: string; content?: Sensitive };
  kubeconfigWhat: string;
}

/**
 * The validated config (bad input stops before any cluster call) and where its cluster is. The sandbox stack, with no
 * cluster named, means the local sandbox: started when not running, its etcd endpoint taken from its live state.
 */
export async function loadConfigAndCluster(opts: SourceOptions, ensureSandbox: EnsureSandbox, validation: Pick<ValidationContext, "planOnly"> = {}): Promise<LoadedCluster> {
  const choice = chooseStackFile(opts);
  const source = readStackFile(choice.file);
  let config = validateConfig(source, validation);
  const sandbox = choice.isSandbox && !opts.kubeconfig && !opts.inventory ? await ensureSandbox() : undefined;
  if (sandbox) {
    source.values = { ...source.values, etcd: { ...(source.values.etcd as object), endpoints: [sandbox.etcdEndpoint] } };
    config = validateConfig(source, validation);
  }
  const kubeconfig = opts.kubeconfig ? { path: opts.kubeconfig } : sandbox ? { path: sandbox.kubeconfigPath } : config.kubeconfig;
  return { config, source, kubeconfig, kubeconfigWhat: opts.kubeconfig ? "--kubeconfig" : "cidr-migration:kubeconfig" };
}

/** As loadConfigAndCluster, with a client for the cluster. */
export async function loadConfigAndKubeConfig(opts: SourceOptions, ensureSandbox: EnsureSandbox): Promise<{ config: MigrationConfig; kubeConfig: KubeConfig }> {
  const loaded = await loadConfigAndCluster(opts, ensureSandbox);
  return { config: loaded.config, kubeConfig: loadKubeConfig(loaded.kubeconfig, loaded.kubeconfigWhat) };
}

export interface LoadedSources {
  config: MigrationConfig;
  inventory: Inventory;
  source: ConfigSource;
}

/** As loadConfigAndCluster, then the inventory (from --inventory or discovery), then validation again with it. */
export async function loadConfigAndInventory(opts: SourceOptions, ensureSandbox: EnsureSandbox, validation: Pick<ValidationContext, "planOnly"> = {}): Promise<LoadedSources> {
  if (opts.inventory && opts.kubeconfig) throw new UserError("--inventory and --kubeconfig are two sources of the cluster; pass only one");
  const loaded = await loadConfigAndCluster(opts, ensureSandbox, validation);
  const inventory = opts.inventory
    ? readInventoryFile(opts.inventory)
    : await discoverInventory(loadKubeConfig(loaded.kubeconfig, loaded.kubeconfigWhat));
  return { config: validateConfig(loaded.source, { ...validation, inventory }), inventory, source: loaded.source };
}

/** A file the operator named, as text; a missing or unreadable one is one line naming the flag. */
export function readInputFile(flag: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(`${flag} ${file}: cannot read the file (${(err as NodeJS.ErrnoException).code ?? String(err)}); check the path`);
  }
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
  return checkInventory(inv, `--inventory ${file}`);
}
