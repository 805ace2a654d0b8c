// The local sandbox behind `cidr-migration sandbox up|down|status` (and the
// default target of `cidr-migration plan`): the test bed's control plane,
// started detached so it outlives the CLI, seeded with a realistic workload in
// the old ranges. A state.json in the sandbox dir lets a later CLI process find
// and stop it by pid. Runtime code: no mocha, nothing read from ../shared.
import { KubeConfig } from "@kubernetes/client-node";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { startTestCluster, TestCluster } from "./controlPlane";
import { httpGet } from "./etcd";
import { cacheRoot } from "./kubeVersion";
import { killPid, pidAlive, sleep } from "./processes";
import { OLD_CLUSTER_DNS_IP, OLD_NODE_CIDR_MASK_SIZE, OLD_POD_CIDR, OLD_SERVICE_CIDR, SeededWorkload, seedWorkload } from "./seed";

export { OLD_CLUSTER_DNS_IP, OLD_NODE_CIDR_MASK_SIZE, OLD_POD_CIDR, OLD_SERVICE_CIDR };
export const SANDBOX_SERVICE_CIDR = OLD_SERVICE_CIDR;
export const SANDBOX_POD_CIDR = OLD_POD_CIDR;
export const SANDBOX_NODE_CIDR_MASK_SIZE = OLD_NODE_CIDR_MASK_SIZE;

const STATE_VERSION = 1;
/**
 * etcd's client port in the sandbox: fixed, because Pulumi.sandbox.yaml names it (cidr-migration:etcd.endpoints).
 * A sandbox in another directory (CIDR_MIGRATION_SANDBOX_DIR, the tests') takes a free port, so both can run.
 */
export const SANDBOX_ETCD_PORT = 23790;
function sandboxEtcdPort(): number | undefined {
    return process.env.CIDR_MIGRATION_SANDBOX_DIR === undefined ? SANDBOX_ETCD_PORT : undefined;
}
const LOCK_WAIT_MS = 240_000;

export interface SandboxInfo {
    stateDir: string;
    /** where the control plane's certs, data and logs live */
    clusterDir: string;
    kubeconfigPath: string;
    server: string;
    pids: { etcd: number; apiserver: number; controllerManager: number };
    ports: { etcd: number; apiserver: number; controllerManager: number };
    serviceCidr: string;
    podCidr: string;
    nodeCidrMaskSize: number;
    /** the SeededWorkload as JSON (see readSandboxSeed) */
    seedPath: string;
    startedAt: string;
}

/** A process of the sandbox found by its command line (see sandboxProcesses). */
export interface SandboxProcess { name: string; pid: number; }

export type SandboxStatus =
    /** `strays`: sandbox processes state.json does not list (left by an earlier, interrupted start) */
    | ({ running: true; strays?: SandboxProcess[] } & SandboxInfo)
    /** `processes`: what of the sandbox still runs, when anything does */
    | { running: false; stateDir: string; reason: string; processes?: SandboxProcess[] };

interface SandboxState extends SandboxInfo { version: number; }

export function sandboxDir(): string {
    return process.env.CIDR_MIGRATION_SANDBOX_DIR ?? path.join(cacheRoot(), "sandbox");
}

function statePath(): string { return path.join(sandboxDir(), "state.json"); }
function lockPath(): string { return path.join(sandboxDir(), "up.lock"); }
function clusterDirOf(state?: SandboxState): string { return state?.clusterDir ?? path.join(sandboxDir(), "cluster"); }

/** The sandbox's components, in the order they are stopped (KCM first: it fails least gently without an apiserver). */
const COMPONENTS = ["kube-controller-manager", "kube-apiserver", "etcd"];

/**
 * Every running etcd, kube-apiserver and kube-controller-manager whose command line names the cluster dir, found in
 * /proc whatever state.json says. The processes are detached before state.json is written, so a `sandbox up` that
 * dies or is interrupted in between leaves processes no state lists; status and down find them here.
 */
export function sandboxProcesses(clusterDir = clusterDirOf()): SandboxProcess[] {
    let entries: string[];
    try {
        entries = fs.readdirSync("/proc");
    } catch {
        return [];
    }
    const found: SandboxProcess[] = [];
    for (const entry of entries) {
        if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
        let argv: string[];
        try {
            argv = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").filter((a) => a !== "");
        } catch {
            continue;
        }
        const name = argv.length > 0 ? path.basename(argv[0]) : "";
        if (!COMPONENTS.includes(name)) continue;
        if (!argv.slice(1).some((a) => a.includes(`${clusterDir}${path.sep}`))) continue;
        found.push({ name, pid: Number(entry) });
    }
    return found.sort((a, b) => COMPONENTS.indexOf(a.name) - COMPONENTS.indexOf(b.name) || a.pid - b.pid);
}

function listProcesses(procs: SandboxProcess[]): string {
    return procs.map((p) => `${p.name} (pid ${p.pid})`).join(", ");
}

