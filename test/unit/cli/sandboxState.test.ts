import * as assert from "node:assert/strict";
import { ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { REPO, runCli } from "../../support/cli";

// Issue 20, "Seen once": a sandbox whose processes run with no state.json (a `sandbox up` that died between starting
// them and writing it) must be reported as such by `status` and stopped by `down`. No Kubernetes binary runs here:
// stand-ins are the node binary under the components' names, with the sandbox's cluster dir on their command line,
// which is all that tells the sandbox's processes apart.

const execFileAsync = promisify(execFile);

interface Fake { child: ChildProcess; pid: number; exited: Promise<void>; }

describe("sandbox: status and down see every process of the sandbox dir, state.json or not", () => {
  let dir: string;
  let sandboxDir: string;
  let clusterDir: string;
  let fakes: Fake[] = [];

  function startFake(name: string): Fake {
    const bin = path.join(dir, "bin", name);
    fs.mkdirSync(path.dirname(bin), { recursive: true });
    if (!fs.existsSync(bin)) fs.symlinkSync(process.execPath, bin);
    const child = spawn(bin, ["-e", "setInterval(() => {}, 1000)", "--", `--data-dir=${clusterDir}/${name}/data`], { stdio: "ignore", detached: true });
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    const fake = { child, pid: child.pid!, exited };
    fakes.push(fake);
    return fake;
  }

  async function gone(fake: Fake, ms = 15_000): Promise<boolean> {
    return Promise.race([fake.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
  }

  const env = () => ({ CIDR_MIGRATION_SANDBOX_DIR: sandboxDir });

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-state-"));
    sandboxDir = path.join(dir, "sandbox");
    clusterDir = path.join(sandboxDir, "cluster");
    fs.mkdirSync(clusterDir, { recursive: true });
  });

  afterEach(async () => {
    for (const f of fakes) {
      try { process.kill(f.pid, "SIGKILL"); } catch { /* gone */ }
      await gone(f, 2000);
    }
    fakes = [];
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("no state.json but etcd and kube-apiserver run: status says half started and names them; down stops them and clears the dir", async function () {
    this.timeout(60_000);
    const etcd = startFake("etcd");
    const apiserver = startFake("kube-apiserver");
    const status = await runCli(["sandbox", "status"], { env: env() });
    assert.equal(status.code, 1, status.stderr);
    const body = JSON.parse(status.stdout);
    assert.equal(body.running, false);
    assert.match(body.reason, new RegExp(`^half started: kube-apiserver \\(pid ${apiserver.pid}\\), etcd \\(pid ${etcd.pid}\\) run from .* but no state\\.json records them .*run \`cidr-migration sandbox down\``));
    assert.deepEqual(body.processes, [{ name: "kube-apiserver", pid: apiserver.pid }, { name: "etcd", pid: etcd.pid }]);

    const down = await runCli(["sandbox", "down"], { env: env() });
    assert.equal(down.code, 0, down.stderr);
    assert.ok(await gone(etcd), "etcd stopped");
    assert.ok(await gone(apiserver), "kube-apiserver stopped");
    assert.equal(fs.existsSync(clusterDir), false);
    const after = JSON.parse((await runCli(["sandbox", "status"], { env: env() })).stdout);
    assert.match(after.reason, /^not started \(no state\.json\)/);
  });

  it("state.json whose etcd died while kube-apiserver and KCM run: status names the dead and the living; down stops the living", async function () {
    this.timeout(60_000);
    const apiserver = startFake("kube-apiserver");
    const kcm = startFake("kube-controller-manager");
    const deadEtcd = startFake("etcd");
    process.kill(deadEtcd.pid, "SIGTERM");
    await gone(deadEtcd);
    fs.writeFileSync(path.join(sandboxDir, "state.json"), JSON.stringify({
      version: 1, stateDir: sandboxDir, clusterDir, kubeconfigPath: path.join(clusterDir, "admin.kubeconfig"), server: "https://127.0.0.1:1",
      pids: { etcd: deadEtcd.pid, apiserver: apiserver.pid, controllerManager: kcm.pid }, ports: { etcd: 1, apiserver: 1, controllerManager: 1 },
      serviceCidr: "10.96.0.0/12", podCidr: "10.244.0.0/16", nodeCidrMaskSize: 24, seedPath: path.join(sandboxDir, "seed.json"), startedAt: "",
    }));
    const status = JSON.parse((await runCli(["sandbox", "status"], { env: env() })).stdout);
    assert.equal(status.running, false);
    assert.match(status.reason, new RegExp(`^etcd not running .*; still running: kube-controller-manager \\(pid ${kcm.pid}\\), kube-apiserver \\(pid ${apiserver.pid}\\)`));
    assert.equal((await runCli(["sandbox", "down"], { env: env() })).code, 0);
    assert.ok(await gone(kcm) && await gone(apiserver), "both stopped");
  });

  it("a process of another sandbox dir, or one that is no sandbox component, is left alone", async function () {
    this.timeout(60_000);
    const ours = startFake("etcd");
    const otherDir = clusterDir;
    clusterDir = path.join(dir, "other-sandbox", "cluster");
    const theirs = startFake("etcd");
    clusterDir = otherDir;
    const tail = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", "--", `${clusterDir}/etcd/etcd.log`], { stdio: "ignore" });
    try {
      assert.equal((await runCli(["sandbox", "down"], { env: env() })).code, 0);
      assert.ok(await gone(ours));
      assert.equal(theirs.child.exitCode, null, "another dir's etcd runs on");
      assert.equal(tail.exitCode, null, "a non-component naming the dir runs on");
    } finally {
      tail.kill("SIGKILL");
    }
  });
});

describe("sandbox up: what it says", () => {
  it("asked for the sandbox, it does not say \"no cluster named\"; plan with no cluster named still does", async function () {
    this.timeout(60_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-up-"));
    // no binaries in this cache: the start fails at once, after the line in question
    const env = { CIDR_MIGRATION_SANDBOX_DIR: path.join(dir, "sandbox"), CIDR_MIGRATION_CACHE: dir, KUBEBUILDER_ASSETS: "" };
    try {
      const [up, plan] = await Promise.all([runCli(["sandbox", "up"], { env }), runCli(["plan"], { env: { ...env, CIDR_MIGRATION_SANDBOX_DIR: path.join(dir, "sandbox-2") } })]);
      assert.equal(up.stderr.split("\n")[0], "cidr-migration: starting the local sandbox (about 30 s)");
      assert.doesNotMatch(up.stderr, /no cluster named/);
      assert.match(up.stderr, /^cidr-migration: sandbox: could not start: .*not found/m);
      assert.equal(up.code, 3, "a sandbox that cannot start is no internal error");
      assert.match(plan.stderr, /^cidr-migration: no cluster named; starting the local sandbox/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("test bed processes: stop() of a detached process", () => {
  it("keeps this process alive until the child is gone, even when it ignores SIGTERM and needs the SIGKILL", async function () {
    this.timeout(30_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "stop-detached-"));
    const script = `
      const { startProcess } = require(${JSON.stringify(path.join(REPO, "test", "testbed", "processes.ts"))});
      const stubborn = "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)";
      const p = startProcess(process.execPath, ["-e", stubborn], ${JSON.stringify(path.join(dir, "log"))}, { detached: true });
      setTimeout(async () => {
        await p.stop(300);
        process.stdout.write("stopped " + p.pid + "\\n");
      }, 500);`;
    try {
      const { stdout } = await execFileAsync(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], { cwd: REPO });
      assert.match(stdout, /^stopped \d+\n$/, "the stop sequence ran to its end");
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
