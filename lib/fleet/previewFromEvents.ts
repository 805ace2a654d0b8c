/**
 * A preview run through the Automation API, as the document `pulumi preview --json` prints (lib/gate/previewDigest),
 * so the gate judges it exactly as it judges a CI preview. Pure.
 *
 * The engine's events carry each step's op and its old and new state, but not the dependencies the gate orders by;
 * the update plan the same preview saves (`--save-plan`, the Automation API's `plan` option) carries those, per URN.
 */
import { PreviewDigest, PreviewDiagnostic, PreviewStep, PropertyDiff, ResourceState } from "../gate/previewDigest";

/** The parts of the Automation API's EngineEvent read here (@pulumi/pulumi/automation/events). */
export interface EngineEventLike {
  resourcePreEvent?: { metadata: StepMetadataLike };
  resOutputsEvent?: { metadata: StepMetadataLike };
  diagnosticEvent?: { urn?: string; prefix?: string; message: string; severity: string };
  summaryEvent?: { resourceChanges?: Record<string, number>; maybeCorrupt?: boolean; durationSeconds?: number };
}

interface StepStateLike {
  type: string;
  urn: string;
  custom?: boolean;
  delete?: boolean;
  id?: string;
  parent?: string;
  protect?: boolean;
  retainOnDelete?: boolean;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  provider?: string;
}

interface StepMetadataLike {
  op: string;
  urn: string;
  type: string;
  old?: StepStateLike;
  new?: StepStateLike;
  diffs?: string[];
  detailedDiff?: Record<string, { diffKind: string; inputDiff: boolean }>;
  provider?: string;
}

/** apitype.DeploymentPlanV1, the parts read here: each resource's goal. */
export interface UpdatePlanLike {
  resourcePlans?: Record<string, { goal?: { dependencies?: string[]; propertyDependencies?: Record<string, string[]> } }>;
}

const ROOT_STACK_TYPE = "pulumi:pulumi:Stack";

export function previewFromEvents(events: readonly EngineEventLike[], plan: UpdatePlanLike): PreviewDigest {
  const steps: PreviewStep[] = [];
  const diagnostics: PreviewDiagnostic[] = [];
  let summary: EngineEventLike["summaryEvent"];
  for (const event of events) {
    if (event.resourcePreEvent) steps.push(stepOf(event.resourcePreEvent.metadata, plan));
    // The display shows no debug messages without --debug, and neither does `pulumi preview --json`.
    if (event.diagnosticEvent && event.diagnosticEvent.severity !== "debug") {
      const { urn, prefix, message, severity } = event.diagnosticEvent;
      diagnostics.push({ urn, prefix, message, severity });
    }
    if (event.summaryEvent) summary = event.summaryEvent;
  }
  return {
    steps,
    diagnostics,
    changeSummary: summary?.resourceChanges ?? {},
    duration: summary?.durationSeconds === undefined ? undefined : summary.durationSeconds * 1e9,
    maybeCorrupt: summary?.maybeCorrupt === true,
  };
}

/** The stack's outputs as the preview registered them (values not known until `up` are the unknown sentinel). */
export function stackOutputsFromEvents(events: readonly EngineEventLike[]): Record<string, unknown> {
  const root = events.map((e) => e.resOutputsEvent?.metadata).filter((m) => m?.type === ROOT_STACK_TYPE).pop();
  return root?.new?.outputs ?? {};
}

function stepOf(meta: StepMetadataLike, plan: UpdatePlanLike): PreviewStep {
  const goal = plan.resourcePlans?.[meta.urn]?.goal;
  const detailedDiff = meta.detailedDiff
    ? Object.fromEntries(Object.entries(meta.detailedDiff).map(([k, d]): [string, PropertyDiff] => [k, { kind: d.diffKind, inputDiff: d.inputDiff }]))
    : null;
  return {
    op: meta.op,
    urn: meta.urn,
    provider: meta.provider || undefined,
    oldState: meta.old ? stateOf(meta.old) : undefined,
    newState: meta.new ? { ...stateOf(meta.new), dependencies: goal?.dependencies ?? [], propertyDependencies: goal?.propertyDependencies ?? {} } : undefined,
    diffReasons: meta.diffs ?? undefined,
    detailedDiff,
  };
}

function stateOf(s: StepStateLike): ResourceState {
  return {
    urn: s.urn,
    type: s.type,
    custom: s.custom === true,
    delete: s.delete || undefined,
    id: s.id || undefined,
    parent: s.parent || undefined,
    protect: s.protect || undefined,
    retainOnDelete: s.retainOnDelete || undefined,
    inputs: s.inputs ?? {},
    outputs: s.outputs ?? {},
    provider: s.provider || undefined,
  };
}
