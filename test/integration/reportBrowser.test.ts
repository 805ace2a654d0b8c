import * as assert from "node:assert/strict";
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

/**
 * The report as a reader sees it: `cidr-migration report` writes report.html, Debian's headless Chromium opens it
 * from a file URL, and the test reads the rendered page through the DevTools protocol over a pipe (no port, no
 * network): every bar of the timeline has a rendered width, every table its rows, and the page asked for nothing
 * but itself. A screenshot goes to test-artifacts/report.png (Chromium's own --screenshot).
 */

const REPO = path.resolve(__dirname, "..", "..");
const FIXTURES = path.join(REPO, "test", "fixtures", "preview");
const ARTIFACTS = path.join(REPO, "test-artifacts");
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_FLAGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

const REPORT_PROGRAM = `
  const { Command } = require("commander");
  const program = new Command("cidr-migration").exitOverride();
  require(${JSON.stringify(path.join(REPO, "cli", "reportCommand.ts"))}).registerReportCommand(program);
  for (const sub of program.commands) sub.exitOverride();
  program.parseAsync(process.argv.slice(1), { from: "user" }).catch((err) => { process.exitCode = err.exitCode === 0 ? 0 : 2; });
`;

function run(cmd: string, args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? REPO, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 90_000);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A minimal DevTools-protocol client over Chromium's --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-framed JSON). */
class PipeDevTools {
  private nextId = 1;
  private buffer = "";
  private readonly pending = new Map<number, { resolve: (v: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  private readonly listeners: Array<(method: string, params: Record<string, unknown>, sessionId?: string) => void> = [];

  constructor(private readonly input: Writable, output: Readable) {
    output.setEncoding("utf8");
    output.on("data", (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf("\0")) >= 0) {
        const message = JSON.parse(this.buffer.slice(0, end)) as { id?: number; result?: Record<string, unknown>; error?: { message: string }; method?: string; params?: Record<string, unknown>; sessionId?: string };
        this.buffer = this.buffer.slice(end + 1);
        if (message.id !== undefined) {
          const waiter = this.pending.get(message.id);
          this.pending.delete(message.id);
          if (message.error) waiter?.reject(new Error(message.error.message));
          else waiter?.resolve(message.result ?? {});
        } else if (message.method) {
          for (const listen of this.listeners) listen(message.method, message.params ?? {}, message.sessionId);
        }
      }
    });
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.input.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    return new Promise((resolve, reject) => this.pending.set(id, { resolve, reject }));
  }

  on(listener: (method: string, params: Record<string, unknown>, sessionId?: string) => void): void {
    this.listeners.push(listener);
  }

