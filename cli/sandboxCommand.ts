import { Command } from "commander";
import { EXIT_UNREACHABLE, UserError } from "../lib/config/errors";
import { action, writeJson } from "./run";

/**
 * `cidr-migration sandbox up|down|status`: the local control plane (real etcd, kube-apiserver, KCM on loopback) seeded
 * with a realistic workload in the old ranges. With --nodes: the node lab instead, a real 3-node kubeadm cluster
 * (containerd, kubelet, Flannel, kube-proxy, CoreDNS) with a stack `nodes` for it. The only CLI command that changes
 * anything, and only on this machine.
 */

// Loaded lazily: the test bed pulls in process management that the read-only commands do not need.
const sandbox = () => import("../test/testbed/sandbox");
const nodeLab = () => import("../test/testbed/nodes/labStack");

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

/** A node-lab step; its failure (not root, a build, a node that would not start) is its own one-line reason. */
async function labCall<T>(step: (lab: Awaited<ReturnType<typeof nodeLab>>) => Promise<T>): Promise<T> {
  const lab = await nodeLab();
  try {
    return await step(lab);
  } catch (err) {
    throw new UserError(`node lab: ${String((err as Error)?.message ?? err).split("\n")[0]}`, EXIT_UNREACHABLE);
  }
}

export function registerSandboxCommand(program: Command): void {
  const cmd = program.command("sandbox").description("a local control plane with a seeded workload, for trying the tool");
  cmd
    .command("up")
    .description("start the sandbox (or report the running one) and print its kubeconfig path")
    .option("--nodes", "the node lab: a real 3-node kubeadm cluster and the stack `nodes` for it (root; builds what is missing, about 2 min once built)")
    .action(
      action(async (opts: { nodes?: boolean }) => {
        if (opts.nodes) {
          const lab = await labCall((l) => l.labUp());
          process.stderr.write(
            `cidr-migration: the node lab runs (${lab.nodes.map((n) => `${n.name} ${n.ip}`).join(", ")}); its stack is ${lab.stack}:\n` +
              `  . ${lab.envFile}\n  npx cidr-migration pulumi preview --diff --stack ${lab.stack}\n`,
          );
          process.stdout.write(`${lab.kubeconfigPath}\n`);
          return;
        }
        process.stdout.write(`${(await ensureSandboxRunning("starting the local sandbox (about 30 s)")).kubeconfigPath}\n`);
      }),
    );
  cmd
    .command("down")
    .description("stop the sandbox and remove its data; with --nodes, the node lab: every namespace, mount, process and its stack")
    .option("--nodes", "the node lab")
    .action(
      action(async (opts: { nodes?: boolean }) => {
        if (opts.nodes) return void (await labCall((l) => l.labDown()));
        await (await sandbox()).sandboxDown();
      }),
    );
  cmd
    .command("status")
    .description("print whether the sandbox (with --nodes, the node lab) runs, as JSON; exit 1 when it does not")
    .option("--nodes", "the node lab")
    .action(
      action(async (opts: { nodes?: boolean }) => {
        const status = opts.nodes ? (await nodeLab()).labStatus() : await (await sandbox()).sandboxStatus();
        writeJson(status);
        return status.running ? 0 : 1;
      }),
    );
  cmd.argument("[subcommand]").action((sub?: string) => {
    if (sub !== undefined) throw new UserError(`sandbox ${sub}: unknown subcommand; use up, down or status`);
    throw new UserError("sandbox needs a subcommand: up, down or status");
  });
}
