// A real etcd (the one paired with the test-bed Kubernetes version, see kubeVersion.ts) on free loopback ports.
// Never the default 2379: Debian's package may have started a system etcd there.
import * as fs from "fs";
import * as https from "https";
import * as http from "http";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { etcdBinary } from "./kubeBinaries";
import { createPki } from "./pki";
import { ManagedProcess, startProcess, waitUntil } from "./processes";

export const ETCD_BINARY = etcdBinary("etcd");

export interface EtcdTls { caCertPath: string; certPath: string; keyPath: string; }

export interface EtcdProcess {
    /** http(s)://127.0.0.1:PORT */
    endpoint: string;
    dataDir: string;
    pid: number;
    /** client material when started with tls */
    tls?: EtcdTls;
    stop(): Promise<void>;
}

export interface StartEtcdOptions {
    dir?: string; tls?: boolean; dataDir?: string; extraArgs?: string[];
    /** a fixed client port (the sandbox's, which its stack file names); default a free one */
    clientPort?: number;
    /** outlive this Node process (the sandbox); then not killed by the exit hook */
    detached?: boolean;
}

/** Whether `port` on 127.0.0.1 can be bound now. */
function portFree(port: number): Promise<boolean> {
    return new Promise((resolve) => {
        const server = net.createServer();
        server.once("error", () => resolve(false));
        server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
}

/** A port the kernel just handed out on 127.0.0.1 (free at the time of asking). */
export function freePort(): Promise<number> {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => {
            const address = server.address() as net.AddressInfo;
            server.close(() => resolve(address.port));
        });
    });
}

/** GET a URL on loopback, optionally with TLS client material; resolves status and body. */
export function httpGet(url: string, tls?: EtcdTls): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
        const options: https.RequestOptions = tls
            ? { ca: fs.readFileSync(tls.caCertPath), cert: fs.readFileSync(tls.certPath), key: fs.readFileSync(tls.keyPath) }
            : {};
        options.timeout = 3000;
        const request = (url.startsWith("https:") ? https : http).get(url, options, (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk) => { body += chunk; });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        request.on("timeout", () => request.destroy(new Error(`timeout on ${url}`)));
        request.on("error", reject);
    });
}

async function etcdHealthy(endpoint: string, tls?: EtcdTls): Promise<boolean> {
    const { status, body } = await httpGet(`${endpoint}/health`, tls);
    return status === 200 && /"health"\s*:\s*"true"/.test(body);
}

async function startOnce(dir: string, dataDir: string, opts: StartEtcdOptions, tls?: EtcdTls & { serverCertPath: string; serverKeyPath: string }): Promise<{ proc: ManagedProcess; endpoint: string }> {
    const clientPort = opts.clientPort ?? await freePort();
    const peerPort = await freePort();
    const scheme = tls ? "https" : "http";
    const endpoint = `${scheme}://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const args = [
        "--name", "default",
        "--data-dir", dataDir,
        "--listen-client-urls", endpoint,
        "--advertise-client-urls", endpoint,
        "--listen-peer-urls", peerUrl,
        "--initial-advertise-peer-urls", peerUrl,
        "--initial-cluster", `default=${peerUrl}`,
    ];
    if (tls) {
        args.push("--cert-file", tls.serverCertPath, "--key-file", tls.serverKeyPath,
            "--trusted-ca-file", tls.caCertPath, "--client-cert-auth");
    }
    args.push(...(opts.extraArgs ?? []));
    const proc = startProcess(ETCD_BINARY, args, path.join(dir, "etcd.log"), { detached: opts.detached === true });
    await waitUntil(() => etcdHealthy(endpoint, tls), {
        timeoutMs: 30_000,
        what: `etcd on ${endpoint}`,
        failed: () => (proc.exited() ? `exited with code ${proc.exitCode()}:\n${proc.logTail(15)}` : undefined),
    }).catch(async (err) => {
        await proc.stop(1000);
        throw err;
    });
    return { proc, endpoint };
}

export async function startEtcd(opts: StartEtcdOptions = {}): Promise<EtcdProcess> {
    if (!fs.existsSync(ETCD_BINARY)) {
        throw new Error(`etcd binary ${ETCD_BINARY} is missing: run test/testbed/install.sh (as root; it builds the etcd paired with CIDR_MIGRATION_KUBE_VERSION)`);
    }
    const ownsDir = opts.dir === undefined;
    const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "cidr-etcd-"));
    fs.mkdirSync(dir, { recursive: true });
    const dataDir = opts.dataDir ?? path.join(dir, "etcd-data");
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });

    let tls: (EtcdTls & { serverCertPath: string; serverKeyPath: string }) | undefined;
    if (opts.tls) {
        const pki = await createPki(path.join(dir, "etcd-pki"));
        const server = await pki.issue("etcd-server", {
            commonName: "etcd", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], usage: "both",
        });
        const client = await pki.issue("etcd-client", { commonName: "etcd-client", usage: "client" });
        tls = {
            caCertPath: pki.caCertPath, certPath: client.certPath, keyPath: client.keyPath,
            serverCertPath: server.certPath, serverKeyPath: server.keyPath,
        };
    }

    // A fixed port must be free: etcd would exit, and the health check below would find whatever answers there.
    if (opts.clientPort !== undefined && !(await portFree(opts.clientPort))) {
        throw new Error(`etcd: port ${opts.clientPort} on 127.0.0.1 is in use; stop what listens there (ss -ltnp 'sport = :${opts.clientPort}'), e.g. a sandbox: cidr-migration sandbox down`);
    }
    // A port can be taken between freePort() and etcd's bind: retry on that race only.
    let started: { proc: ManagedProcess; endpoint: string } | undefined;
    for (let attempt = 1; ; attempt++) {
        try {
            started = await startOnce(dir, dataDir, opts, tls);
            break;
        } catch (err) {
            if (attempt >= 3 || opts.clientPort !== undefined || !/address already in use/.test(String(err))) throw err;
        }
    }
    const { proc, endpoint } = started;
    return {
        endpoint,
        dataDir,
        pid: proc.pid,
        tls: tls ? { caCertPath: tls.caCertPath, certPath: tls.certPath, keyPath: tls.keyPath } : undefined,
        async stop() {
            await proc.stop();
            // a temp dir we made is ours to remove; a caller's dir (and a caller's dataDir inside it) stays
            if (ownsDir && opts.dataDir === undefined && process.env.CIDR_MIGRATION_KEEP_TESTBED !== "1") {
                fs.rmSync(dir, { recursive: true, force: true });
            }
        },
    };
}
