// The local sandbox behind `cidr-migration sandbox up|down|status` (and the
// default target of `cidr-migration plan`): the test bed's control plane,
// started detached so it outlives the CLI, seeded with a realistic workload in
// the old ranges. A state.json in the sandbox dir lets a later CLI process find
// and stop it by pid. Runtime code: no mocha, nothing read from ../shared.
import { KubeConfig } from "@kubernetes/client-node";
import * as fs from "fs";
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

export type SandboxStatus =
    | ({ running: true } & SandboxInfo)
    | { running: false; stateDir: string; reason: string };

interface SandboxState extends SandboxInfo { version: number; }

export function sandboxDir(): string {
    return process.env.CIDR_MIGRATION_SANDBOX_DIR ?? path.join(cacheRoot(), "sandbox");
}

function statePath(): string { return path.join(sandboxDir(), "state.json"); }
function lockPath(): string { return path.join(sandboxDir(), "up.lock"); }

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
    if (!state) return { running: false, stateDir, reason: "not started (no state.json): run `cidr-migration sandbox up`" };
    const dead = (Object.entries(state.pids) as [string, number][])
        .filter(([, pid]) => !pidIsOurs(pid, state.clusterDir)).map(([name]) => name);
    if (dead.length > 0) {
        return { running: false, stateDir, reason: `${dead.join(", ")} not running (see logs in ${state.clusterDir}): run \`cidr-migration sandbox down\`, then \`up\`` };
    }
    if (!(await apiserverReady(state))) {
        return { running: false, stateDir, reason: `kube-apiserver at ${state.server} does not answer /readyz (log: ${path.join(state.clusterDir, "kube-apiserver.log")})` };
    }
    return { running: true, ...publicInfo(state) };
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

/** Kills what a previous sandbox left behind (by pid, only if it is ours) and removes its files. */
async function removeSandbox(state: SandboxState | undefined): Promise<void> {
    if (state) {
        for (const pid of [state.pids.controllerManager, state.pids.apiserver, state.pids.etcd]) {
            if (pidIsOurs(pid, state.clusterDir)) await killPid(pid);
        }
        fs.rmSync(state.clusterDir, { recursive: true, force: true });
        fs.rmSync(state.seedPath, { force: true });
    }
    fs.rmSync(statePath(), { force: true });
}

/** One `sandbox up` at a time: a lock file holding the pid of the process starting it. */
async function withUpLock<T>(work: () => Promise<T>): Promise<T> {
    fs.mkdirSync(sandboxDir(), { recursive: true, mode: 0o700 });
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
        try {
            fs.writeFileSync(lockPath(), String(process.pid), { flag: "wx" });
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
        try {
            cluster = await startTestCluster({
                dir: clusterDir, detached: true,
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
        }
    });
}

/** Stops the sandbox's processes by pid and removes its data. Safe when nothing runs. */
export async function sandboxDown(): Promise<void> {
    await withUpLock(() => removeSandbox(readState()));
}
