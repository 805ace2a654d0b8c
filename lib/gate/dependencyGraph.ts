import { PreviewStep } from "./previewDigest";
import { dependencyUrns, stateOf } from "./stateValues";

/**
 * "Which resources must finish before this one starts", from the preview's states: `dependencies` plus every
 * `propertyDependencies` entry of each step's newState (oldState for deletes).
 *
 * The engine records dependsOn a component as the component's URN (older SDKs) or as its custom children (newer
 * ones); a component URN is expanded here to every resource parented (transitively) under it, so both read alike.
 * URNs that have no step in the preview (a resource not shown) are kept as leaves: their edges are unknown.
 */
export class DependencyGraph {
  private readonly direct = new Map<string, string[]>();
  private readonly children = new Map<string, string[]>();
  private readonly components = new Set<string>();

  constructor(steps: readonly PreviewStep[]) {
    for (const step of steps) {
      const state = stateOf(step);
      const deps = dependencyUrns(state);
      this.direct.set(step.urn, [...new Set([...(this.direct.get(step.urn) ?? []), ...deps])]);
      if (state && !state.custom) this.components.add(step.urn);
      if (state?.parent) this.children.set(state.parent, [...(this.children.get(state.parent) ?? []), step.urn]);
    }
  }

  /** Every URN `urn` waits for, directly or through others (itself excluded). */
  ancestors(urn: string): Set<string> {
    const seen = new Set<string>();
    const queue = [...this.expand(this.direct.get(urn) ?? [])];
    while (queue.length > 0) {
      const next = queue.pop()!;
      if (seen.has(next) || next === urn) continue;
      seen.add(next);
      queue.push(...this.expand(this.direct.get(next) ?? []));
    }
    return seen;
  }

  /** A URN plus, for a component, everything under it (a custom resource's dependents wait for it alone). */
  private expand(urns: readonly string[]): string[] {
    const out: string[] = [];
    const queue = [...urns];
    const seen = new Set<string>();
    while (queue.length > 0) {
      const urn = queue.pop()!;
      if (seen.has(urn)) continue;
      seen.add(urn);
      out.push(urn);
      if (this.components.has(urn)) queue.push(...(this.children.get(urn) ?? []));
    }
    return out;
  }
}
