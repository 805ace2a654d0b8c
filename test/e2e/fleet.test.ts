/**
 * `cidr-migration fleet preview|up|status` under the real engine, through the Automation API, on three sandboxes
 * started at once (each its own etcd, kube-apiserver and kube-controller-manager on free ports, its own stack and
 * backend), in two waves.
 *
 * The sandbox's nodes are simulated (no sshd), so every `up` stops at its first node step with the SSH error, as
 * test/e2e/apply.test.ts shows for one stack. That real failure is the fleet's failing stack here: it stops wave 1,
 * and wave 2 never starts. What the sandbox cannot show is a fleet that finishes: no stack here can reach verify.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { EngineStack, REPO_ROOT } from "./engineStack";
import { FleetSandbox, fleetCli as cli, fleetStackOn, startFleetSandbox, stopFleetSandbox, writeFleetFile } from "./fleetSandboxes";
import { resolveTestBedVersion, versionTable } from "../testbed/kubeVersion";
import { FleetSummary } from "../../lib/fleet/fleetSummary";

const NODE_STEP_ERROR = "cannot run the step on root@127.0.0.1:2201 over SSH (ssh exit 255): ssh: connect to host 127.0.0.1 port 2201: Connection refused";

interface Cluster {
  sandbox: FleetSandbox;
  kubeconfigPath: string;
  stack: EngineStack;
}

// The fleet drives stacks through the Automation API; nothing in it depends on the Kubernetes version, which the
// other e2e files cover one by one. It runs on the newest version only (about 7 minutes of three control planes and
// engines), which keeps `npm test` inside CI's time; CIDR_MIGRATION_FLEET_E2E=every-version runs it on any version.
const fleetRunsHere = resolveTestBedVersion().minor === versionTable().newest || process.env.CIDR_MIGRATION_FLEET_E2E === "every-version";

(fleetRunsHere ? describe : describe.skip)(`cidr-migration fleet on three sandboxes through the Automation API (Kubernetes ${resolveTestBedVersion().kube})`, function () {
  this.timeout(900_000);
  const clusters: Cluster[] = [];
  let work: string;
  let fleetFile: string;
  let summaryDir: string;
  let env: Record<string, string>;

  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-fleet-e2e-"));
    for (const label of ["a", "b", "c"]) {
      const sandbox = await startFleetSandbox(work, label);
      clusters.push({ sandbox, kubeconfigPath: sandbox.info.kubeconfigPath, stack: await fleetStackOn(sandbox, `fleet-${label}`, work) });
    }
    env = { ...clusters[0].stack.env };
    delete env.PULUMI_BACKEND_URL;
    fleetFile = path.join(work, "fleet.yaml");
    const [a, b, c] = clusters.map((cl) => cl.stack);
    writeFleetFile(fleetFile, 2, [{ stack: a, wave: 1 }, { stack: b, wave: 1 }, { stack: c, wave: 2, config: '{ "services.parallelism": 4 }' }]);
    summaryDir = path.join(work, "review");
  });

  after(async () => {
    for (const cl of clusters) {
      await cl.stack.remove();
      await stopFleetSandbox(cl.sandbox);
    }
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  const preview = () => cli(["fleet", "preview", fleetFile, "--out", summaryDir], env);
  const up = (onStderr?: (text: string, pid: number) => void) => cli(["fleet", "up", fleetFile, "--summary", path.join(summaryDir, "fleet-summary.json")], env, onStderr);
  const rowOf = (stdout: string, cl: Cluster) => stdout.split("\n").find((l) => l.includes(` ${cl.stack.name} `)) ?? assert.fail(`no row for ${cl.stack.name} in:\n${stdout}`);
  async function phases(): Promise<string[]> {
    const status = await cli(["fleet", "status", fleetFile, "--json"], env);
    assert.equal(status.exitCode, 0, status.stderr);
    return (JSON.parse(status.stdout).stacks as Array<{ stack: string; phase: string }>).map((s) => `${s.stack.split("-")[1]}: ${s.phase}`);
  }
  async function servicesIn(cl: Cluster): Promise<number> {
    const kc = new KubeConfig();
    kc.loadFromFile(cl.kubeconfigPath);
    return (await kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces()).items.length;
  }

  it("bad input is refused before anything runs, each problem naming the stack and the key", async () => {
    const [a, b, c] = clusters.map((cl) => cl.stack);
    const bad = path.join(work, "bad-fleet.yaml");
    writeFleetFile(bad, 2, [{ stack: a, wave: 1 }, { stack: b, wave: 1, config: '{ "services.parallelism": 0, "ssh.privateKey": "plain" }' }, { stack: c, wave: 2 }]);
    fs.appendFileSync(bad, "routableTogether: true\n");
    const result = await cli(["fleet", "preview", bad, "--out", path.join(work, "bad-review")], env);
    assert.equal(result.exitCode, 2, result.stdout);
    const lines = result.stderr.trim().split("\n");
    assert.deepEqual(lines, [
      `cidr-migration: stack ${b.name}: config.ssh.privateKey: overrides cidr-migration:ssh, which the stack holds as a secret; set secrets in the stack with pulumi config set --secret, never in the fleet file`,
      ...lines.slice(1),
    ]);
    assert.ok(lines.every((l) => l.startsWith("cidr-migration: stack ")), result.stderr);
    // Every cluster moves to the sandbox's 10.112.0.0/12 and 10.48.0.0/16: each later stack overlaps each earlier one.
    assert.ok(lines.some((l) => l.includes(`stack ${c.name}: cidr-migration:serviceCidr.to: 10.112.0.0/12 overlaps stack ${a.name}'s serviceCidr.to 10.112.0.0/12`)), result.stderr);
    assert.ok(!fs.existsSync(path.join(work, "bad-review")), "nothing was written, nothing previewed");
    assert.deepEqual(await phases(), ["a: not started", "b: not started", "c: not started"]);
  });

  it("fleet preview: every stack previewed and gated; one summary as a table, JSON and a page; the saved previews pass the CI gate", async () => {
    const result = await preview();
    assert.equal(result.exitCode, 0, `${result.stdout}\n${result.stderr}`);
    const summary = JSON.parse(fs.readFileSync(path.join(summaryDir, "fleet-summary.json"), "utf8")) as FleetSummary;
    assert.deepEqual(summary.rows.map((r) => [r.wave, r.stack, r.verdict, r.nodesMoving]), clusters.map((cl, i) => [i < 2 ? 1 : 2, cl.stack.name, "pass", 4]));
    for (const r of summary.rows) {
      assert.ok(r.servicesMoving! > 0 && r.servicesMoving === summary.rows[0].servicesMoving, "the same seeded workload moves in each cluster");
      assert.ok(r.estimate!.oursSeconds > 0 && r.estimate!.manualRunbookMinutes.min > 0);
      assert.deepEqual(r.findings, []);
      assert.ok(!r.notes.some((n) => n.code === "PREFLIGHT_NOT_GIVEN"), "the gate read each cluster's preflight report");
      assert.match(rowOf(result.stdout, clusters.find((cl) => cl.stack.name === r.stack)!), new RegExp(`^${r.wave}\\s+\\S+\\s+pass\\s+${r.servicesMoving}\\s+4\\s+`));
    }
    const html = fs.readFileSync(path.join(summaryDir, "fleet-summary.html"), "utf8");
    assert.equal([...html.matchAll(/<tr><td class="num">/g)].length, 3, "a row per cluster");
    // The saved preview is the `pulumi preview --json` document: the CI gate judges it against the stack's plan.
    const saved = path.join(summaryDir, summary.rows[2].previewFile!);
    const gate = await cli(["gate", saved, "--config", clusters[2].stack.stackFile, "--preflight", saved.replace(/\.json$/, ".preflight.json")], env);
    assert.equal(gate.exitCode, 0, `${gate.stdout}\n${gate.stderr}`);
    assert.deepEqual(await phases(), ["a: not started", "b: not started", "c: not started"], "preview changes nothing");
    // No secret in what the reviewers get: the summary, the saved previews and reports, the engine logs.
    const secrets = clusters.map((cl) => fs.readFileSync(path.join(cl.stack.dir, "id_ed25519"), "utf8").split("\n")[1]);
    const written = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? written(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    for (const file of written(summaryDir)) {
      const text = fs.readFileSync(file, "utf8");
      assert.ok(secrets.every((secret) => !text.includes(secret)), `no plaintext SSH key in ${file}`);
    }
    assert.ok(secrets.every((secret) => !`${result.stdout}${result.stderr}`.includes(secret)), "none in the output");
  });

  it("fleet up refuses a stack whose preview changed since the review, before its wave changes anything", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(clusters[1].kubeconfigPath);
    await kc.makeApiClient(CoreV1Api).createNamespacedService({ namespace: "default", body: { metadata: { name: "added-after-review" }, spec: { ports: [{ port: 80 }] } } });
    const result = await up();
    assert.equal(result.exitCode, 1, `${result.stdout}\n${result.stderr}`);
    assert.match(rowOf(result.stdout, clusters[1]), /refused\s+its preview changed since the review \(.*fleet-summary\.json\): .*differs.*; run fleet preview again and review it/);
    assert.match(rowOf(result.stdout, clusters[0]), /not started\s+wave 1 was refused before it started/);
    assert.match(rowOf(result.stdout, clusters[2]), /not started\s+wave 1 was refused before it started/);
    assert.deepEqual(await phases(), ["a: not started", "b: not started", "c: not started"]);
  });

  it("fleet up in waves: a failing stack stops wave 1 and wave 2 never starts; a second up resumes the reviewed change", async () => {
    const reviewed = await preview();
    assert.equal(reviewed.exitCode, 0, reviewed.stderr);
    const servicesBefore = await Promise.all(clusters.map(servicesIn));

    const first = await up();
    assert.equal(first.exitCode, 1, `${first.stdout}\n${first.stderr}`);
    const failedAtNodeStep = new RegExp(`failed\\s+${NODE_STEP_ERROR.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`);
    for (const cl of clusters.slice(0, 2)) assert.match(rowOf(first.stdout, cl), failedAtNodeStep);
    assert.match(rowOf(first.stdout, clusters[2]), /not started\s+fleet-[ab]-\d+ failed in wave 1/);
    assert.doesNotMatch(first.stderr, new RegExp(`wave 2`), "wave 2 was never checked or started");
    assert.deepEqual(await phases(), ["a: failed", "b: failed", "c: not started"]);
    assert.match(fs.readFileSync(path.join(summaryDir, "logs", fs.readdirSync(path.join(summaryDir, "logs")).find((f) => f.startsWith(`${clusters[0].stack.name}-`) && f.endsWith(".up.log"))!), "utf8"), /etcd-snapshot created/);

    // The first steps ran (the gate and the snapshot); the preview now shows them as `same`: still the reviewed change.
    const second = await up();
    assert.equal(second.exitCode, 1, second.stdout);
    for (const cl of clusters.slice(0, 2)) assert.match(rowOf(second.stdout, cl), failedAtNodeStep);
    assert.match(second.stderr, /wave 1: fleet-a-\d+: preview and gate again/);
    assert.deepEqual(await Promise.all(clusters.map(servicesIn)), servicesBefore, "no Service moved before the node step");
  });

  it("Ctrl-C: no new stack starts, the running engine gets one SIGINT and releases its stack", async () => {
    let sent = false;
    const result = await up((stderr, pid) => {
      if (!sent && /wave 1: fleet-a-\d+: up\n/.test(stderr)) {
        sent = true;
        process.kill(pid, "SIGINT");
      }
    });
    assert.ok(sent, result.stderr);
    assert.equal(result.exitCode, 130, `signal ${result.signal}\n${result.stdout}\n${result.stderr}`);
    assert.match(result.stderr, /fleet: cancelling: no new stack starts/);
    assert.doesNotMatch(result.stderr, /still cancelling/, "one SIGINT reached the fleet, and it was not passed on twice");
    assert.match(rowOf(result.stdout, clusters[2]), /not started\s+cancelled/);
    const status = await cli(["fleet", "status", fleetFile, "--json"], env);
    const rows = JSON.parse(status.stdout).stacks as Array<{ stack: string; phase: string }>;
    assert.ok(rows.every((r) => r.phase !== "running or interrupted"), JSON.stringify(rows));
    for (const cl of clusters.slice(0, 2)) {
      const exported = JSON.parse(await cl.stack.pulumiOk(["stack", "export"]));
      assert.deepEqual(exported.deployment.pending_operations ?? [], [], `${cl.stack.name}: no pending operation left`);
    }
  });

  it("docs/ci.md's fleet recipe as it stands: the first failing job stops it, the gate holds wave 2, and wave 2's job refuses to run early", async () => {
    const doc = fs.readFileSync(path.join(REPO_ROOT, "docs", "ci.md"), "utf8");
    const recipe = /## A fleet: one job per stack per wave[\s\S]*?```sh\n([\s\S]*?)```/.exec(doc)?.[1] ?? assert.fail("no shell block in docs/ci.md's fleet section");
    const script = path.join(work, "fleet-recipe.sh");
    fs.writeFileSync(script, recipe);
    const run = spawnSync("bash", [script], { cwd: REPO_ROOT, env: { ...process.env, ...env, FLEET: fleetFile, REVIEW: summaryDir }, encoding: "utf8" });
    assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, new RegExp(`${clusters[0].stack.name}\\s+failed\\s+cannot run the step on root@127\\.0\\.0\\.1:2201 over SSH`));
    assert.deepEqual(await phases(), ["a: failed", "b: failed", "c: not started"], "the script stopped at wave 1's first failure");

    const gate = await cli(["fleet", "status", fleetFile, "--wave", "1", "--expect-done"], env);
    assert.equal(gate.exitCode, 1, gate.stdout);
    const early = await cli(["fleet", "up", fleetFile, "--summary", path.join(summaryDir, "fleet-summary.json"), "--stack", clusters[2].stack.name], env);
    assert.equal(early.exitCode, 1, early.stdout);
    assert.match(early.stderr, new RegExp(`^cidr-migration: --stack ${clusters[2].stack.name} is in wave 2, and the waves before it are not done: ${clusters[0].stack.name} \\(wave 1\\) is failed; ${clusters[1].stack.name} \\(wave 1\\) is failed; finish them first\n$`));
    assert.deepEqual(await phases(), ["a: failed", "b: failed", "c: not started"]);
  });
});