/** The pid of another live process holding up.lock, when a `sandbox up` is under way. */
function upInProgress(): number | undefined {
    try {
        const holder = Number(fs.readFileSync(lockPath(), "utf8").trim());
        return holder && holder !== process.pid && pidAlive(holder) ? holder : undefined;
    } catch {
        return undefined;
    }
}

function readState(): SandboxState | undefined {
    try {
        const state = JSON.parse(fs.readFileSync(statePath(), "utf8")) as SandboxState;
        return state.version === STATE_VERSION ? state : undefined;
    } catch {
        return undefined;
    }
}

function writeFileAtomic(file: string, text: string): void {
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, text, { mode: 0o600 });
    fs.renameSync(temp, file);
}

/**
 * A pid from state.json is only ours if its command line names the sandbox's
 * cluster dir: after a reboot the number may belong to something else.
 */
function pidIsOurs(pid: number, clusterDir: string): boolean {
    if (!pid || !pidAlive(pid)) return false;
    try {
        return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(clusterDir);
    } catch {
        return false;
    }
}

async function apiserverReady(state: SandboxState): Promise<boolean> {
    const pki = path.join(state.clusterDir, "pki");
    const tls = { caCertPath: path.join(pki, "ca.crt"), certPath: path.join(pki, "admin.crt"), keyPath: path.join(pki, "admin.key") };
    try {
        const { status, body } = await httpGet(`${state.server}/readyz`, tls);
        return status === 200 && body.trim() === "ok";
    } catch {
        return false;
    }
}

function publicInfo(state: SandboxState): SandboxInfo {
    const { version: _version, ...info } = state;
    return info;
}

export async function sandboxStatus(): Promise<SandboxStatus> {
    const stateDir = sandboxDir();
    const state = readState();
    const processes = sandboxProcesses(clusterDirOf(state));
    const starting = upInProgress();
    if (!state) {
        if (starting !== undefined) {
            return { running: false, stateDir, reason: `starting: a \`sandbox up\` (pid ${starting}) holds ${lockPath()}`, processes };
        }
        if (processes.length > 0) {
            return {
                running: false, stateDir, processes,
                reason: `half started: ${listProcesses(processes)} run from ${clusterDirOf()} but no state.json records them ` +
                    "(a `sandbox up` was interrupted or failed): run `cidr-migration sandbox down` to stop them, then `up`",
            };
        }
        return { running: false, stateDir, reason: "not started (no state.json): run `cidr-migration sandbox up`" };
    }
    const dead = (Object.entries(state.pids) as [string, number][])
        .filter(([, pid]) => !pidIsOurs(pid, state.clusterDir)).map(([name]) => name);
    if (dead.length > 0) {
        const alive = processes.length > 0 ? `; still running: ${listProcesses(processes)}` : "";
        return {
            running: false, stateDir, ...(processes.length > 0 ? { processes } : {}),
            reason: `${dead.join(", ")} not running (see logs in ${state.clusterDir})${alive}: run \`cidr-migration sandbox down\`, then \`up\``,
        };
    }
    if (!(await apiserverReady(state))) {
        return { running: false, stateDir, processes, reason: `kube-apiserver at ${state.server} does not answer /readyz (log: ${path.join(state.clusterDir, "kube-apiserver.log")})` };
    }
    const listed = Object.values(state.pids);
    const strays = processes.filter((p) => !listed.includes(p.pid));
    return { running: true, ...publicInfo(state), ...(strays.length > 0 ? { strays } : {}) };
}

/** The workload the running sandbox was seeded with. */
export function readSandboxSeed(): SeededWorkload {
    const state = readState();
    if (!state) throw new Error(`sandbox: no state in ${sandboxDir()}: run \`cidr-migration sandbox up\``);
    return JSON.parse(fs.readFileSync(state.seedPath, "utf8")) as SeededWorkload;
}

/** A KubeConfig for the running sandbox. */
export function sandboxKubeConfig(): KubeConfig {
    const state = readState();
    if (!state) throw new Error(`sandbox: no state in ${sandboxDir()}: run \`cidr-migration sandbox up\``);
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfigPath);
    return kc;
}

/** Stops every process of the sandbox: the ones state.json lists (if ours), then any other naming its cluster dir. */
async function stopSandboxProcesses(state: SandboxState | undefined): Promise<void> {
    const clusterDir = clusterDirOf(state);
    const listed = state ? [state.pids.controllerManager, state.pids.apiserver, state.pids.etcd].filter((pid) => pidIsOurs(pid, clusterDir)) : [];
    for (const pid of listed) await killPid(pid);
    // what no state lists: an interrupted start's processes, or one started beside a sandbox whose state was lost
    for (let round = 0; round < 3; round++) {
        const left = sandboxProcesses(clusterDir);
        if (left.length === 0) return;
        for (const p of left) await killPid(p.pid);
    }
}

/** Kills what a previous sandbox left behind and removes its files. */
async function removeSandbox(state: SandboxState | undefined): Promise<void> {
    await stopSandboxProcesses(state);
    fs.rmSync(clusterDirOf(state), { recursive: true, force: true });
    fs.rmSync(state?.seedPath ?? path.join(sandboxDir(), "seed.json"), { force: true });
    fs.rmSync(statePath(), { force: true });
}

