/**
 * A fleet's stacks through the Automation API (@pulumi/pulumi/automation LocalWorkspace), one workspace per
 * backend, in the project directory the stacks share, with this project's program inline (engine/projectProgram).
 *
 * The fleet file's config overrides reach the engine through a copy of the stack file (`--config-file`) and the
 * CLI's planning through the decrypted config in memory (lib/fleet/configOverrides); the stack's own
 * Pulumi.<stack>.yaml is never written.
 */
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { EngineEvent, LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { CONFIG_NAMESPACE, ConfigSource, parseConfigValue } from "../lib/config/configReader";
import { ConfigError, UserError } from "../lib/config/errors";
import { applyOverrides, overrideProblems, overridesOf, overrideStackFile } from "../lib/fleet/configOverrides";
import { FleetFile, FleetStack } from "../lib/fleet/fleetFile";
import { previewFromEvents, stackOutputsFromEvents, UpdatePlanLike } from "../lib/fleet/previewFromEvents";
import { StackRecord } from "../lib/fleet/stackPhase";
import { PreviewDigest } from "../lib/gate/previewDigest";
import { stackFilePath } from "../lib/config/stackFile";
import { projectProgram } from "./projectProgram";
import { sessionPulumiCommand } from "./sessionPulumi";

async function workspaceFor(fleet: FleetFile, backend: string): Promise<LocalWorkspace> {
  return LocalWorkspace.create({
    workDir: fleet.projectDir,
    program: projectProgram(fleet.projectDir),
    envVars: { PULUMI_BACKEND_URL: backend, PULUMI_SKIP_UPDATE_CHECK: "true" },
    pulumiCommand: await sessionPulumiCommand(),
  });
}

async function selectStack(fleet: FleetFile, stack: FleetStack): Promise<Stack> {
  return Stack.select(stack.name, await workspaceFor(fleet, stack.backend));
}

/** Refuses, naming each, the stacks the fleet file lists that their backend does not have. */
export async function checkStacksExist(fleet: FleetFile): Promise<void> {
  const problems: string[] = [];
  for (const backend of [...new Set(fleet.stacks.map((s) => s.backend))]) {
    let names: Set<string>;
    try {
      names = new Set((await (await workspaceFor(fleet, backend)).listStacks()).map((s) => s.name.split("/").pop()!));
    } catch (err) {
      throw new UserError(`cannot list the stacks on backend ${backend}: ${String((err as Error).message).split("\n").find((l) => /error/i.test(l)) ?? "pulumi stack ls failed"}; check the backend URL and your login`);
    }
    for (const s of fleet.stacks.filter((st) => st.backend === backend && !names.has(st.name))) {
      problems.push(`stack ${s.name} (wave ${s.wave}): backend ${backend} has no such stack; create it (pulumi stack init ${s.name}) or fix the name`);
    }
  }
  if (problems.length > 0) throw new UserError(problems.join("\n"));
}

/** What the stack's backend records: its newest update, its outputs and its state's size. */
export async function readStackRecord(fleet: FleetFile, stack: FleetStack): Promise<StackRecord> {
  const selected = await selectStack(fleet, stack);
  const history = await selected.history(1);
  const outputs = await selected.outputs();
  const deployment = await selected.exportStack();
  const last = history[0];
  const state = (deployment.deployment ?? {}) as { resources?: unknown[]; pending_operations?: unknown[] };
  return {
    lastUpdate: last ? { kind: last.kind, result: last.result, endTime: last.endTime ? new Date(last.endTime).toISOString() : undefined } : undefined,
    outputs: Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.secret ? "[secret]" : v.value])),
    resourceCount: state.resources?.length ?? 0,
    pendingOperations: state.pending_operations?.length ?? 0,
  };
}

/**
 * The stack's `cidr-migration:` config as the program will see it, the fleet file's overrides applied, secrets
 * decrypted in memory only (lib/config wraps them as Sensitive). An override of a secret key is refused.
 */
export async function stackConfigSource(fleet: FleetFile, stack: FleetStack): Promise<ConfigSource> {
  const all = await (await selectStack(fleet, stack)).getAllConfig();
  const values: Record<string, unknown> = {};
  const secretKeys = new Set<string>();
  for (const [fullKey, { value, secret }] of Object.entries(all)) {
    if (!fullKey.startsWith(`${CONFIG_NAMESPACE}:`)) continue;
    const key = fullKey.slice(CONFIG_NAMESPACE.length + 1);
    values[key] = parseConfigValue(value);
    if (secret) secretKeys.add(key);
  }
  const overrides = overridesOf(stack.config);
  const problems = overrideProblems(stack.name, overrides, secretKeys);
  if (problems.length > 0) throw new ConfigError(problems);
  return { values: applyOverrides(values, overrides), secretKeys };
}


export interface RunOptions {
  signal?: AbortSignal;
  /** The engine's output as it comes (a stack's log). */
  onOutput?: (text: string) => void;
}

/** Runs `fn` with a private directory holding the stack file with the overrides applied, then removes it. */
async function withOverriddenConfig<T>(fleet: FleetFile, stack: FleetStack, fn: (configFile: string, dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-migration-fleet-"));
  try {
    const own = stackFilePath(stack.name, fleet.projectDir);
    const text = fs.existsSync(own) ? fs.readFileSync(own, "utf8") : "config: {}\n";
    const configFile = path.join(dir, `Pulumi.${stack.name}.yaml`);
    fs.writeFileSync(configFile, overrideStackFile(text, overridesOf(stack.config)), { mode: 0o600 });
    return await fn(configFile, dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export interface StackPreview {
  /** The preview as `pulumi preview --json` prints it (secrets as "[secret]"). */
  digest: PreviewDigest;
  /** The stack outputs the preview registered (servicesMoving, nodesMoving, estimate ...). */
  outputs: Record<string, unknown>;
}

/** `pulumi preview` of one stack through the Automation API; rejects, with the engine's words, when it fails. */
export async function previewStack(fleet: FleetFile, stack: FleetStack, opts: RunOptions = {}): Promise<StackPreview> {
  const selected = await selectStack(fleet, stack);
  return withOverriddenConfig(fleet, stack, async (configFile, dir) => {
    const events: EngineEvent[] = [];
    const planFile = path.join(dir, "plan.json");
    await selected.preview({ configFile, plan: planFile, onEvent: (e) => events.push(e), onOutput: opts.onOutput, signal: opts.signal });
    const plan = JSON.parse(fs.readFileSync(planFile, "utf8")) as UpdatePlanLike;
    return { digest: previewFromEvents(events, plan), outputs: stackOutputsFromEvents(events) };
  });
}

/** `pulumi up` of one stack through the Automation API; rejects when it fails or is cancelled. */
export async function upStack(fleet: FleetFile, stack: FleetStack, opts: RunOptions = {}): Promise<void> {
  const selected = await selectStack(fleet, stack);
  await withOverriddenConfig(fleet, stack, (configFile) => selected.up({ configFile, onOutput: opts.onOutput, signal: opts.signal }));
}
