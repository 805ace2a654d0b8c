import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { parseFindingsDocument } from "../../../lib/gate/findingsDocument";
import { parsePlanDocument } from "../../../lib/gate/planDocument";
import { Plan } from "../../../lib/plan/planModel";
import { phaseTimeline } from "../../../lib/report/phaseTimeline";
import { renderReportHtml } from "../../../lib/report/reportHtml";
import { ReportInput } from "../../../lib/report/reportInput";
import { renderReportMarkdown } from "../../../lib/report/reportMarkdown";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "preview");
const read = (file: string) => readFileSync(path.join(FIXTURES, file), "utf8");
const plan = (): Plan => parsePlanDocument(read("plan.json"), "plan.json");

function input(overrides: Partial<ReportInput> = {}): ReportInput {
  return {
    plan: plan(),
    preflight: parseFindingsDocument(read("preflight-blocker.json"), "preflight.json", "preflight"),
    verify: parseFindingsDocument(read("verify-after-up.json"), "verify.json", "verify"),
    source: "plan.json",
    generatedAt: "2024-05-01T10:00:00Z",
    ...overrides,
  };
}

/** The <tbody> rows of the table with this id. */
function tableRows(html: string, id: string): string[] {
  const start = html.indexOf(`<table id="${id}">`);
  assert.ok(start >= 0, `table #${id} is in the report`);
  const body = html.slice(html.indexOf("<tbody>", start), html.indexOf("</tbody>", start));
  return body.split("\n").filter((l) => l.startsWith("<tr>"));
}

function rects(html: string, cls: string): Array<{ phase: string; x: number; width: number }> {
  return [...html.matchAll(new RegExp(`<rect class="bar ${cls}" data-phase="([^"]+)" data-seconds="[^"]+" x="([\\d.]+)" y="[\\d.]+" width="([\\d.]+)"`, "g"))].map((m) => ({ phase: m[1], x: Number(m[2]), width: Number(m[3]) }));
}

describe("report: phase timeline", () => {
  it("lays the phases end to end and adds up to the plan's own estimates", () => {
    const p = plan();
    const t = phaseTimeline(p);
    assert.equal(t.oursTotalSeconds, p.estimate.oursSeconds);
    assert.equal(t.manualTotalMinSeconds, p.estimate.manualMinutes.min * 60);
    assert.equal(t.manualTotalMaxSeconds, p.estimate.manualMinutes.max * 60);
    t.spans.forEach((span, i) => {
      if (i === 0) return;
      const prev = t.spans[i - 1];
      assert.equal(span.oursStart, prev.oursStart + prev.oursSeconds);
      assert.equal(span.manualStart, prev.manualStart + prev.manualMaxSeconds);
    });
    const nodes = t.spans.find((s) => s.phase === "nodes")!;
    // 5 to 8 minutes per node, 6 nodes move.
    assert.deepEqual([nodes.manualMinSeconds, nodes.manualMaxSeconds], [5 * 6 * 60, 8 * 6 * 60]);
  });
});

