/**
 * When each part of a `pulumi up` ran, from its engine event log (`--event-log`): a resource starts at its
 * resourcePreEvent and ends at its resOutputsEvent. The events carry whole seconds only, so the bench stamps each
 * line when it reads it (tailing the file every 250 ms) and passes that time as `at`.
 * Phases are the stack's top-level resources (control-plane, services, nodes ...), each from its first child's start
 * to its last child's end; nodes are the node rollout's resources named `nodes-<node>-...`.
 */

export interface TimedEvent {
  /** ms since the epoch, when the line was read */
  at: number;
  event: { resourcePreEvent?: { metadata?: StepMetadata }; resOutputsEvent?: { metadata?: StepMetadata } };
}

/** A component resource has no provider; it is registered when the program starts, so only real resources are timed. */
interface StepMetadata {
  urn?: string;
  provider?: string;
}

export interface Window {
  name: string;
  start: number;
  end: number;
}

interface ParsedUrn {
  /** the top-level resource's name, or the resource's own when it is top-level */
  top: string;
  name: string;
}

/**
 * urn:pulumi:STACK::PROJECT::TYPE$TYPE...::NAME: the chain of types from the top-level resource down (the stack
 * itself is not in it). The stack and the providers are not steps of the migration.
 */
function parseUrn(urn: string): ParsedUrn | undefined {
  const parts = urn.split("::");
  if (parts.length < 4) return undefined;
  const name = parts.slice(3).join("::");
  const chain = parts[2].split("$");
  if (chain[0] === "pulumi:pulumi:Stack" || chain[0].startsWith("pulumi:providers:")) return undefined;
  return { top: chain.length === 1 ? name : "", name };
}

/**
 * The top-level resource of each resource is found through parents: a child's URN names only its types, so its
 * top-level ancestor is the top-level resource whose name its own name starts with (this program names every child
 * after its parent, e.g. nodes-worker-1-drain under nodes).
 */
export function phaseWindows(events: TimedEvent[], nodeNames: string[], rolloutName = "nodes"): { phases: Window[]; nodes: Window[] } {
  const spans = new Map<string, { name: string; top: string; start?: number; end?: number }>();
  const tops = new Set<string>();
  for (const { at, event } of events) {
    const metadata = event.resourcePreEvent?.metadata ?? event.resOutputsEvent?.metadata;
    const urn = metadata?.urn;
    const parsed = urn ? parseUrn(urn) : undefined;
    if (!urn || !parsed) continue;
    if (parsed.top) tops.add(parsed.top);
    if (!metadata?.provider) continue;
    const span = spans.get(urn) ?? { name: parsed.name, top: parsed.top };
    if (event.resourcePreEvent) span.start ??= at;
    if (event.resOutputsEvent) span.end = at;
    spans.set(urn, span);
  }
  const topOf = (name: string) => [...tops].filter((t) => name === t || name.startsWith(`${t}-`)).sort((a, b) => b.length - a.length)[0];
  const merge = (groups: Map<string, Window>, key: string, start: number, end: number) => {
    const w = groups.get(key);
    if (w) {
      w.start = Math.min(w.start, start);
      w.end = Math.max(w.end, end);
    } else {
      groups.set(key, { name: key, start, end });
    }
  };
  const phases = new Map<string, Window>();
  const nodes = new Map<string, Window>();
  for (const span of spans.values()) {
    if (span.start === undefined || span.end === undefined) continue;
    const top = span.top || topOf(span.name);
    if (!top) continue;
    merge(phases, top, span.start, span.end);
    if (top === rolloutName) {
      const node = nodeNames.filter((n) => span.name.startsWith(`${rolloutName}-${n}-`)).sort((a, b) => b.length - a.length)[0];
      if (node) merge(nodes, node, span.start, span.end);
    }
  }
  const byStart = (a: Window, b: Window) => a.start - b.start;
  return { phases: [...phases.values()].sort(byStart), nodes: [...nodes.values()].sort(byStart) };
}

/** Every step (a resource with a provider) from its start to its end, in start order: what ran when traffic failed. */
export function stepWindows(events: TimedEvent[]): Window[] {
  const steps = new Map<string, Window>();
  for (const { at, event } of events) {
    const metadata = event.resourcePreEvent?.metadata ?? event.resOutputsEvent?.metadata;
    const parsed = metadata?.urn ? parseUrn(metadata.urn) : undefined;
    if (!parsed || !metadata?.provider) continue;
    const step = steps.get(metadata.urn!) ?? { name: parsed.name, start: at, end: at };
    if (event.resOutputsEvent) step.end = at;
    steps.set(metadata.urn!, step);
  }
  return [...steps.values()].sort((a, b) => a.start - b.start);
}
