/**
 * Runs one `pulumi` CLI command (preview, up, refresh, destroy, stack ...) on this project's program, with the
 * program hosted in this Node process: the way the Automation API runs inline programs. The SDK's LanguageServer
 * serves the program over gRPC on a loopback port and the CLI connects to it with `--client`, so no
 * pulumi-language-nodejs binary is needed (the Go module proxy refuses it; see test/testbed/build/pulumi.sh).
 *
 * Why not LocalWorkspace alone: its preview/up take no `--json`, `--diff` or `--expect-no-changes`, and the gate
 * reads the real `pulumi preview --json` document. This runs exactly the command a user would type, flags and all.
 * The LanguageServer is the SDK's own (@pulumi/pulumi/automation/server, pinned with @pulumi/pulumi); it has no
 * type declarations, so its shape is declared here.
 */
import { spawn } from "child_process";
import * as grpc from "@grpc/grpc-js";
import { PulumiFn } from "@pulumi/pulumi/automation";

interface LanguageServerShape {
  onPulumiExit(hasError: boolean): void;
}
/* eslint-disable @typescript-eslint/no-require-imports */
const { LanguageServer } = require("@pulumi/pulumi/automation/server") as { LanguageServer: new (program: PulumiFn) => LanguageServerShape };
const { LanguageRuntimeService } = require("@pulumi/pulumi/proto/language_grpc_pb") as { LanguageRuntimeService: grpc.ServiceDefinition };
/* eslint-enable @typescript-eslint/no-require-imports */

/** Commands that run the program; the others (stack, config, cancel, ...) take no `--client`. */
const PROGRAM_COMMANDS = new Set(["preview", "up", "update", "refresh", "destroy"]);

export interface InlineCliRun {
  /** The CLI's arguments, e.g. ["preview", "--json", "--stack", "prod"]. */
  args: string[];
  /** The project directory (Pulumi.yaml, Pulumi.<stack>.yaml). */
  cwd: string;
  program: PulumiFn;
  /** Streams, as they come (the progress of a long `up`). */
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
}

export interface InlineCliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Starts the program's language server on a loopback port; resolves with the address and a stop function. */
async function serveProgram(program: PulumiFn): Promise<{ address: string; stop: (hasError: boolean) => void }> {
  const server = new grpc.Server({ "grpc.max_receive_message_length": 400 * 1024 * 1024 });
  const languageServer = new LanguageServer(program);
  server.addService(LanguageRuntimeService, languageServer as unknown as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return {
    address: `127.0.0.1:${port}`,
    stop: (hasError) => {
      languageServer.onPulumiExit(hasError);
      server.forceShutdown();
    },
  };
}

/** Runs the command to its end; a non-zero exit is returned, not thrown (preview's exit status is the verdict). */
export async function runPulumiWithProgram(run: InlineCliRun): Promise<InlineCliResult> {
  const [command] = run.args;
  const hosted = PROGRAM_COMMANDS.has(command) ? await serveProgram(run.program) : undefined;
  const args = [...run.args, "--non-interactive", ...(hosted ? [`--client=${hosted.address}`, "--exec-kind", "auto.inline"] : [])];
  let exitCode = 1;
  try {
    const result = await new Promise<InlineCliResult>((resolve, reject) => {
      const child = spawn("pulumi", args, {
        cwd: run.cwd,
        env: { ...process.env, PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_AUTOMATION_API: "true" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const stdout: string[] = [];
      const stderr: string[] = [];
      const collect = (into: string[], forward?: (text: string) => void) => (d: Buffer) => {
        const text = d.toString();
        into.push(text);
        forward?.(text);
      };
      child.stdout.on("data", collect(stdout, run.onStdout));
      child.stderr.on("data", collect(stderr, run.onStderr));
      child.on("error", (err) => reject(new Error(`cannot run pulumi (${err.message}); put the Pulumi CLI on PATH (test/testbed/build/pulumi.sh builds it)`)));
      // Ctrl-C reaches the CLI (same process group), which cancels cleanly; this process waits for it to finish.
      child.on("close", (code) => resolve({ exitCode: code ?? 1, stdout: stdout.join(""), stderr: stderr.join("") }));
    });
    exitCode = result.exitCode;
    return result;
  } finally {
    hosted?.stop(exitCode !== 0);
  }
}
