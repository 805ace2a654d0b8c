// Child processes of the test bed: started with their output in a log file,
// tracked by pid, and killed by pid when stopped or when this Node process exits
// (so a crashed mocha run does not leave etcd or an apiserver holding ports).
import { spawn } from "child_process";
import * as fs from "fs";

export interface ManagedProcess {
    pid: number;
    logPath: string;
    /** true once the process has exited (for any reason) */
    exited(): boolean;
    exitCode(): number | null;
    /** resolves when the process has exited */
    waitExit(): Promise<void>;
    /** SIGTERM, then SIGKILL after graceMs; resolves when the process is gone */
    stop(graceMs?: number): Promise<void>;
    /** the last `lines` lines of its log */
    logTail(lines?: number): string;
}

const trackedPids = new Set<number>();
let exitHookInstalled = false;

function installExitHook(): void {
    if (exitHookInstalled) return;
    exitHookInstalled = true;
    // "exit" handlers must be synchronous: a SIGKILL by pid is.
    process.on("exit", () => {
        for (const pid of trackedPids) {
            try { process.kill(pid, "SIGKILL"); } catch { /* already gone */ }
        }
    });
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => process.exit(130));
    }
}

/** Environment without ETCD_* / KUBECONFIG leaking in from the caller's shell. */
function cleanEnv(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) {
        if (key.startsWith("ETCD_") || key === "KUBECONFIG") continue;
        env[key] = value;
    }
    return env;
}

export function readLogTail(logPath: string, lines = 30): string {
    try {
        const text = fs.readFileSync(logPath, "utf8");
        return text.split("\n").slice(-lines - 1).join("\n").trim();
    } catch {
        return "";
    }
}

/**
 * Starts `command args` with stdout+stderr appended to logPath.
 * detached=true makes it outlive this process (the sandbox): it is then not
 * tracked for the exit hook, and the caller records its pid.
 */
export function startProcess(command: string, args: string[], logPath: string, opts: { detached?: boolean } = {}): ManagedProcess {
    const logFd = fs.openSync(logPath, "a");
    fs.writeSync(logFd, `--- ${new Date().toISOString()} ${command} ${args.join(" ")}\n`);
    const child = spawn(command, args, {
        stdio: ["ignore", logFd, logFd],
        env: cleanEnv(),
        detached: opts.detached === true,
    });
    fs.closeSync(logFd);
    if (child.pid === undefined) {
        throw new Error(`could not start ${command}: ${readLogTail(logPath, 5)}`);
    }
    const pid = child.pid;
    let hasExited = false;
    let code: number | null = null;
    const exitPromise = new Promise<void>((resolve) => {
        child.once("exit", (exitCode, signal) => {
            hasExited = true;
            code = exitCode ?? (signal ? 128 : null);
            trackedPids.delete(pid);
            resolve();
        });
        child.once("error", () => {
            hasExited = true;
            trackedPids.delete(pid);
            resolve();
        });
    });
    if (opts.detached) {
        child.unref();
    } else {
        installExitHook();
        trackedPids.add(pid);
    }
    return {
        pid,
        logPath,
        exited: () => hasExited,
        exitCode: () => code,
        waitExit: () => exitPromise,
        async stop(graceMs = 5000) {
            if (hasExited) return;
            try { process.kill(pid, "SIGTERM"); } catch { /* already gone */ }
            const timer = setTimeout(() => {
                try { process.kill(pid, "SIGKILL"); } catch { /* already gone */ }
            }, graceMs);
            // A detached child is unref'd: once the SIGKILL timer has fired nothing else may hold the event loop, and
            // Node would exit before the child's exit event, abandoning the rest of a stop sequence (a sandbox whose
            // KCM was stopped but not its apiserver and etcd). This interval holds the loop until the exit is seen.
            const keepAlive = setInterval(() => { /* hold the event loop */ }, 1000);
            await exitPromise;
            clearTimeout(timer);
            clearInterval(keepAlive);
        },
        logTail: (lines?: number) => readLogTail(logPath, lines),
    };
}

/** Is a process with this pid alive (used for detached processes found in state files)? */
export function pidAlive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (err) {
        return (err as NodeJS.ErrnoException).code === "EPERM";
    }
}

/** Kills a process that is not our child (e.g. a detached sandbox process) by pid and waits until it is gone. */
export async function killPid(pid: number, graceMs = 5000): Promise<void> {
    if (!pidAlive(pid)) return;
    try { process.kill(pid, "SIGTERM"); } catch { return; }
    const deadline = Date.now() + graceMs;
    while (pidAlive(pid) && Date.now() < deadline) await sleep(100);
    if (pidAlive(pid)) {
        try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
        while (pidAlive(pid)) await sleep(50);
    }
}

export function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` until it returns true. Fails early when `failed()` says the
 * process died, and after timeoutMs with `describe()` in the message.
 */
export async function waitUntil(probe: () => Promise<boolean>, opts: {
    timeoutMs: number; intervalMs?: number; what: string; failed?: () => string | undefined;
}): Promise<void> {
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
        const failure = opts.failed?.();
        if (failure !== undefined) throw new Error(`${opts.what}: ${failure}`);
        if (await probe().catch(() => false)) return;
        if (Date.now() > deadline) throw new Error(`${opts.what}: not ready after ${opts.timeoutMs} ms`);
        await sleep(opts.intervalMs ?? 200);
    }
}

/** Polls `probe` until it returns a value (not undefined), and returns it; fails after timeoutMs naming `what`. */
export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 200): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
        const value = await probe();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms`);
        await sleep(intervalMs);
    }
}
