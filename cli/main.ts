import { Command, CommanderError } from "commander";
import { EXIT_INVALID_INPUT } from "../lib/config/errors";
import { registerFleetCommand } from "./fleetCommand";
import { registerGateCommand } from "./gateCommand";
import { registerInventoryCommand } from "./inventoryCommand";
import { registerPlanCommand } from "./planCommand";
import { registerPreflightCommand } from "./preflightCommand";
import { registerPulumiCommand } from "./pulumiCommand";
import { registerReportCommand } from "./reportCommand";
import { registerRestoreCommand } from "./restoreCommand";
import { registerSandboxCommand } from "./sandboxCommand";
import { registerVerifyCommand } from "./verifyCommand";

/** The `cidr-migration` command line. Only `sandbox` and `pulumi up|destroy` change anything; every other command is read-only. */
export function buildProgram(): Command {
  const program = new Command("cidr-migration")
    .description("Plan, check and verify moving a live kubeadm cluster's Service and Pod CIDRs")
    .exitOverride()
    .enablePositionalOptions()
    .configureOutput({ outputError: (text, write) => write(`cidr-migration: ${text.replace(/^error: /, "")}`) });
  registerInventoryCommand(program);
  registerPlanCommand(program);
  registerPreflightCommand(program);
  registerVerifyCommand(program);
  registerGateCommand(program);
  registerReportCommand(program);
  registerRestoreCommand(program);
  registerSandboxCommand(program);
  registerPulumiCommand(program);
  registerFleetCommand(program);
  // A stray argument (`plan extra`) is a mistake, never silently ignored: refused with exit 2, on every command.
  const strict = (cmd: Command): void => {
    cmd.exitOverride().allowExcessArguments(false);
    cmd.commands.forEach(strict);
  };
  program.allowExcessArguments(false);
  program.commands.forEach(strict);
  return program;
}

if (require.main === module || process.argv[1]?.endsWith("cidr-migration")) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      if (err instanceof CommanderError) {
        // --help and --version exit 0; usage mistakes are invalid input.
        process.exitCode = err.exitCode === 0 ? 0 : EXIT_INVALID_INPUT;
        return;
      }
      process.stderr.write(`cidr-migration: ${String((err as Error)?.message ?? err).split("\n")[0]}\n`);
      process.exitCode = EXIT_INVALID_INPUT;
    });
}
