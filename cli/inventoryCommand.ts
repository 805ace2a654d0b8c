import { Command } from "commander";
import { discoverInventory } from "../lib/plan/discovery";
import { loadKubeConfig } from "../lib/config/kubeClient";
import { action, writeJson } from "./run";

export function registerInventoryCommand(program: Command): void {
  program
    .command("inventory")
    .description("print what discovery reads from the cluster, as JSON (read-only)")
    .requiredOption("--kubeconfig <file>", "admin kubeconfig of the cluster")
    .action(
      action(async (opts: { kubeconfig: string }) => {
        writeJson(await discoverInventory(loadKubeConfig({ path: opts.kubeconfig }, "--kubeconfig")));
      }),
    );
}
