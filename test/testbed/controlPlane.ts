// A real Kubernetes control plane on loopback: etcd + kube-apiserver +
// kube-controller-manager (the version CIDR_MIGRATION_KUBE_VERSION picks) with TLS from a throwaway CA, on free ports,
// in a temp dir. Components can be restarted with other CIDR flags, which is
// exactly what a CIDR migration does to a kubeadm cluster.
import { KubeConfig } from "@kubernetes/client-node";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { EtcdProcess, freePort, httpGet, startEtcd } from "./etcd";
import { KubeBinaries, resolveKubeBinaries } from "./kubeBinaries";
import { minorNumber } from "./kubeVersion";
import { writeKubeconfig } from "./kubeconfig";
import { createPki, generateKey, IssuedCert, Pki, writePublicKey } from "./pki";
import { ManagedProcess, startProcess, waitUntil } from "./processes";

export interface TestClusterOptions {
    serviceCidr: string;
    podCidr: string;
    nodeMaskSize?: number;
    /** the second family's node mask when podCidr is a dual-stack pair "v4,v6" (default 64) */
    secondNodeMaskSize?: number;
    dir?: string;
    /** default true */
    controllerManager?: boolean;
    /** serve /debug/pprof on the apiserver and KCM (default false), for bench:services' BENCH_PPROF */
    profiling?: boolean;
    /** etcd's client port (default: a free one) */
    etcdClientPort?: number;
    /** run etcd with TLS and client-cert auth, as kubeadm does (default false) */
    etcdTls?: boolean;
    /** processes outlive this Node process (the sandbox); the caller records their pids */
    detached?: boolean;
    /** the apiserver's --storage-media-type (default: its own, protobuf) */
    storageMediaType?: "application/json" | "application/vnd.kubernetes.protobuf";
}

export interface ControllerManagerFlags {
    clusterCidr?: string;
    serviceClusterIpRange?: string;
    allocateNodeCidrs?: boolean;
    /** the first family's node mask */
    nodeCidrMaskSize?: number;
    /** the second family's, when clusterCidr is a dual-stack pair (default 64) */
    secondNodeCidrMaskSize?: number;
}

/** The flags a running KCM has: every single-stack one set; the second family's mask only on a dual-stack cluster. */
export type KcmFlags = Required<Omit<ControllerManagerFlags, "secondNodeCidrMaskSize">> & Pick<ControllerManagerFlags, "secondNodeCidrMaskSize">;

