// A stack of this project on the sandbox, driven by the real Pulumi engine as a user drives it: the `pulumi` CLI
// for stack and config commands, and `cidr-migration pulumi ...` (the program hosted in-process) for preview, up,
// refresh and destroy. The state is a local file backend in a temp dir; the stack file Pulumi.<stack>.yaml sits in
// the project directory, as `pulumi stack init` puts it, and is removed by `remove()`.
import { spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { PulumiFn } from "@pulumi/pulumi/automation";
import { runPulumiWithProgram } from "../../engine/inlineCli";
import { strict as assert } from "assert";
import { engineEnv } from "../testbed/engineEnv";
import { minorNumber } from "../testbed/kubeVersion";

export const REPO_ROOT = path.join(__dirname, "..", "..");
const CLI = path.join(REPO_ROOT, "bin", "cidr-migration");

export interface CommandResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export class EngineStack {
  readonly dir: string;
  readonly stackFile: string;
  readonly env: Record<string, string>;

  private constructor(readonly name: string, configYaml: string, readonly projectDir: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-"));
    fs.mkdirSync(path.join(this.dir, "state"));
    this.stackFile = path.join(projectDir, `Pulumi.${name}.yaml`);
    fs.writeFileSync(this.stackFile, configYaml);
    this.env = { ...engineEnv(), PULUMI_BACKEND_URL: `file://${path.join(this.dir, "state")}`, PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase", COLUMNS: "200" };
  }

  /**
   * `pulumi stack init` on a stack file holding `configYaml` (plaintext keys; secrets are set afterwards), in this
   * project or another project directory (a test program's, run with `runProgram`).
   */
  static async init(name: string, configYaml: string, projectDir = REPO_ROOT): Promise<EngineStack> {
    const stack = new EngineStack(name, configYaml, projectDir);
    await stack.pulumiOk(["stack", "init"]);
    return stack;
  }

  /** The `pulumi` CLI itself (stack, config, export ...), in the project directory. */
  pulumi(args: string[], stdin?: string): Promise<CommandResult> {
    return run("pulumi", [...args, "--stack", this.name], { cwd: this.projectDir, env: this.env, stdin });
  }

  async pulumiOk(args: string[], stdin?: string): Promise<string> {
    const result = await this.pulumi(args, stdin);
    if (result.exitCode !== 0) throw new Error(`pulumi ${args.join(" ")} failed (${result.exitCode}):\n${result.stdout}${result.stderr}`);
    return result.stdout;
  }

  /** `cidr-migration pulumi <args> --stack <name>`: the engine running this program. */
  engine(args: string[], opts: { onStdout?: (text: string) => void } = {}): Promise<CommandResult> & { pid?: number } {
    return run(CLI, ["pulumi", ...args, "--stack", this.name], { cwd: REPO_ROOT, env: this.env, onStdout: opts.onStdout, newGroup: true });
  }

  /**
   * `pulumi <args>` on another program, hosted in this process as `cidr-migration pulumi` hosts index.ts
   * (engine/inlineCli.ts), in this stack's project directory.
   */
  async runProgram(program: PulumiFn, args: string[]): Promise<CommandResult> {
    const saved = { ...process.env };
    Object.assign(process.env, this.env);
    try {
      const result = await runPulumiWithProgram({ args: [...args, "--stack", this.name], cwd: this.projectDir, program });
      return { exitCode: result.exitCode, signal: null, stdout: result.stdout, stderr: result.stderr };
    } finally {
      for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
      Object.assign(process.env, saved);
    }
  }

  /** `cidr-migration <args>`, with this stack unless `withStack` is false (a command given a plan file instead). */
  cli(args: string[], withStack = true): Promise<CommandResult> {
    return run(CLI, [...args, ...(withStack ? ["--stack", this.name] : [])], { cwd: REPO_ROOT, env: this.env });
  }

  /** A secret config value from stdin, as the README says to set one. */
  async setSecret(pathKey: string, value: string): Promise<void> {
    await this.pulumiOk(["config", "set", "--secret", "--path", pathKey], value);
  }

  /** The state, as `pulumi stack export` prints it (secrets stay encrypted). */
  async exportState(): Promise<{ text: string; resources: Array<{ urn: string; type: string; outputs?: Record<string, unknown>; pendingReplacement?: boolean }>; pending: unknown[] }> {
    const text = await this.pulumiOk(["stack", "export"]);
    const deployment = JSON.parse(text).deployment ?? {};
    return { text, resources: deployment.resources ?? [], pending: deployment.pending_operations ?? [] };
  }

  async remove(): Promise<void> {
    await this.pulumi(["stack", "rm", "--yes", "--force"]).catch(() => undefined);
    fs.rmSync(this.stackFile, { force: true });
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  stdin?: string;
  onStdout?: (text: string) => void;
  /** its own process group, so a test can SIGKILL the CLI with everything it started */
  newGroup?: boolean;
}

function run(command: string, args: string[], opts: RunOptions): Promise<CommandResult> & { pid?: number } {
  const child = spawn(command, args, {
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    detached: opts.newGroup === true,
  });
  const promise = new Promise<CommandResult>((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => { stdout += d.toString(); opts.onStdout?.(d.toString()); });
    child.stderr!.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.on("error", reject);
    child.on("close", (exitCode, signal) => resolve({ exitCode, signal, stdout, stderr }));
    if (opts.stdin !== undefined) child.stdin!.end(opts.stdin);
  }) as Promise<CommandResult> & { pid?: number };
  promise.pid = child.pid;
  return promise;
}

/**
 * Writes by `user` in the apiserver's audit log (JSON lines), from line `from` on, that persisted something: the
 * kubernetes provider's preview sends server-side-apply dry runs (`dryRun=All`), which the apiserver validates and
 * then discards, so they are left out.
 */
export function persistedWrites(auditLogPath: string, user: string, from = 0): Array<{ verb: string; uri: string }> {
  if (!fs.existsSync(auditLogPath)) throw new Error(`no audit log at ${auditLogPath}: the sandbox predates audit logging; run cidr-migration sandbox down`);
  return fs.readFileSync(auditLogPath, "utf8").split("\n").slice(from).filter(Boolean)
    .map((line) => JSON.parse(line) as { verb: string; requestURI: string; user?: { username?: string } })
    .filter((e) => e.user?.username === user && !/[?&]dryRun=All(&|$)/.test(e.requestURI))
    .map((e) => ({ verb: e.verb, uri: e.requestURI }));
}

export function auditLineCount(auditLogPath: string): number {
  return fs.existsSync(auditLogPath) ? fs.readFileSync(auditLogPath, "utf8").split("\n").filter(Boolean).length : 0;
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/**
 * The ServiceCidrSwitch steps of a real preview (their inputs): on 1.33+ the open step creates a ServiceCIDR for the
 * new ranges and retires the default on the old ones; before 1.33 there is none.
 */
export function assertServiceCidrSwitch(switches: Array<Record<string, any>>, oldRanges: string[], newRanges: string[]): void {
  if (minorNumber() < 33) {
    assert.deepEqual(switches, [], "no ServiceCIDR API before 1.33");
    return;
  }
  const list = (ranges: string[]) => `\\[${ranges.map(escaped).join(", ?")}\\]`;
  const open = switches.find((i) => i.step === "open")!;
  assert.match(open.creates.join(" "), new RegExp(`ServiceCIDR cidr-migration-\\S+ ${list(newRanges)}`));
  assert.match(open.deletes.join(" "), new RegExp(`ServiceCIDR kubernetes ${list(oldRanges)}`));
}

/** Writes a real `pulumi preview --json` document to the stack's directory and proves `cidr-migration gate` passes it; returns the file. */
export async function previewTheGatePasses(stack: EngineStack, previewJson: string): Promise<string> {
  const previewFile = path.join(stack.dir, "preview.json");
  fs.writeFileSync(previewFile, previewJson);
  const gate = await stack.cli(["gate", previewFile]);
  assert.equal(gate.exitCode, 0, `${gate.stdout}\n${gate.stderr}`);
  return previewFile;
}
