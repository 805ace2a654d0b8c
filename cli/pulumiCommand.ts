import { Command } from "commander";
import { currentBackendUrl, removeTruncatedSidecars } from "../engine/fileBackendSidecars";
import { runPulumiWithProgram } from "../engine/inlineCli";
import { PROJECT_DIR, projectProgram } from "../engine/projectProgram";
import { action } from "./run";

/**
 * `cidr-migration pulumi <command> [flags]`: the `pulumi` CLI on this project's program, with the program hosted
 * in this process (engine/inlineCli.ts), so it runs where no pulumi-language-nodejs is installed. Every flag goes
 * to pulumi as typed: `cidr-migration pulumi preview --diff --stack prod` is `pulumi preview --diff --stack prod`.
 * The exit status is pulumi's. A file backend left unreadable by a killed run (engine/fileBackendSidecars.ts) is
 * mended first, saying so.
 */
export function registerPulumiCommand(program: Command): void {
  program
    .command("pulumi")
    .description("run a pulumi command on this program (preview, up, refresh, destroy, stack ...), hosted in this process; flags go to pulumi as typed")
    .argument("<args...>", "the pulumi command and its flags, e.g. preview --diff --stack prod")
    .helpOption(false)
    .allowUnknownOption()
    .passThroughOptions()
    .action(
      action(async (args: string[]) => {
        for (const file of removeTruncatedSidecars(currentBackendUrl())) {
          process.stderr.write(`cidr-migration: removed ${file}: an empty metadata file a killed pulumi run left beside the stack file; the state itself is as that run last saved it\n`);
        }
        const result = await runPulumiWithProgram({
          args,
          cwd: PROJECT_DIR,
          program: projectProgram(),
          onStdout: (text) => process.stdout.write(text),
          onStderr: (text) => process.stderr.write(text),
        });
        return result.exitCode;
      }),
    );
}
