// A real OpenSSH server on 127.0.0.1 (Debian openssh-server) for the tests of remote node steps: a throwaway
// host key and client key in a temp dir, key-only login. `runStep` runs a declared RemoteScript through its real
// provider (dynamic-providers/remoteScript.ts, so lib/remote/sshExec's openssh client and settings). Optionally
// inside a network namespace, so scripts that delete links (cni0, flannel.1) only ever see the namespace's
// devices; the provider's `ssh` then finds a wrapper first on PATH that enters the namespace.
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { remoteScriptProvider } from "../../dynamic-providers/remoteScript";
import { runScriptOverSsh } from "../../lib/remote/sshExec";
import { freePort } from "./etcd";
import { ManagedProcess, sleep, startProcess } from "./processes";

const execFileAsync = promisify(execFile);
const SSHD = "/usr/sbin/sshd";
const READY_TIMEOUT_MS = 20_000;

export interface SshdOptions {
    /** Run sshd (and the client) inside this existing network namespace (`ip netns add` it first). */
    netns?: string;
    /** Environment of every session (sshd SetEnv), e.g. a PATH with fake systemctl/kubeadm first. */
    sessionEnv?: Record<string, string>;
    /** Login user (default root: the node steps run as root). */
    user?: string;
    /** Listen on every address of the namespace, not only 127.0.0.1 (a node reached at an address a test moves). */
    listenAll?: boolean;
}

export interface SshServer {
    host: string;
    port: number;
    user: string;
    /** The client's private key (OpenSSH PEM), as a stack would hold it in `ssh.privateKey`. */
    privateKey: string;
    /** The server's host key line ("ssh-ed25519 AAAA..."), as a RemoteScript's `connection.hostKey` takes it. */
    hostKey: string;
    dir: string;
    pid: number;
    log(): string;
    /** Runs a declared RemoteScript (its inputs as the engine hands them over) through the real provider's create. */
    runStep(inputs: Record<string, unknown>): Promise<{ stdout: string; stderr: string }>;
    stop(): Promise<void>;
}

function inNetns(netns: string | undefined, argv: string[]): string[] {
    return netns ? ["ip", "netns", "exec", netns, ...argv] : argv;
}

export async function startSshd(opts: SshdOptions = {}): Promise<SshServer> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-sshd-"));
    const user = opts.user ?? "root";
    await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "cidr-migration-test-host", "-f", path.join(dir, "host_key")]);
    await execFileAsync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "cidr-migration-test-client", "-f", path.join(dir, "client_key")]);
    fs.copyFileSync(path.join(dir, "client_key.pub"), path.join(dir, "authorized_keys"));
    const hostKey = fs.readFileSync(path.join(dir, "host_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ");
    // sshd's privilege separation directory
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });

    // the netns has its own port space; a free port on the host is as good a guess as any there
    const port = await freePort();
    const config = [
        `Port ${port}`,
        `ListenAddress ${opts.listenAll ? "0.0.0.0" : "127.0.0.1"}`,
        `HostKey ${path.join(dir, "host_key")}`,
        `PidFile ${path.join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
        `AllowUsers ${user}`,
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        // the temp dir lives under the world-writable /tmp
        "StrictModes no",
        "LogLevel VERBOSE",
        ...(opts.sessionEnv ? [`SetEnv ${Object.entries(opts.sessionEnv).map(([k, v]) => `${k}=${v}`).join(" ")}`] : []),
    ];
    fs.writeFileSync(path.join(dir, "sshd_config"), `${config.join("\n")}\n`);
    const argv = inNetns(opts.netns, [SSHD, "-D", "-e", "-f", path.join(dir, "sshd_config")]);
    const proc: ManagedProcess = startProcess(argv[0], argv.slice(1), path.join(dir, "sshd.log"));

    const privateKey = fs.readFileSync(path.join(dir, "client_key"), "utf8");

    // In a namespace, the provider's `ssh` must run there too: a wrapper first on PATH takes it in.
    const clientBin = path.join(dir, "client-bin");
    if (opts.netns) {
        fs.mkdirSync(clientBin);
        fs.writeFileSync(path.join(clientBin, "ssh"), `#!/bin/sh\nexec ip netns exec '${opts.netns}' /usr/bin/ssh "$@"\n`, { mode: 0o755 });
    }
    async function withClient<T>(fn: () => Promise<T>): Promise<T> {
        const pathBefore = process.env.PATH;
        if (opts.netns) process.env.PATH = `${clientBin}:${pathBefore ?? ""}`;
        try {
            return await fn();
        } finally {
            process.env.PATH = pathBefore;
        }
    }
    async function runStep(inputs: Record<string, unknown>): Promise<{ stdout: string; stderr: string }> {
        const { outs } = await withClient(() => remoteScriptProvider.create!(inputs));
        return { stdout: outs!.stdout, stderr: outs!.stderr };
    }

    const self = { host: "127.0.0.1", port, user, privateKey };
    // Ready when a session with the test key and the pinned host key runs, the way every node step connects.
    const probeTarget = { ...self, hostKey, dialErrorLimit: 1, perDialTimeoutSeconds: 10 };
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
        if (proc.exited()) throw new Error(`sshd exited (${proc.exitCode()}):\n${proc.logTail(20)}`);
        const probe = await withClient(() => runScriptOverSsh(probeTarget, "true")).catch((err: Error) => ({ exitCode: -1, stdout: "", stderr: err.message }));
        if (probe.exitCode === 0) break;
        if (Date.now() > deadline) {
            await proc.stop();
            throw new Error(`sshd on 127.0.0.1:${port} did not accept the test key within ${READY_TIMEOUT_MS} ms: ${probe.stderr.trim()}\n${proc.logTail(20)}`);
        }
        await sleep(100);
    }

    return {
        ...self,
        hostKey,
        dir,
        pid: proc.pid,
        log: () => proc.logTail(200),
        runStep,
        async stop() {
            await proc.stop();
            fs.rmSync(dir, { recursive: true, force: true });
        },
    };
}
