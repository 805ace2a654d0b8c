/**
 * What the prober's pods saw (test/testbed/nodes/prober), per phase of the migration: lookups and requests that
 * succeeded and failed, and the longest outage per probe and target. A second's counts belong to every phase running
 * during it (phases overlap: the node rollout runs beside CNI steps), or to "before", "between" or "after".
 */
import { Window } from "./engineTimeline";

export type Probe = "dns" | "name" | "oldip";
export const PROBES: Probe[] = ["dns", "name", "oldip"];

export interface SecondRecord { kind: "second"; probe: Probe; target: string; t: number; ok: number; fail: number }
export interface OutageRecord { kind: "outage"; probe: Probe; target: string; from: number; to: number; failures: number; open?: boolean }
export interface FailureRecord { kind: "failure"; probe: Probe; target: string; t: number; error: string }

export interface Tally { ok: number; fail: number }
export interface PhaseTraffic { phase: string; counts: Record<Probe, Tally> }
export interface LongestOutage { probe: Probe; target: string; millis: number; failures: number; phases: string[]; open: boolean; firstError?: string }

const emptyCounts = (): Record<Probe, Tally> => ({ dns: { ok: 0, fail: 0 }, name: { ok: 0, fail: 0 }, oldip: { ok: 0, fail: 0 } });

/** The phases running at `t` (ms), or where `t` falls outside them. */
export function phasesAt(t: number, phases: Window[]): string[] {
  const running = phases.filter((w) => t >= w.start && t <= w.end).map((w) => w.name);
  if (running.length > 0) return running;
  if (phases.length === 0 || t < phases[0].start) return ["before"];
  return t > Math.max(...phases.map((w) => w.end)) ? ["after"] : ["between"];
}

export function summarizeTraffic(records: Array<Record<string, unknown>>, phases: Window[]): { byPhase: PhaseTraffic[]; total: Record<Probe, Tally>; longest: LongestOutage[] } {
  const rows = new Map<string, PhaseTraffic>();
  const total = emptyCounts();
  const order = ["before", ...phases.map((w) => w.name), "between", "after"];
  for (const r of records.filter((r): r is SecondRecord & Record<string, unknown> => r.kind === "second")) {
    // a "second" record counts the second that ended at t
    for (const phase of phasesAt(r.t * 1000 - 500, phases)) {
      const row = rows.get(phase) ?? rows.set(phase, { phase, counts: emptyCounts() }).get(phase)!;
      row.counts[r.probe].ok += r.ok;
      row.counts[r.probe].fail += r.fail;
    }
    total[r.probe].ok += r.ok;
    total[r.probe].fail += r.fail;
  }
  const failures = records.filter((r): r is FailureRecord & Record<string, unknown> => r.kind === "failure");
  const longest = new Map<string, LongestOutage>();
  for (const o of records.filter((r): r is OutageRecord & Record<string, unknown> => r.kind === "outage")) {
    const key = `${o.probe} ${o.target}`;
    const millis = o.to - o.from;
    if ((longest.get(key)?.millis ?? -1) >= millis) continue;
    const first = failures.find((f) => f.probe === o.probe && f.target === o.target && f.t >= o.from && f.t <= o.to);
    longest.set(key, {
      probe: o.probe, target: o.target, millis, failures: o.failures, open: o.open === true,
      phases: [...new Set([...phasesAt(o.from, phases), ...phasesAt(o.to, phases)])],
      firstError: first?.error,
    });
  }
  return {
    byPhase: [...rows.values()].sort((a, b) => order.indexOf(a.phase) - order.indexOf(b.phase)),
    total,
    longest: [...longest.values()].sort((a, b) => PROBES.indexOf(a.probe) - PROBES.indexOf(b.probe) || a.target.localeCompare(b.target)),
  };
}
