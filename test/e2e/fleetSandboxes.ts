// Sandboxes side by side for the fleet: each in its own directory (CIDR_MIGRATION_SANDBOX_DIR, so free ports) with
// its own stack of this project and its own file backend, as test/e2e/fleet.test.ts and bench/fleet.bench.ts use them.
import { spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { CommandResult, EngineStack, REPO_ROOT } from "./engineStack";
import { SandboxInfo, sandboxDown, sandboxUp } from "../testbed/sandbox";

const CLI = path.join(REPO_ROOT, "bin", "cidr-migration");

export interface FleetSandbox {
  label: string;
  dir: string;
  info: SandboxInfo;
}

/** Runs `fn` with CIDR_MIGRATION_SANDBOX_DIR set to `dir`, which picks that sandbox. */
async function inSandboxDir<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.CIDR_MIGRATION_SANDBOX_DIR;
  process.env.CIDR_MIGRATION_SANDBOX_DIR = dir;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.CIDR_MIGRATION_SANDBOX_DIR;
    else process.env.CIDR_MIGRATION_SANDBOX_DIR = saved;
  }
}

export async function startFleetSandbox(work: string, label: string): Promise<FleetSandbox> {
  const dir = path.join(work, `sandbox-${label}`);
  return { label, dir, info: await inSandboxDir(dir, () => sandboxUp()) };
}

export async function stopFleetSandbox(sandbox: FleetSandbox): Promise<void> {
  await inSandboxDir(sandbox.dir, () => sandboxDown());
}

/** A stack of this project on `sandbox`: the sandbox stack file pointed at its kubeconfig and etcd, with an SSH key. */
export async function fleetStackOn(sandbox: FleetSandbox, name: string, work: string): Promise<EngineStack> {
  const snapshotDir = fs.mkdtempSync(path.join(work, `snapshots-${name}-`));
  const config = fs.readFileSync(path.join(REPO_ROOT, "Pulumi.sandbox.yaml"), "utf8")
    .replace(/kubeconfig: .*/, `kubeconfig: ${sandbox.info.kubeconfigPath}`)
    .replace(/endpoints: \[.*\]/, `endpoints: [http://127.0.0.1:${sandbox.info.ports.etcd}]`)
    .replace(/directory: .*snapshots/, `directory: ${snapshotDir}`)
    .replace(/trigger: sandbox-1/, `trigger: ${name}`);
  const stack = await EngineStack.init(`${name}-${process.pid}`, config);
  const keyFile = path.join(stack.dir, "id_ed25519");
  spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
  await stack.setSecret("ssh.privateKey", fs.readFileSync(keyFile, "utf8"));
  return stack;
}

/** A fleet file over `stacks` (each at its wave), in the shared project directory. */
export function writeFleetFile(file: string, concurrency: number, stacks: Array<{ stack: EngineStack; wave: number; config?: string }>): void {
  fs.writeFileSync(file, [
    `project: ${REPO_ROOT}`,
    `concurrency: ${concurrency}`,
    "stacks:",
    ...stacks.map(({ stack, wave, config }) => `  - { name: ${stack.name}, wave: ${wave}, backend: '${stack.env.PULUMI_BACKEND_URL}'${config ? `, config: ${config}` : ""} }`),
    "",
  ].join("\n"));
}

/** `cidr-migration <args>` as its own process; `onStderr` sees the stderr so far and may signal the process. */
export function fleetCli(args: string[], env: Record<string, string>, onStderr?: (text: string, pid: number) => void): Promise<CommandResult> & { pid?: number } {
  const child = spawn(CLI, args, { cwd: REPO_ROOT, env: { ...process.env, ...env, COLUMNS: "400" }, stdio: ["ignore", "pipe", "pipe"] });
  const result = new Promise<CommandResult>((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      onStderr?.(stderr, child.pid!);
    });
    child.on("error", reject);
    child.on("close", (exitCode, signal) => resolve({ exitCode, signal, stdout, stderr }));
  }) as Promise<CommandResult> & { pid?: number };
  result.pid = child.pid;
  return result;
}
