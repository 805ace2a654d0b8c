import { formatDuration } from "../plan/planReport";
import { esc } from "./htmlEscape";
import { PhaseSpan, PhaseTimeline } from "./phaseTimeline";

/**
 * The timeline as inline SVG: one row per phase with two bars on one shared time axis, ours (the plan's estimate)
 * above the manual runbook's, each starting where the previous phase ended, and a total row at the bottom.
 * The manual bar is solid up to the runbook's low figure and lighter up to its high one. A phase too short to see
 * at this scale still gets a 2px bar (its exact figure is in the label and the phases table). Only phases with
 * work get an "ours" bar: a phase with no steps (no CNI to change) has nothing to draw.
 * No script, no external reference: the chart is plain shapes and text.
 */

const WIDTH = 1100;
const LABEL_WIDTH = 150;
const RIGHT_MARGIN = 130;
const PLOT_WIDTH = WIDTH - LABEL_WIDTH - RIGHT_MARGIN;
const TOP = 58;
const ROW_HEIGHT = 44;
const BAR_HEIGHT = 14;
const MIN_BAR = 2;
const COLORS = { ours: "#2563eb", manual: "#6b7280", manualRange: "#d1d5db", grid: "#e5e7eb", text: "#111827", muted: "#6b7280" };
const TICK_MINUTES = [1, 2, 5, 10, 15, 20, 30, 60, 120, 180, 240, 480];

type ChartRow = Omit<PhaseSpan, "phase"> & { name: string; total: boolean };

function axisTicks(maxSeconds: number): { stepSeconds: number; endSeconds: number } {
  const minutes = Math.max(1, maxSeconds / 60);
  const step = TICK_MINUTES.find((m) => minutes / m <= 10) ?? Math.ceil(minutes / 10);
  return { stepSeconds: step * 60, endSeconds: Math.ceil(minutes / step) * step * 60 };
}

