import { UserError } from "../config/errors";

/**
 * The document `pulumi preview --json` prints: the engine's PreviewDigest (pulumi/pulumi `sdk/go/common/display`
 * PreviewDigest, written by `pkg/backend/display/json.go` ShowPreviewDigest). Field names are the Go struct's JSON
 * tags; every field is `omitempty` except a step's `op`, `urn` and `detailedDiff`.
 *
 * What the engine puts in `steps` (and what the gate may rely on):
 * - one entry per resource step it would take, in the order the steps were issued. That order respects the
 *   dependency graph but independent resources interleave freely, so the gate reads ordering from
 *   `newState.dependencies` / `propertyDependencies`, never from the position in the list;
 * - `same` steps only with `--show-sames` (the root stack's step is always there);
 * - a replacement as one logical `replace` step, or with `--show-replacement-steps` as `create-replacement`,
 *   `replace` and `delete-replaced`;
 * - states (`oldState`/`newState`) in the checkpoint's ResourceV3 form; secrets are the string "[secret]" and
 *   values not known until `up` are the engine's unknown sentinel (UNKNOWN_VALUE).
 * `diagnostics` holds the program's and the engine's messages; `severity` is diag.Severity: "debug", "info",
 * "info#err", "warning" or "error". `duration` is a Go time.Duration: nanoseconds.
 */


/** Every StepOp the engine knows (pkg/resource/deploy/step.go). An op outside this list is judged, never ignored. */
export const STEP_OPS = [
  "same",
  "create",
  "update",
  "delete",
  "replace",
  "create-replacement",
  "delete-replaced",
  "read",
  "read-replacement",
  "refresh",
  "discard",
  "discard-replaced",
  "remove-pending-replace",
  "import",
  "import-replacement",
] as const;
export type StepOp = (typeof STEP_OPS)[number];

/** apitype.ResourceV3: a resource's state as the checkpoint stores it. */
export interface ResourceState {
  urn: string;
  custom: boolean;
  delete?: boolean;
  id?: string;
  type: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
  parent?: string;
  protect?: boolean;
  external?: boolean;
  dependencies?: string[];
  initErrors?: string[];
  provider?: string;
  propertyDependencies?: Record<string, string[]>;
  pendingReplacement?: boolean;
  additionalSecretOutputs?: string[];
  aliases?: string[];
  retainOnDelete?: boolean;
  deletedWith?: string;
}

export interface PropertyDiff {
  /** "add", "add-replace", "delete", "delete-replace", "update", "update-replace". */
  kind: string;
  inputDiff: boolean;
}

export interface PreviewStep {
  op: string;
  urn: string;
  provider?: string;
  oldState?: ResourceState;
  newState?: ResourceState;
  diffReasons?: string[];
  replaceReasons?: string[];
  detailedDiff: Record<string, PropertyDiff> | null;
}

export interface PreviewDiagnostic {
  urn?: string;
  prefix?: string;
  message?: string;
  severity?: string;
}

export interface PreviewDigest {
  config?: Record<string, string>;
  steps: PreviewStep[];
  diagnostics: PreviewDiagnostic[];
  /** Nanoseconds. */
  duration?: number;
  changeSummary: Record<string, number>;
  maybeCorrupt?: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The engine's streaming event log (PULUMI_ENABLE_STREAMING_JSON_PREVIEW) is one JSON event per line. */
function looksLikeEventStream(text: string): boolean {
  const first = text.trimStart().split("\n", 1)[0];
  try {
    const event = JSON.parse(first) as unknown;
    return isObject(event) && "sequence" in event && "timestamp" in event;
  } catch {
    return false;
  }
}

function bad(source: string, what: string): UserError {
  return new UserError(`${source}: ${what}; write it with: pulumi preview --json --show-sames > ${source}`);
}

/**
 * Parses and checks the shape of a `pulumi preview --json` document. Anything that is not one is bad input
 * (UserError, exit 2) with one line naming the file, the field and what to do.
 */
export function parsePreviewDigest(text: string, source: string): PreviewDigest {
  if (looksLikeEventStream(text)) {
    throw new UserError(`${source}: this is the streaming event log, not the preview document; unset PULUMI_ENABLE_STREAMING_JSON_PREVIEW and run: pulumi preview --json --show-sames > ${source}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw bad(source, `not JSON (${(err as Error).message.split("\n")[0]})`);
  }
  if (!isObject(data)) throw bad(source, "not a preview document (expected a JSON object with steps)");
  const steps = data.steps ?? [];
  if (!Array.isArray(steps)) throw bad(source, "steps is not a list");
  steps.forEach((step, i) => {
    if (!isObject(step)) throw bad(source, `steps[${i}] is not an object`);
    if (typeof step.op !== "string" || step.op === "") throw bad(source, `steps[${i}].op is missing`);
    if (typeof step.urn !== "string" || !step.urn.startsWith("urn:pulumi:")) throw bad(source, `steps[${i}].urn ${JSON.stringify(step.urn)} is not a Pulumi URN`);
    for (const key of ["oldState", "newState"] as const) {
      const state = step[key];
      if (state === undefined || state === null) continue;
      if (!isObject(state) || typeof state.type !== "string" || typeof state.urn !== "string") throw bad(source, `steps[${i}].${key} is not a resource state (needs urn and type)`);
      if (state.dependencies !== undefined && !Array.isArray(state.dependencies)) throw bad(source, `steps[${i}].${key}.dependencies is not a list`);
    }
  });
  const diagnostics = data.diagnostics ?? [];
  if (!Array.isArray(diagnostics) || diagnostics.some((d) => !isObject(d))) throw bad(source, "diagnostics is not a list of objects");
  const changeSummary = data.changeSummary ?? {};
  if (!isObject(changeSummary)) throw bad(source, "changeSummary is not an object");
  if (steps.length === 0 && diagnostics.length === 0 && Object.keys(changeSummary).length === 0) {
    throw bad(source, "holds no steps, diagnostics or changeSummary (is it a preview document?)");
  }
  return {
    config: isObject(data.config) ? (data.config as Record<string, string>) : undefined,
    steps: steps as PreviewStep[],
    diagnostics: diagnostics as PreviewDiagnostic[],
    duration: typeof data.duration === "number" ? data.duration : undefined,
    changeSummary: changeSummary as Record<string, number>,
    maybeCorrupt: data.maybeCorrupt === true,
  };
}