describe("report: HTML", () => {
  it("is self-contained: inline style and SVG, a CSP that forbids every fetch, no script, link or external reference", () => {
    const html = renderReportHtml(input());
    assert.ok(html.startsWith("<!DOCTYPE html>\n"));
    assert.ok(html.includes(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`));
    for (const forbidden of [/<script/i, /<link/i, /<img/i, /<iframe/i, /<object/i, /@import/i, /url\(/i, /\s(src|href|xlink:href|action)\s*=/i]) {
      assert.doesNotMatch(html, forbidden);
    }
    assert.equal((html.match(/<style>/g) ?? []).length, 1);
    assert.equal((html.match(/<svg class="timeline"/g) ?? []).length, 1);
  });

  it("draws one bar of ours per phase with work, and the manual runbook's beside them, on one axis", () => {
    const p = plan();
    const html = renderReportHtml(input({ plan: p }));
    const ours = rects(html, "bar-ours");
    assert.deepEqual(ours.map((b) => b.phase), p.phases.filter((ph) => ph.estimateSeconds > 0).map((ph) => ph.name));
    assert.ok(ours.every((b) => b.width >= 2), "every bar is visible");
    ours.forEach((b, i) => i > 0 && assert.ok(b.x >= ours[i - 1].x, `${b.phase} starts after ${ours[i - 1].phase}`));
    const manual = rects(html, "bar-manual");
    assert.deepEqual(manual.map((b) => b.phase), p.phases.filter((ph) => ph.manualMinutes.max > 0).map((ph) => ph.name));
    const [oursTotal] = rects(html, "bar-ours-total");
    const [manualTotal] = rects(html, "bar-manual-total");
    // 2450 s against 160 min: the totals' widths keep the estimates' ratio.
    assert.ok(Math.abs(oursTotal.width / manualTotal.width - 2450 / (160 * 60)) < 0.01);
  });

  it("leaves a phase without steps out of the ours bars and says so", () => {
    const p = plan();
    const cni = p.phases.find((ph) => ph.name === "cni")!;
    cni.steps = [];
    cni.estimateSeconds = 0;
    const html = renderReportHtml(input({ plan: p }));
    assert.ok(!rects(html, "bar-ours").some((b) => b.phase === "cni"));
    assert.ok(html.includes(">no steps</text>"));
  });

  it("has a row per Service, node, phase, plan step and finding", () => {
    const p = plan();
    const html = renderReportHtml(input({ plan: p }));
    assert.equal(tableRows(html, "services").length, p.services.length);
    assert.equal(tableRows(html, "nodes").length, p.nodes.length);
    assert.equal(tableRows(html, "phases").length, p.phases.length);
    assert.equal(tableRows(html, "steps").length, p.phases.reduce((n, ph) => n + ph.steps.length, 0));
    assert.equal(tableRows(html, "preflight").length, 3);
    assert.equal(tableRows(html, "verify").length, 3);
    const web = tableRows(html, "services").find((r) => r.includes("shop/web<"))!;
    assert.ok(web.includes("<td class=\"mono\">10.100.12.7</td><td class=\"mono\">10.116.12.7</td>"));
    assert.ok(tableRows(html, "nodes")[0].includes("0 (canary)"));
  });

  it("says what to run when preflight or verify results are not given", () => {
    const html = renderReportHtml(input({ preflight: undefined, verify: undefined }));
    assert.ok(!html.includes('<table id="preflight">'));
    assert.match(html, /No preflight report was given/);
    assert.match(html, /Not run yet\. After `pulumi up`, run `cidr-migration verify --json/);
  });

  it("escapes every value taken from the cluster", () => {
    const p = plan();
    p.services[2].name = `<script>alert("x")</script>`;
    p.warnings.push({ code: "X", object: "Service a&b", message: "it's <b>bold</b>" });
    const html = renderReportHtml(input({ plan: p }));
    assert.doesNotMatch(html, /<script/);
    assert.ok(html.includes("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
    assert.ok(html.includes("it&#39;s &lt;b&gt;bold&lt;/b&gt;"));
    const md = renderReportMarkdown(input({ plan: p }));
    assert.ok(!md.includes("<script>"));
  });

  it("is deterministic: the same input gives the same bytes", () => {
    assert.equal(renderReportHtml(input()), renderReportHtml(input()));
  });
});

describe("report: markdown", () => {
  it("has the summary, the timeline table with bars on one scale, both maps and both finding tables", () => {
    const p = plan();
    const md = renderReportMarkdown(input({ plan: p }));
    for (const heading of ["# CIDR migration report", "## Timeline", "## Service IP map", "## Node map", "## Plan warnings", "## Preflight findings", "## Verify results"]) {
      assert.ok(md.includes(`\n${heading}\n`) || md.startsWith(`${heading}\n`), heading);
    }
    const section = (title: string) => md.slice(md.indexOf(`## ${title}`), md.indexOf("\n## ", md.indexOf(`## ${title}`) + 3));
    const dataRows = (text: string) => text.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| ---")).length - 1;
    assert.equal(dataRows(section("Service IP map")), p.services.length);
    assert.equal(dataRows(section("Node map")), p.nodes.length);
    assert.equal(dataRows(section("Timeline")), p.phases.length + 1);
    const total = section("Timeline").split("\n").find((l) => l.startsWith("| **total**"))!;
    // The manual runbook's high figure is the longest bar: the full 40 characters.
    assert.ok(total.includes(`\`${"█".repeat(40)}\``));
    assert.match(md, /\| BLOCKER \| `HARDCODED_SERVICE_IP` \| ConfigMap monitoring\/prometheus-config \|/);
    // Code spans show their text as it is: no entities inside them.
    assert.ok(md.includes("| Service CIDR | `10.96.0.0/12 -> 10.112.0.0/12` |"));
  });
});
