/**
 * A fleet's stacks through the Automation API (@pulumi/pulumi/automation LocalWorkspace), one workspace per
 * backend, in the project directory the stacks share, with this project's program inline (engine/projectProgram).
 * Read-only here: whether each stack exists, and what its backend records (lib/fleet/stackPhase).
 */
import { LocalWorkspace, Stack } from "@pulumi/pulumi/automation";
import { UserError } from "../lib/config/errors";
import { FleetFile, FleetStack } from "../lib/fleet/fleetFile";
import { StackRecord } from "../lib/fleet/stackPhase";
import { projectProgram } from "./projectProgram";

async function workspaceFor(fleet: FleetFile, backend: string): Promise<LocalWorkspace> {
  return LocalWorkspace.create({
    workDir: fleet.projectDir,
    program: projectProgram(fleet.projectDir),
    envVars: { PULUMI_BACKEND_URL: backend, PULUMI_SKIP_UPDATE_CHECK: "true" },
  });
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
  const workspace = await workspaceFor(fleet, stack.backend);
  const selected = await Stack.select(stack.name, workspace);
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
