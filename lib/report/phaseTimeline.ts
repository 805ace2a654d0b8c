import { Plan, PhaseName } from "../plan/planModel";

/**
 * The phases laid end to end on one time axis, ours beside the manual runbook's, in seconds from the start.
 * Ours: each phase's estimateSeconds (the plan's sum is estimate.oursSeconds). Manual: the runbook's minutes per
 * phase, the node phase's per node times the nodes that move (as the plan's estimate.manualMinutes counts it);
 * a range (5 to 8 minutes per node) is kept as min and max, and the next phase starts after the max.
 */
export interface PhaseSpan {
  phase: PhaseName;
  steps: number;
  oursStart: number;
  oursSeconds: number;
  manualStart: number;
  manualMinSeconds: number;
  manualMaxSeconds: number;
}

export interface PhaseTimeline {
  spans: PhaseSpan[];
  oursTotalSeconds: number;
  manualTotalMinSeconds: number;
  manualTotalMaxSeconds: number;
}

export function phaseTimeline(plan: Plan): PhaseTimeline {
  const movingNodes = plan.nodes.filter((n) => n.action === "move").length;
  let ours = 0;
  let manualMin = 0;
  let manualMax = 0;
  const spans = plan.phases.map((p): PhaseSpan => {
    const factor = p.name === "nodes" ? movingNodes : 1;
    const span = {
      phase: p.name,
      steps: p.steps.length,
      oursStart: ours,
      oursSeconds: p.estimateSeconds,
      manualStart: manualMax,
      manualMinSeconds: p.manualMinutes.min * factor * 60,
      manualMaxSeconds: p.manualMinutes.max * factor * 60,
    };
    ours += span.oursSeconds;
    manualMin += span.manualMinSeconds;
    manualMax += span.manualMaxSeconds;
    return span;
  });
  return { spans, oursTotalSeconds: ours, manualTotalMinSeconds: manualMin, manualTotalMaxSeconds: manualMax };
}
