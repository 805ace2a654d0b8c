// The sandbox's lifecycle when `sandbox up` does not run to its end (issue 20, "Seen once"): its processes are
// detached before state.json is written, so an interrupted or killed start used to leave etcd, kube-apiserver and KCM
// running that `status` called "not started" and `down` never stopped, and the next `up` started a second set beside
// them. Real binaries, through the real CLI.
import * as assert from "assert";
import { ChildProcess, spawn } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CLI_BIN, REPO, runCli } from "../support/cli";
import { sleep } from "../testbed/processes";
import { sandboxProcesses } from "../testbed/sandbox";

function startUp(env: NodeJS.ProcessEnv): { child: ChildProcess; done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> } {
    const child = spawn(process.execPath, [CLI_BIN, "sandbox", "up"], { cwd: REPO, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stderr })));
    return { child, done };
}

/** Waits until the start has got as far as a running kube-apiserver (etcd is up before it). */
async function untilApiserverRuns(clusterDir: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!sandboxProcesses(clusterDir).some((p) => p.name === "kube-apiserver")) {
        if (Date.now() > deadline) throw new Error(`no kube-apiserver of ${clusterDir} within ${timeoutMs} ms`);
        await sleep(200);
    }
}

describe("sandbox lifecycle: a start that does not finish leaves nothing behind that status and down do not see", function () {
    this.timeout(300_000);
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let clusterDir: string;

    beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-lifecycle-"));
        env = { CIDR_MIGRATION_SANDBOX_DIR: dir };
        clusterDir = path.join(dir, "cluster");
    });

    afterEach(async () => {
        await runCli(["sandbox", "down"], { env });
        for (const p of sandboxProcesses(clusterDir)) {
            try { process.kill(p.pid, "SIGKILL"); } catch { /* gone */ }
        }
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("Ctrl-C during `sandbox up` stops what it had started, and status says not started", async () => {
        const { child, done } = startUp(env);
        await untilApiserverRuns(clusterDir);
        child.kill("SIGINT");
        const result = await done;
        assert.strictEqual(result.code, 130, result.stderr);
        assert.match(result.stderr, /sandbox: SIGINT while starting; stopping what was started/);
        assert.deepStrictEqual(sandboxProcesses(clusterDir), []);
        const status = JSON.parse((await runCli(["sandbox", "status"], { env })).stdout);
        assert.match(status.reason, /^not started/);
    });

    it("a `sandbox up` killed outright: status names what runs; the next `up` stops it first and runs alone", async () => {
        const first = startUp(env);
        await untilApiserverRuns(clusterDir);
        first.child.kill("SIGKILL");
        await first.done;
        const leftBehind = sandboxProcesses(clusterDir);
        assert.ok(leftBehind.length >= 2, JSON.stringify(leftBehind));

        const status = await runCli(["sandbox", "status"], { env });
        assert.strictEqual(status.code, 1);
        const half = JSON.parse(status.stdout);
        assert.match(half.reason, /^half started: .*kube-apiserver \(pid \d+\).*no state\.json records them/);
        assert.deepStrictEqual(half.processes, leftBehind);

        const up = await runCli(["sandbox", "up"], { env });
        assert.strictEqual(up.code, 0, up.stderr);
        const running = JSON.parse((await runCli(["sandbox", "status"], { env })).stdout);
        assert.strictEqual(running.running, true, running.reason);
        assert.strictEqual(running.strays, undefined, "nothing runs beside the new sandbox");
        const now = sandboxProcesses(clusterDir);
        assert.deepStrictEqual(now.map((p) => p.pid).sort(), Object.values(running.pids as Record<string, number>).sort());
        for (const old of leftBehind) assert.ok(!now.some((p) => p.pid === old.pid), `left-behind ${old.name} ${old.pid} was stopped`);

        assert.strictEqual((await runCli(["sandbox", "down"], { env })).code, 0);
        assert.deepStrictEqual(sandboxProcesses(clusterDir), []);
    });
});