  waitFor(method: string, sessionId: string, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${method} did not arrive within ${timeoutMs} ms`)), timeoutMs);
      this.on((m, _p, s) => {
        if (m === method && s === sessionId) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }
}

interface RenderedPage {
  title: string;
  svg: { width: number; height: number };
  ours: Array<{ phase: string; width: number; height: number; left: number }>;
  manual: Array<{ phase: string; width: number }>;
  totals: { ours: number; manual: number };
  rows: Record<string, number>;
  visibleRows: Record<string, number>;
  phaseLabels: string[];
}

const MEASURE = `(() => {
  const box = (el) => el.getBoundingClientRect();
  const svg = document.querySelector("svg.timeline");
  const bars = (cls) => [...svg.querySelectorAll("rect." + cls)];
  const tables = ["phases", "services", "nodes", "preflight", "verify", "warnings", "steps"];
  const rows = (id) => [...document.querySelectorAll("table#" + id + " tbody tr")];
  return JSON.stringify({
    title: document.title,
    svg: { width: box(svg).width, height: box(svg).height },
    ours: bars("bar-ours").map((r) => ({ phase: r.dataset.phase, width: box(r).width, height: box(r).height, left: box(r).left })),
    manual: bars("bar-manual").map((r) => ({ phase: r.dataset.phase, width: box(r).width })),
    totals: { ours: box(bars("bar-ours-total")[0]).width, manual: box(bars("bar-manual-total")[0]).width },
    rows: Object.fromEntries(tables.map((id) => [id, rows(id).length])),
    visibleRows: Object.fromEntries(tables.map((id) => [id, rows(id).filter((tr) => tr.checkVisibility() && box(tr).height > 0).length])),
    phaseLabels: [...svg.querySelectorAll("text.phase-label")].map((t) => t.textContent),
  });
})()`;

describe("report in headless Chromium", function () {
  this.timeout(180_000);
  let dir: string;
  let reportFile: string;
  let plan: { phases: Array<{ name: string; estimateSeconds: number; manualMinutes: { max: number } }>; services: unknown[]; nodes: unknown[] };
  const browsers: ChildProcess[] = [];

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing; install Debian's chromium package (bash test/testbed/install.sh)`);
    dir = mkdtempSync(path.join(os.tmpdir(), "report-browser-"));
    const out = path.join(dir, "out");
    const r = await run(process.execPath, [
      "-r", "ts-node/register/transpile-only", "-e", REPORT_PROGRAM, "report",
      "--plan", path.join(FIXTURES, "plan.json"),
      "--preflight", path.join(FIXTURES, "preflight-blocker.json"),
      "--verify", path.join(FIXTURES, "verify-after-up.json"),
      "--out", out,
    ]);
    assert.equal(r.stderr, "");
    assert.equal(r.code, 0);
    reportFile = path.join(out, "report.html");
    assert.equal(r.stdout, `wrote ${reportFile}\nwrote ${path.join(out, "report.md")}\n`);
    plan = JSON.parse(readFileSync(path.join(FIXTURES, "plan.json"), "utf8"));
  });

  after(() => {
    for (const browser of browsers) if (browser.exitCode === null && browser.pid) process.kill(browser.pid, "SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("renders every timeline bar with a width, every table with its rows, and requests nothing but the file", async () => {
    const profile = mkdtempSync(path.join(dir, "profile-"));
    const browser = spawn(CHROMIUM, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, "--remote-debugging-pipe", "--window-size=1400,2000", "about:blank"], {
      stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"],
    });
    browsers.push(browser);
    const devtools = new PipeDevTools(browser.stdio[3] as Writable, browser.stdio[4] as Readable);
    const requested: string[] = [];
    devtools.on((method, params) => {
      if (method === "Network.requestWillBeSent") requested.push(String((params.request as { url: string }).url));
    });
    const { targetId } = await devtools.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = (await devtools.send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
    await devtools.send("Network.enable", {}, sessionId);
    await devtools.send("Page.enable", {}, sessionId);
    await devtools.send("Emulation.setDeviceMetricsOverride", { width: 1400, height: 2000, deviceScaleFactor: 1, mobile: false }, sessionId);
    const loaded = devtools.waitFor("Page.loadEventFired", sessionId, 60_000);
    const url = pathToFileURL(reportFile).href;
    await devtools.send("Page.navigate", { url }, sessionId);
    await loaded;
    const { result } = (await devtools.send("Runtime.evaluate", { expression: MEASURE, returnByValue: true }, sessionId)) as { result: { value: string } };
    const page = JSON.parse(result.value) as RenderedPage;
    await devtools.send("Browser.close").catch(() => undefined);

    assert.match(page.title, /^CIDR migration report: 10\.96\.0\.0\/12 -> 10\.112\.0\.0\/12/);
    assert.ok(page.svg.width >= 1000 && page.svg.height > 400, `the chart is drawn (${page.svg.width}x${page.svg.height})`);
    const phasesWithWork = plan.phases.filter((p) => p.estimateSeconds > 0).map((p) => p.name);
    assert.deepEqual(page.ours.map((b) => b.phase), phasesWithWork);
    for (const bar of page.ours) {
      assert.ok(bar.width >= 2 && bar.height > 10, `bar ${bar.phase} is rendered (${bar.width}x${bar.height})`);
    }
    page.ours.forEach((b, i) => i > 0 && assert.ok(b.left >= page.ours[i - 1].left, `${b.phase} starts after ${page.ours[i - 1].phase}`));
    assert.deepEqual(page.manual.map((b) => b.phase), plan.phases.filter((p) => p.manualMinutes.max > 0).map((p) => p.name));
    assert.ok(page.manual.every((b) => b.width > 0));
    assert.ok(page.totals.manual > page.totals.ours * 3, `the manual runbook's total bar is the longer one (${page.totals.manual} vs ${page.totals.ours})`);
    assert.deepEqual(page.phaseLabels, [...plan.phases.map((p) => p.name), "total"]);

    assert.deepEqual(page.rows, { phases: plan.phases.length, services: plan.services.length, nodes: plan.nodes.length, preflight: 3, verify: 3, warnings: 1, steps: 39 });
    // The plan steps are folded (<details>); everything else is on the page.
    assert.deepEqual(page.visibleRows, { ...page.rows, steps: 0 });

    assert.deepEqual(requested, [url], "the page loaded itself and nothing else");
  });

  it("saves a 1400x2000 screenshot as a test artifact (Chromium's --screenshot)", async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, "report.png");
    rmSync(shot, { force: true });
    const profile = mkdtempSync(path.join(dir, "profile-"));
    const r = await run(CHROMIUM, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, `--screenshot=${shot}`, "--window-size=1400,2000", pathToFileURL(reportFile).href]);
    assert.equal(r.code, 0, r.stderr.split("\n").slice(-5).join("\n"));
    const png = readFileSync(shot);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG file");
    // IHDR: width and height, big-endian, at bytes 16..23.
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [1400, 2000]);
    assert.ok(statSync(shot).size > 50_000, "the screenshot has content, not a blank page");
    execFileSync("cp", [path.join(path.dirname(reportFile), "report.html"), path.join(ARTIFACTS, "report.html")]);
  });
});
