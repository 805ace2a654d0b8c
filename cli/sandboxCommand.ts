import { Command } from "commander";
import { EXIT_UNREACHABLE, UserError } from "../lib/config/errors";
import { action, writeJson } from "./run";

/**
 * `cidr-migration sandbox up|down|status`: the local control plane (real etcd, kube-apiserver, KCM on loopback) seeded
 * with a realistic workload in the old ranges. The only CLI command that changes anything, and only on this machine.
 */

// Loaded lazily: the test bed pulls in process management that the read-only commands do not need.
const sandbox = () => import("../test/testbed/sandbox");

export interface SandboxEndpoints {
  kubeconfigPath: string;
  /** The sandbox picks free ports when it starts, so its etcd endpoint is read from its state, not the stack file. */
  etcdEndpoint: string;
}

/**
 * Starts the sandbox when it is not running; returns where to reach it. `why` is the line printed before a start:
 * a command with no cluster named says so, `sandbox up` was asked for the sandbox and only says it starts.
 */
export async function ensureSandboxRunning(
  why = "no cluster named; starting the local sandbox (cidr-migration sandbox up)",
): Promise<SandboxEndpoints> {
  const s = await sandbox();
  const status = await s.sandboxStatus();
  const info = status.running ? status : await startSandbox(s, why);
  return { kubeconfigPath: info.kubeconfigPath, etcdEndpoint: `http://127.0.0.1:${info.ports.etcd}` };
}

async function startSandbox(s: Awaited<ReturnType<typeof sandbox>>, why: string) {
  process.stderr.write(`cidr-migration: ${why}\n`);
  try {
    return await s.sandboxUp();
  } catch (err) {
    // the sandbox could not start (binaries missing, a port, a timeout): its own one-line reason, not an internal error
    throw new UserError(String((err as Error)?.message ?? err).split("\n")[0], EXIT_UNREACHABLE);
  }
}

export function registerSandboxCommand(program: Command): void {
  const cmd = program.command("sandbox").description("a local control plane with a seeded workload, for trying the tool");
  cmd
    .command("up")
    .description("start the sandbox (or report the running one) and print its kubeconfig path")
    .action(
      action(async () => {
        process.stdout.write(`${(await ensureSandboxRunning("starting the local sandbox (about 30 s)")).kubeconfigPath}\n`);
      }),
    );
  cmd
    .command("down")
    .description("stop the sandbox and remove its data")
    .action(
      action(async () => {
        await (await sandbox()).sandboxDown();
      }),
    );
  cmd
    .command("status")
    .description("print whether the sandbox runs, as JSON; exit 1 when it does not")
    .action(
      action(async () => {
        const status = await (await sandbox()).sandboxStatus();
        writeJson(status);
        return status.running ? 0 : 1;
      }),
    );
  cmd.argument("[subcommand]").action((sub?: string) => {
    if (sub !== undefined) throw new UserError(`sandbox ${sub}: unknown subcommand; use up, down or status`);
    throw new UserError("sandbox needs a subcommand: up, down or status");
  });
}
