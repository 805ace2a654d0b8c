import { PreviewStep, ResourceState } from "./previewDigest";
import { isUnknown } from "./unknownValue";

/** Reading values out of a preview step's states, with the engine's unknown and secret placeholders told apart. */

export const SECRET_PLACEHOLDER = "[secret]";

/** The state the step leads to (newState), else the one it leaves (oldState, for deletes). */
export function stateOf(step: PreviewStep): ResourceState | undefined {
  return step.newState ?? step.oldState;
}

/** A string input: its value, "unknown" when preview cannot know it yet, undefined when absent or not a string. */
export function stringInput(state: ResourceState | undefined, key: string): string | "unknown" | undefined {
  const value = state?.inputs?.[key];
  if (isUnknown(value)) return "unknown";
  return typeof value === "string" ? value : undefined;
}

/** Every URN the state depends on: its dependencies plus each property's dependencies. */
export function dependencyUrns(state: ResourceState | undefined): string[] {
  if (!state) return [];
  const urns = new Set<string>(state.dependencies ?? []);
  for (const deps of Object.values(state.propertyDependencies ?? {})) for (const urn of deps ?? []) urns.add(urn);
  return [...urns];
}
