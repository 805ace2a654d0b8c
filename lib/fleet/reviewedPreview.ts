/**
 * Whether a stack's preview now is the one that was reviewed (the fleet summary's saved preview). Pure.
 *
 * What is compared is each resource's goal, not the op: a resource the reviewed preview would create and that a
 * stopped run already created now previews as `same` with the same inputs, and that is still the reviewed change,
 * so a fleet `up` can resume after a failure. A value the reviewed preview did not know yet (the engine's unknown
 * sentinel: an output of a step that had not run) matches whatever it has become. Anything else that differs is a
 * change since the review: a resource more or less, another type, another input, or a delete not reviewed.
 */
import { PreviewDigest } from "../gate/previewDigest";
import { isUnknown } from "../gate/unknownValue";

const GONE_OPS = new Set(["delete", "delete-replaced", "discard", "discard-replaced", "remove-pending-replace"]);
const LISTED = 8;

interface Goal {
  type: string;
  inputs: unknown;
}

function goalsOf(preview: PreviewDigest): Map<string, Goal | "gone"> {
  const goals = new Map<string, Goal | "gone">();
  for (const step of preview.steps) {
    if (GONE_OPS.has(step.op)) {
      if (!goals.has(step.urn)) goals.set(step.urn, "gone");
    } else if (step.newState) goals.set(step.urn, { type: step.newState.type, inputs: step.newState.inputs ?? {} });
  }
  return goals;
}

/** The first path at which `now` differs from `reviewed`, or undefined when it matches. */
function firstDifference(reviewed: unknown, now: unknown, at: string): string | undefined {
  if (isUnknown(reviewed)) return undefined;
  if (Array.isArray(reviewed) && Array.isArray(now)) {
    if (reviewed.length !== now.length) return `${at} (${reviewed.length} → ${now.length} items)`;
    for (let i = 0; i < reviewed.length; i++) {
      const d = firstDifference(reviewed[i], now[i], `${at}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (isObj(reviewed) && isObj(now)) {
    for (const key of new Set([...Object.keys(reviewed), ...Object.keys(now)])) {
      const d = firstDifference(reviewed[key], now[key], at ? `${at}.${key}` : key);
      if (d) return d;
    }
    return undefined;
  }
  return reviewed === now ? undefined : at || "(the whole value)";
}

const nameOf = (urn: string) => urn.split("::").pop() ?? urn;

/** One line per resource whose goal differs from the reviewed preview's (at most 8, then a count). */
export function changesSinceReview(reviewed: PreviewDigest, now: PreviewDigest): string[] {
  const before = goalsOf(reviewed);
  const after = goalsOf(now);
  const changes: string[] = [];
  for (const [urn, goal] of after) {
    const was = before.get(urn);
    if (was === undefined) changes.push(goal === "gone" ? `${nameOf(urn)}: would be deleted, which was not reviewed` : `${nameOf(urn)} (${goal.type}): a new resource`);
    else if (goal === "gone" || was === "gone") {
      if (goal !== was) changes.push(`${nameOf(urn)}: ${goal === "gone" ? "would now be deleted" : "is no longer deleted"}`);
    } else if (goal.type !== was.type) changes.push(`${nameOf(urn)}: type ${was.type} → ${goal.type}`);
    else {
      const d = firstDifference(was.inputs, goal.inputs, "");
      if (d) changes.push(`${nameOf(urn)}: input ${d} differs`);
    }
  }
  for (const [urn, goal] of before) {
    if (!after.has(urn)) changes.push(goal === "gone" ? `${nameOf(urn)}: the reviewed delete is gone` : `${nameOf(urn)}: no longer in the preview`);
  }
  return changes.length > LISTED ? [...changes.slice(0, LISTED), `... and ${changes.length - LISTED} more`] : changes;
}