/**
 * While `sandbox up` starts processes that outlive it, SIGINT, SIGTERM or SIGHUP stop them before this process exits:
 * otherwise they run on with no state.json to find them by. Prepended, so it runs before a handler that exits at once
 * (processes.ts's exit hook); the SIGTERMs are sent synchronously for that case. Returns the uninstaller.
 */
function stopOnSignal(clusterDir: string): () => void {
    const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
    let stopping = false;
    const handler = (signal: NodeJS.Signals) => {
        if (stopping) return;
        stopping = true;
        process.stderr.write(`sandbox: ${signal} while starting; stopping what was started in ${clusterDir}\n`);
        for (const p of sandboxProcesses(clusterDir)) {
            try { process.kill(p.pid, "SIGTERM"); } catch { /* gone */ }
        }
        void stopSandboxProcesses(undefined).finally(() => {
            fs.rmSync(statePath(), { force: true });
            fs.rmSync(lockPath(), { force: true });
            process.exit(128 + (os.constants.signals[signal] ?? 1));
        });
    };
    for (const signal of signals) process.prependListener(signal, handler);
    return () => { for (const signal of signals) process.removeListener(signal, handler); };
}

/** One `sandbox up` at a time: a lock file holding the pid of the process starting it. */
async function withUpLock<T>(work: () => Promise<T>): Promise<T> {
    fs.mkdirSync(sandboxDir(), { recursive: true, mode: 0o700 });
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
        // The lock is born with its pid (a hard link of a written file): a plain create-then-write showed another
        // process an empty lock for a moment, which it took for a dead holder's and removed, and both went on.
        const temp = `${lockPath()}.${process.pid}.tmp`;
        fs.writeFileSync(temp, String(process.pid));
        try {
            fs.linkSync(temp, lockPath());
            break;
        } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
            const holder = Number(fs.readFileSync(lockPath(), "utf8").trim());
            if (!holder || !pidAlive(holder)) {
                fs.rmSync(lockPath(), { force: true });
                continue;
            }
            if (Date.now() > deadline) {
                throw new Error(`sandbox: another \`sandbox up\` (pid ${holder}) has held ${lockPath()} for ${LOCK_WAIT_MS / 1000} s: stop it, or remove the lock file`);
            }
            await sleep(500);
        } finally {
            fs.rmSync(temp, { force: true });
        }
    }
    try {
        return await work();
    } finally {
        fs.rmSync(lockPath(), { force: true });
    }
}

/** Starts and seeds the sandbox, or returns the running one. Prints nothing. */
export async function sandboxUp(): Promise<SandboxInfo> {
    return withUpLock(async () => {
        const status = await sandboxStatus();
        if (status.running) return publicInfo({ version: STATE_VERSION, ...status });
        await removeSandbox(readState());

        const stateDir = sandboxDir();
        const clusterDir = path.join(stateDir, "cluster");
        fs.rmSync(clusterDir, { recursive: true, force: true });
        const seedPath = path.join(stateDir, "seed.json");
        let cluster: TestCluster | undefined;
        const uninstall = stopOnSignal(clusterDir);
        try {
            cluster = await startTestCluster({
                dir: clusterDir, detached: true, etcdClientPort: sandboxEtcdPort(),
                serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize: OLD_NODE_CIDR_MASK_SIZE,
            });
            const seeded = await seedWorkload(cluster.kubeConfig());
            writeFileAtomic(seedPath, JSON.stringify(seeded, null, 2) + "\n");
            const pids = cluster.pids();
            const ports = cluster.ports();
            const state: SandboxState = {
                version: STATE_VERSION,
                stateDir,
                clusterDir,
                kubeconfigPath: cluster.kubeconfigPath,
                server: cluster.server,
                pids: { etcd: pids.etcd, apiserver: pids.apiserver, controllerManager: pids.controllerManager ?? 0 },
                ports: { etcd: ports.etcd, apiserver: ports.apiserver, controllerManager: ports.controllerManager ?? 0 },
                serviceCidr: OLD_SERVICE_CIDR,
                podCidr: OLD_POD_CIDR,
                nodeCidrMaskSize: OLD_NODE_CIDR_MASK_SIZE,
                seedPath,
                startedAt: new Date().toISOString(),
            };
            writeFileAtomic(statePath(), JSON.stringify(state, null, 2) + "\n");
            return publicInfo(state);
        } catch (err) {
            await cluster?.stop();
            fs.rmSync(seedPath, { force: true });
            // the cluster dir stays for its logs; the next `up` clears it
            throw new Error(`sandbox: could not start: ${(err as Error).message.split("\n")[0]} (logs in ${clusterDir})`);
        } finally {
            uninstall();
        }
    });
}

/** Stops the sandbox's processes by pid and removes its data. Safe when nothing runs. */
export async function sandboxDown(): Promise<void> {
    await withUpLock(() => removeSandbox(readState()));
}