export interface TestCluster {
    dir: string;
    /** The apiserver's audit log (JSON lines): every write request, with user, verb and object. */
    auditLogPath: string;
    kubeconfigPath: string;
    server: string;
    etcd: EtcdProcess;
    pki: Pki;
    serviceCidr: string;
    podCidr: string;
    /** @kubernetes/client-node KubeConfig loaded from kubeconfigPath */
    kubeConfig(): KubeConfig;
    /** also restarts a running KCM with its current flags (see the implementation for why) */
    /** admissionPlugins: --enable-admission-plugins beside the defaults ("" for none) */
    restartApiserver(opts: { serviceClusterIpRange?: string; featureGates?: string; admissionPlugins?: string }): Promise<void>;
    restartControllerManager(opts: ControllerManagerFlags): Promise<void>;
    /** KCM, then the apiserver, stopped (as when their static-pod manifests are moved aside); etcd keeps running. */
    stopControlPlane(): Promise<void>;
    /** The apiserver, then KCM (when it ran before), started again with these flags; resolves once both are healthy. */
    startControlPlane(flags: { serviceClusterIpRange?: string; featureGates?: string; controllerManager?: ControllerManagerFlags }): Promise<void>;
    /**
     * Resolves when KCM answers /healthz and has got past starting its node IPAM
     * controller (the step that fails on foreign podCIDRs); rejects with its last
     * log lines when the process exits.
     */
    waitControllerManagerHealthy(): Promise<void>;
    /** resolves with KCM's exit code once it has exited; rejects after timeoutMs if it is still running */
    waitControllerManagerExit(timeoutMs?: number): Promise<number | null>;
    controllerManagerExited(): boolean;
    controllerManagerLog(): string;
    apiserverLog(): string;
    /** the flags the components currently run with */
    currentFlags(): { serviceClusterIpRange: string; controllerManager?: KcmFlags };
    pids(): { etcd: number; apiserver: number; controllerManager?: number };
    ports(): { etcd: number; apiserver: number; controllerManager?: number };
    stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 90_000;
export const ADVERTISE_ADDRESS = "192.0.2.10";
/**
 * KCM prints one of these once its node IPAM controller was set up (or deliberately skipped): the 1.20 wording,
 * then the structured one of current releases (which logs nothing when allocation is off).
 */
const NODE_IPAM_SETTLED = /Started "nodeipam"|Skipping "nodeipam"|"nodeipam" is disabled|"Starting ipam controller"/;

interface ClusterPki {
    pki: Pki;
    apiserverServing: IssuedCert;
    admin: IssuedCert;
    controllerManagerClient: IssuedCert;
    controllerManagerServing: IssuedCert;
    serviceAccountKeyPath: string;
    serviceAccountPublicKeyPath: string;
    frontProxyCaCertPath: string;
}

async function createClusterPki(dir: string): Promise<ClusterPki> {
    const pki = await createPki(path.join(dir, "pki"));
    const serviceAccountKeyPath = path.join(pki.dir, "sa.key");
    const serviceAccountPublicKeyPath = path.join(pki.dir, "sa.pub");
    const [apiserverServing, admin, controllerManagerClient, controllerManagerServing, frontProxy] = await Promise.all([
        pki.issue("apiserver", {
            commonName: "kube-apiserver",
            dnsNames: ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"],
            ipAddresses: ["127.0.0.1"],
            usage: "server",
        }),
        pki.issue("admin", { commonName: "kubernetes-admin", organization: "system:masters", usage: "client" }),
        // system:masters because KCM runs without per-controller service-account credentials here
        pki.issue("controller-manager", { commonName: "system:kube-controller-manager", organization: "system:masters", usage: "client" }),
        pki.issue("controller-manager-serving", { commonName: "kube-controller-manager", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"], usage: "server" }),
        // kubeadm's own front-proxy CA: with the cluster CA in its place the apiserver verified every client
        // certificate twice, once as a possible front proxy (an eighth of its CPU under bench:services)
        createPki(path.join(dir, "front-proxy-pki"), "front-proxy-ca"),
        generateKey(serviceAccountKeyPath).then(() => writePublicKey(serviceAccountKeyPath, serviceAccountPublicKeyPath)),
    ]);
    return { pki, frontProxyCaCertPath: frontProxy.caCertPath, apiserverServing, admin, controllerManagerClient, controllerManagerServing, serviceAccountKeyPath, serviceAccountPublicKeyPath };
}

function isPortRace(err: unknown): boolean {
    return /address already in use/.test(String(err));
}

export async function startTestCluster(opts: TestClusterOptions): Promise<TestCluster> {
    const binaries: KubeBinaries = resolveKubeBinaries();
    const legacyInsecurePorts = minorNumber() < 24;
    const ownsDir = opts.dir === undefined;
    const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "cidr-testbed-"));
    fs.mkdirSync(dir, { recursive: true });
    const detached = opts.detached === true;

    const certs = await createClusterPki(dir);
    const etcd = await startEtcd({ dir: path.join(dir, "etcd"), tls: opts.etcdTls === true, detached, clientPort: opts.etcdClientPort });
    const clientCert = { ca: certs.pki.caCertPath, cert: certs.admin.certPath, key: certs.admin.keyPath };
    const clientTls = { caCertPath: clientCert.ca, certPath: clientCert.cert, keyPath: clientCert.key };

    let serviceClusterIpRange = opts.serviceCidr;
    let apiserverFeatureGates: string | undefined;
    let admissionPlugins: string | undefined;
    let apiserverPort = 0;
    let apiserver: ManagedProcess | undefined;
    const apiserverLogPath = path.join(dir, "kube-apiserver.log");
    // Every write, by anyone, at metadata level: what the e2e suite reads to prove a preview wrote nothing.
    const auditLogPath = path.join(dir, "audit.log");
    const auditPolicyPath = path.join(dir, "audit-policy.yaml");
    fs.writeFileSync(auditPolicyPath, [
        "apiVersion: audit.k8s.io/v1",
        "kind: Policy",
        "omitStages: [RequestReceived]",
        "rules:",
        "- level: Metadata",
        "  verbs: [create, update, patch, delete, deletecollection]",
        "- level: None",
        "",
    ].join("\n"));
    const kubeconfigPath = path.join(dir, "admin.kubeconfig");
    const controllerManagerKubeconfigPath = path.join(dir, "controller-manager.kubeconfig");

    function apiserverArgs(port: number): string[] {
        const args = [
            `--etcd-servers=${etcd.endpoint}`,
            `--service-cluster-ip-range=${serviceClusterIpRange}`,
            `--secure-port=${port}`,
            "--bind-address=127.0.0.1",
            // current releases refuse a loopback address for the kubernetes Service's endpoints; nothing here
            // dials that address (the apiserver binds to 127.0.0.1), so a documentation address (RFC 5737) stands in
            `--advertise-address=${legacyInsecurePorts ? "127.0.0.1" : ADVERTISE_ADDRESS}`,
            // removed in 1.24; before that it defaulted to an open HTTP port
            ...(legacyInsecurePorts ? ["--insecure-port=0"] : []),
            `--cert-dir=${path.join(dir, "apiserver-certs")}`,
            `--tls-cert-file=${certs.apiserverServing.certPath}`,
            `--tls-private-key-file=${certs.apiserverServing.keyPath}`,
            `--client-ca-file=${certs.pki.caCertPath}`,
            `--service-account-key-file=${certs.serviceAccountPublicKeyPath}`,
            `--service-account-signing-key-file=${certs.serviceAccountKeyPath}`,
            "--service-account-issuer=https://kubernetes.default.svc",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            // as kubeadm does; also keeps KCM from retrying a missing request-header CA bundle
            `--requestheader-client-ca-file=${certs.frontProxyCaCertPath}`,
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            `--profiling=${opts.profiling === true}`,
            `--audit-policy-file=${auditPolicyPath}`,
            `--audit-log-path=${auditLogPath}`,
            "--audit-log-format=json",
            ...(apiserverFeatureGates ? [`--feature-gates=${apiserverFeatureGates}`] : []),
            ...(admissionPlugins ? [`--enable-admission-plugins=${admissionPlugins}`] : []),
            ...(opts.storageMediaType ? [`--storage-media-type=${opts.storageMediaType}`] : []),
        ];
        if (etcd.tls) {
            args.push(`--etcd-cafile=${etcd.tls.caCertPath}`, `--etcd-certfile=${etcd.tls.certPath}`, `--etcd-keyfile=${etcd.tls.keyPath}`);
        }
        return args;
    }

    async function launchApiserver(): Promise<void> {
        for (let attempt = 1; ; attempt++) {
            // keep the port across restarts, so kubeconfigs stay valid; pick a new one only on a bind race
            const port = apiserverPort !== 0 && attempt === 1 ? apiserverPort : await freePort();
            const proc = startProcess(binaries.apiserver, apiserverArgs(port), apiserverLogPath, { detached });
            try {
                await waitUntil(async () => {
                    const { status, body } = await httpGet(`https://127.0.0.1:${port}/readyz`, clientTls);
                    return status === 200 && body.trim() === "ok";
                }, {
                    timeoutMs: READY_TIMEOUT_MS,
                    what: `kube-apiserver on 127.0.0.1:${port}`,
                    failed: () => (proc.exited() ? `exited with code ${proc.exitCode()}:\n${proc.logTail(20)}` : undefined),
                });
            } catch (err) {
                await proc.stop(1000);
                if (attempt < 3 && isPortRace(err)) continue;
                throw err;
            }
            apiserver = proc;
            apiserverPort = port;
            return;
        }
    }

    await launchApiserver().catch(async (err) => { await etcd.stop(); throw err; });
    const server = `https://127.0.0.1:${apiserverPort}`;
    writeKubeconfig(kubeconfigPath, { server, caCertPath: certs.pki.caCertPath, client: certs.admin, user: "kubernetes-admin" });
    writeKubeconfig(controllerManagerKubeconfigPath, {
        server, caCertPath: certs.pki.caCertPath, client: certs.controllerManagerClient, user: "system:kube-controller-manager",
    });

    let controllerManager: ManagedProcess | undefined;
    let controllerManagerPort = 0;
    let controllerManagerFlags: KcmFlags | undefined;
    const controllerManagerLogPath = path.join(dir, "kube-controller-manager.log");
    let controllerManagerLogOffset = 0;

    function controllerManagerArgs(port: number, flags: KcmFlags): string[] {
        return [
            `--kubeconfig=${controllerManagerKubeconfigPath}`,
            `--authentication-kubeconfig=${controllerManagerKubeconfigPath}`,
            `--authorization-kubeconfig=${controllerManagerKubeconfigPath}`,
            `--allocate-node-cidrs=${flags.allocateNodeCidrs}`,
            `--cluster-cidr=${flags.clusterCidr}`,
            `--service-cluster-ip-range=${flags.serviceClusterIpRange}`,
            // a dual-stack --cluster-cidr takes a mask per family: KCM refuses --node-cidr-mask-size with two ranges
            ...(flags.clusterCidr.includes(",")
                ? [`--node-cidr-mask-size-${familyFlag(flags.clusterCidr, 0)}=${flags.nodeCidrMaskSize}`, `--node-cidr-mask-size-${familyFlag(flags.clusterCidr, 1)}=${flags.secondNodeCidrMaskSize ?? 64}`]
                : [`--node-cidr-mask-size=${flags.nodeCidrMaskSize}`]),
            // no token controller: it would need the SA private key, and nothing here runs pods
            "--controllers=*,-serviceaccount-token",
            // no kubelet heartbeats here: a year of grace keeps the node lifecycle controller from
            // tainting every node unreachable mid-test, while it still lifts the not-ready taint
            // from nodes that report Ready, as in a live cluster
            "--node-monitor-grace-period=8760h",
            "--node-startup-grace-period=8760h",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            `--secure-port=${port}`,
            ...(legacyInsecurePorts ? ["--port=0"] : []),
            `--tls-cert-file=${certs.controllerManagerServing.certPath}`,
            `--tls-private-key-file=${certs.controllerManagerServing.keyPath}`,
            `--root-ca-file=${certs.pki.caCertPath}`,
            `--cert-dir=${path.join(dir, "controller-manager-certs")}`,
            `--profiling=${opts.profiling === true}`,
        ];
    }

    async function launchControllerManager(flags: KcmFlags): Promise<void> {
        controllerManagerPort = await freePort();
        controllerManagerLogOffset = fs.existsSync(controllerManagerLogPath) ? fs.statSync(controllerManagerLogPath).size : 0;
        controllerManagerFlags = flags;
        controllerManager = startProcess(binaries.controllerManager, controllerManagerArgs(controllerManagerPort, flags), controllerManagerLogPath, { detached });
    }

    /** The log of the current KCM run only (the file keeps earlier runs). */
    function controllerManagerLog(): string {
        try {
            const buffer = fs.readFileSync(controllerManagerLogPath);
            return buffer.subarray(controllerManagerLogOffset).toString("utf8");
        } catch {
            return "";
        }
    }

    function lastLines(text: string, count: number): string {
        return text.trim().split("\n").slice(-count).join("\n");
    }

    async function waitControllerManagerHealthy(): Promise<void> {
        const proc = controllerManager;
        if (!proc) throw new Error("kube-controller-manager is not running in this test cluster");
        const port = controllerManagerPort;
        await waitUntil(async () => {
            const allocationOff = !legacyInsecurePorts && controllerManagerFlags?.allocateNodeCidrs === false;
            if (!allocationOff && !NODE_IPAM_SETTLED.test(controllerManagerLog())) return false;
            const { status, body } = await httpGet(`https://127.0.0.1:${port}/healthz`, clientTls);
            return status === 200 && body.trim() === "ok";
        }, {
            timeoutMs: READY_TIMEOUT_MS,
            what: `kube-controller-manager on 127.0.0.1:${port}`,
            failed: () => (proc.exited() ? `exited with code ${proc.exitCode()}:\n${lastLines(controllerManagerLog(), 15)}` : undefined),
        });
    }

    async function waitControllerManagerExit(timeoutMs = READY_TIMEOUT_MS): Promise<number | null> {
        const proc = controllerManager;
        if (!proc) throw new Error("kube-controller-manager was never started in this test cluster");
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`kube-controller-manager still running after ${timeoutMs} ms:\n${lastLines(controllerManagerLog(), 10)}`)), timeoutMs);
        });
        try {
            await Promise.race([proc.waitExit(), timeout]);
        } finally {
            clearTimeout(timer);
        }
        return proc.exitCode();
    }

    const initialControllerManagerFlags: KcmFlags = {
        clusterCidr: opts.podCidr,
        serviceClusterIpRange: opts.serviceCidr,
        allocateNodeCidrs: true,
        nodeCidrMaskSize: opts.nodeMaskSize ?? 24,
        ...(opts.podCidr.includes(",") ? { secondNodeCidrMaskSize: opts.secondNodeMaskSize ?? 64 } : {}),
    };

    let stopped = false;
    async function stop(): Promise<void> {
        if (stopped) return;
        stopped = true;
        await controllerManager?.stop();
        await apiserver?.stop();
        await etcd.stop();
        if (ownsDir && process.env.CIDR_MIGRATION_KEEP_TESTBED !== "1") {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    }

    if (opts.controllerManager !== false) {
        try {
            await launchControllerManager(initialControllerManagerFlags);
            await waitControllerManagerHealthy();
        } catch (err) {
            await stop();
            throw err;
        }
    }

    return {
        dir,
        kubeconfigPath,
        auditLogPath,
        server,
        etcd,
        pki: certs.pki,
        serviceCidr: opts.serviceCidr,
        podCidr: opts.podCidr,
        kubeConfig() {
            const kc = new KubeConfig();
            kc.loadFromFile(kubeconfigPath);
            return kc;
        },
        async restartApiserver(flags) {
            // client-go informers back off up to ~30 s (with jitter) after losing the apiserver, so a
            // KCM left running would react to new objects late and at random; a KCM restarted with the
            // same flags lists afresh, which keeps tests deterministic
            const restartKcm = controllerManager !== undefined && !controllerManager.exited();
            if (restartKcm) await controllerManager!.stop();
            await apiserver?.stop();
            serviceClusterIpRange = flags.serviceClusterIpRange ?? serviceClusterIpRange;
            apiserverFeatureGates = flags.featureGates ?? apiserverFeatureGates;
            admissionPlugins = flags.admissionPlugins ?? admissionPlugins;
            await launchApiserver();
            if (restartKcm) {
                await launchControllerManager(controllerManagerFlags ?? initialControllerManagerFlags);
                await waitControllerManagerHealthy();
            }
        },
        async stopControlPlane() {
            await controllerManager?.stop();
            await apiserver?.stop();
        },
        async startControlPlane(flags) {
            serviceClusterIpRange = flags.serviceClusterIpRange ?? serviceClusterIpRange;
            apiserverFeatureGates = flags.featureGates ?? apiserverFeatureGates;
            await launchApiserver();
            if (controllerManager === undefined) return;
            const previous = controllerManagerFlags ?? initialControllerManagerFlags;
            await launchControllerManager({ ...previous, ...flags.controllerManager });
            await waitControllerManagerHealthy();
        },
        async restartControllerManager(flags) {
            await controllerManager?.stop();
            const previous = controllerManagerFlags ?? initialControllerManagerFlags;
            const secondMask = flags.secondNodeCidrMaskSize ?? previous.secondNodeCidrMaskSize;
            await launchControllerManager({
                clusterCidr: flags.clusterCidr ?? previous.clusterCidr,
                serviceClusterIpRange: flags.serviceClusterIpRange ?? previous.serviceClusterIpRange,
                allocateNodeCidrs: flags.allocateNodeCidrs ?? previous.allocateNodeCidrs,
                nodeCidrMaskSize: flags.nodeCidrMaskSize ?? previous.nodeCidrMaskSize,
                ...(secondMask !== undefined ? { secondNodeCidrMaskSize: secondMask } : {}),
            });
        },
        waitControllerManagerHealthy,
        waitControllerManagerExit,
        controllerManagerExited: () => controllerManager?.exited() ?? true,
        controllerManagerLog,
        apiserverLog: () => fs.existsSync(apiserverLogPath) ? fs.readFileSync(apiserverLogPath, "utf8") : "",
        currentFlags: () => ({ serviceClusterIpRange, controllerManager: controllerManagerFlags }),
        pids: () => ({ etcd: etcd.pid, apiserver: apiserver?.pid ?? 0, controllerManager: controllerManager?.pid }),
        ports: () => ({
            etcd: Number(new URL(etcd.endpoint).port),
            apiserver: apiserverPort,
            controllerManager: controllerManager ? controllerManagerPort : undefined,
        }),
        stop,
    };
}

/** "ipv4" or "ipv6": the family of the n-th range of a comma-separated --cluster-cidr. */
function familyFlag(clusterCidr: string, n: number): string {
    return clusterCidr.split(",")[n].includes(":") ? "ipv6" : "ipv4";
}