/** Axis labels are whole minutes: "40m", "1h", "1h 20m". */
function tickLabel(seconds: number): string {
  const minutes = Math.round(seconds / 60);
  if (minutes === 0) return "0";
  if (minutes < 60) return `${minutes}m`;
  return minutes % 60 === 0 ? `${minutes / 60}h` : `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}

function manualLabel(min: number, max: number): string {
  if (max === 0) return "not a separate runbook step";
  return min === max ? formatDuration(max) : `${formatDuration(min)} to ${formatDuration(max)}`;
}

export function renderTimelineSvg(timeline: PhaseTimeline): string {
  const { stepSeconds, endSeconds } = axisTicks(Math.max(timeline.oursTotalSeconds, timeline.manualTotalMaxSeconds));
  const x = (seconds: number) => LABEL_WIDTH + (seconds / endSeconds) * PLOT_WIDTH;
  const width = (seconds: number) => (seconds > 0 ? Math.max(MIN_BAR, (seconds / endSeconds) * PLOT_WIDTH) : 0);
  const rows: ChartRow[] = [
    ...timeline.spans.map((span) => ({ ...span, name: span.phase, total: false })),
    {
      name: "total",
      steps: timeline.spans.reduce((n, s) => n + s.steps, 0),
      oursStart: 0,
      oursSeconds: timeline.oursTotalSeconds,
      manualStart: 0,
      manualMinSeconds: timeline.manualTotalMinSeconds,
      manualMaxSeconds: timeline.manualTotalMaxSeconds,
      total: true,
    },
  ];
  const height = TOP + rows.length * ROW_HEIGHT + 16;
  const out: string[] = [];
  const f = (n: number) => n.toFixed(1);
  out.push(`<svg class="timeline" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-labelledby="timeline-title" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<title id="timeline-title">Phases on one time axis: cidr-migration ${esc(formatDuration(timeline.oursTotalSeconds))}, manual runbook ${esc(manualLabel(timeline.manualTotalMinSeconds, timeline.manualTotalMaxSeconds))}</title>`);
  // Legend.
  const legend: Array<[string, string]> = [[COLORS.ours, "cidr-migration (estimate)"], [COLORS.manual, "manual runbook"], [COLORS.manualRange, "manual runbook, high figure"]];
  let lx = LABEL_WIDTH;
  for (const [color, label] of legend) {
    out.push(`<rect class="legend" x="${lx}" y="6" width="14" height="10" fill="${color}"/><text x="${lx + 20}" y="15" fill="${COLORS.text}">${esc(label)}</text>`);
    lx += 40 + label.length * 6.5;
  }
  // Axis and grid.
  for (let t = 0; t <= endSeconds; t += stepSeconds) {
    out.push(`<line class="grid" x1="${f(x(t))}" y1="${TOP - 10}" x2="${f(x(t))}" y2="${height - 12}" stroke="${COLORS.grid}"/>`);
    out.push(`<text class="tick" x="${f(x(t))}" y="${TOP - 16}" text-anchor="middle" fill="${COLORS.muted}">${esc(tickLabel(t))}</text>`);
  }
  rows.forEach((row, i) => {
    const y = TOP + i * ROW_HEIGHT;
    const name = row.name;
    if (row.total) out.push(`<line x1="0" y1="${y - 4}" x2="${WIDTH}" y2="${y - 4}" stroke="${COLORS.muted}"/>`);
    out.push(`<text class="phase-label" x="${LABEL_WIDTH - 10}" y="${y + 21}" text-anchor="end" fill="${COLORS.text}" font-weight="${row.total ? "700" : "400"}">${esc(name)}</text>`);
    if (row.oursSeconds > 0) {
      const cls = row.total ? "bar bar-ours-total" : "bar bar-ours";
      const w = width(row.oursSeconds);
      out.push(`<rect class="${cls}" data-phase="${esc(name)}" data-seconds="${row.oursSeconds}" x="${f(x(row.oursStart))}" y="${y + 4}" width="${f(w)}" height="${BAR_HEIGHT}" rx="2" fill="${COLORS.ours}"><title>${esc(`${name}: cidr-migration ${formatDuration(row.oursSeconds)}, ${row.steps} steps`)}</title></rect>`);
      out.push(`<text class="bar-label" x="${f(x(row.oursStart) + w + 6)}" y="${y + 15}" fill="${COLORS.ours}">${esc(formatDuration(row.oursSeconds))}</text>`);
    } else {
      out.push(`<text class="bar-label" x="${f(x(row.oursStart) + 4)}" y="${y + 15}" fill="${COLORS.muted}">no steps</text>`);
    }
    const manualY = y + 4 + BAR_HEIGHT + 4;
    if (row.manualMaxSeconds > 0) {
      const cls = row.total ? "bar bar-manual-total" : "bar bar-manual";
      const wMin = width(row.manualMinSeconds);
      const wMax = width(row.manualMaxSeconds);
      if (wMax > wMin) out.push(`<rect class="bar-manual-range" x="${f(x(row.manualStart))}" y="${manualY}" width="${f(wMax)}" height="${BAR_HEIGHT}" rx="2" fill="${COLORS.manualRange}"/>`);
      out.push(`<rect class="${cls}" data-phase="${esc(name)}" data-seconds="${row.manualMinSeconds}" x="${f(x(row.manualStart))}" y="${manualY}" width="${f(wMin)}" height="${BAR_HEIGHT}" rx="2" fill="${COLORS.manual}"><title>${esc(`${name}: manual runbook ${manualLabel(row.manualMinSeconds, row.manualMaxSeconds)}`)}</title></rect>`);
      out.push(`<text class="bar-label" x="${f(x(row.manualStart) + wMax + 6)}" y="${manualY + 11}" fill="${COLORS.muted}">${esc(manualLabel(row.manualMinSeconds, row.manualMaxSeconds))}</text>`);
    } else {
      out.push(`<text class="bar-label" x="${f(x(row.manualStart) + 4)}" y="${manualY + 11}" fill="${COLORS.muted}">${esc(manualLabel(0, 0))}</text>`);
    }
  });
  out.push("</svg>");
  return out.join("\n");
}
