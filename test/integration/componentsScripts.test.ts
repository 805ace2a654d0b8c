/**
 * The composite node scripts of issue 6, run with bash in a sandbox root standing in for `/`:
 * - flagEditStep (write → wait → restore-on-failure) for KCM, against a simulated kubelet: it (re)starts the
 *   component from the manifest on disk (a fake /proc/<pid>/cmdline with the manifest's argv, and a real HTTPS
 *   /healthz server on loopback), the way kubelet restarts a static pod whose manifest changed;
 * - renewApiserverCert with REAL openssl on a real CA and certificate made here: the old pair is moved aside and
 *   kept, the new certificate must carry the new Service IP and every old SAN, the apiserver is restarted by moving
 *   its manifest out and back, and the simulated apiserver then serves the new certificate (checked over TLS by
 *   the script with `openssl s_client`). kubeadm is the test-bed version's real binary for the success path; failure paths use
 *   stand-ins that misbehave on purpose (issue a certificate without the new IP, or fail).
 * Each script is shellchecked, and a second run changes nothing (sandbox tree hash).
 */
import { strict as assert } from "assert";
import { spawn, spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as https from "https";
import * as path from "path";
import { parse, parseDocument } from "yaml";
import { readFlags } from "../../lib/controlPlane/manifestFlags";
import { withExistingClusterFlags } from "../../lib/controlPlane/etcdMemberReplace";
import { etcdCleanStart } from "../../lib/remote/scripts/etcdCleanStart";
import { flagEditStep } from "../../lib/remote/scripts/flagEditStep";
import { guardedManifestEdit, NOT_HEALTHY_RESTORED } from "../../lib/remote/scripts/guardedManifestEdit";
import { renewApiserverCert } from "../../lib/remote/scripts/renewApiserverCert";
import { freePort } from "../testbed/etcd";
import { kubeadmControlPlane } from "../testbed/kubeadmControlPlane";
import { requireKubeBinary } from "../testbed/kubeBinaries";
import { minorNumber, resolveTestBedVersion } from "../testbed/kubeVersion";
import { createPki } from "../testbed/pki";
import { tempDir } from "../support/tempDirs";

const FIXTURES = path.join(__dirname, "..", "fixtures");
const KCM_FIXTURE = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const APISERVER = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-apiserver.yaml"), "utf8");
const CLUSTER_CONFIGURATION: string = parse(fs.readFileSync(path.join(FIXTURES, "testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml"), "utf8")).data.ClusterConfiguration;
const CLUSTER_CONFIGURATION_V1BETA4 = fs.readFileSync(path.join(FIXTURES, "testbed", "kubeadm-clusterconfiguration-v1beta4-v1.37-extraargs.yaml"), "utf8");
const BACKUP_DIR = "/var/lib/cidr-migration/backup/2024-05-01";
const KCM_PATH = "/etc/kubernetes/manifests/kube-controller-manager.yaml";
const APISERVER_PATH = "/etc/kubernetes/manifests/kube-apiserver.yaml";

/** The real kubeadm of the test-bed version (test/testbed/install.sh builds it next to kube-apiserver), or CIDR_MIGRATION_KUBEADM. */
function realKubeadm(): string {
  return process.env.CIDR_MIGRATION_KUBEADM ?? requireKubeBinary("kubeadm");
}

/**
 * The fixture's kubeadm-config as the cluster of this version holds it: kubeadm 1.37 reads only v1beta4 (an
 * upgrade rewrites kubeadm-config), earlier ones still read the v1beta3 fixture.
 */
function fixtureClusterConfiguration(): string {
  // kubernetesVersion as on a cluster of this version: kubeadm refuses to act for one more than a minor behind
  const doc = parseDocument(minorNumber() >= 37 ? CLUSTER_CONFIGURATION_V1BETA4 : CLUSTER_CONFIGURATION);
  doc.set("kubernetesVersion", `v${resolveTestBedVersion().kube}`);
  return doc.toString();
}

/** Where a node's manifests, certificates and kubeadm-config come from: the real-world fixtures, or this version's kubeadm. */
type NodeSource = "fixtures" | "kubeadm";
const NODE_SOURCES: NodeSource[] = ["fixtures", "kubeadm"];

function generatedNode(root: string) {
  return kubeadmControlPlane(root, { nodeName: "cp-1", advertiseAddress: "192.168.1.105", serviceSubnet: "10.96.0.0/12", podSubnet: "10.244.0.0/16" });
}


function shellcheck(name: string, script: string): void {
  const result = spawnSync("shellcheck", ["-s", "bash", "-"], { input: script, encoding: "utf8" });
  if (result.error) throw new Error(`shellcheck is not available (${result.error.message}); install it (test/testbed/install.sh)`);
  assert.equal(result.status, 0, `${name} fails shellcheck:\n${result.stdout}`);
}

/** Runs a script with bash WITHOUT blocking the event loop (the simulated kubelet and servers live in this process). */
function run(script: string, env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", script], { env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

function treeHash(root: string): string {
  const hash = createHash("sha256");
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (full.startsWith(path.join(root, "proc"))) continue; // the simulated processes, not node state
      const stat = fs.lstatSync(full);
      hash.update(`${path.relative(root, full)}:${stat.mode}\n`);
      if (entry.isDirectory()) walk(full);
      else hash.update(fs.readFileSync(full));
    }
  };
  walk(root);
  return hash.digest("hex");
}

interface Running {
  pid: number;
  /** the certificate files it serves, and their content when it (re)loaded them */
  tls?: { certFile: string; keyFile: string; loaded: string };
  argv: string[];
  server?: https.Server;
}

/**
 * A kubelet for one static pod: every 50 ms it compares the manifest on disk with what runs. A changed manifest
 * restarts the "process" (new /proc entry with the manifest's argv, new HTTPS server with the certificate files
 * named by the manifest's --tls-cert-file/--tls-private-key-file, or `defaultTls`); a missing manifest stops it.
 * `healthy(argv)` decides what /healthz answers, so a test can make a component fail with certain flags.
 * `reloadsCertificates`: it serves changed certificate files without a restart, as kube-apiserver does.
 */
class SimulatedKubelet {
  private running?: Running;
  private timer?: NodeJS.Timeout;
  private nextPid = 4000;
  private busy = false;
  restarts = 0;

  constructor(
    private readonly root: string,
    private readonly manifestPath: string,
    private readonly port: number,
    private readonly healthy: (argv: string[]) => boolean,
    private readonly defaultTls: { cert: string; key: string },
    private readonly reloadsCertificates = false,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.sync(), 50);
  }

  /** Resolves once the component runs (the first sync happened). */
  async waitRunning(): Promise<void> {
    while (!this.running) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.kill();
  }

  private async kill(): Promise<void> {
    const current = this.running;
    this.running = undefined;
    if (!current) return;
    fs.rmSync(path.join(this.root, "proc", String(current.pid)), { recursive: true, force: true });
    await new Promise<void>((resolve) => (current.server ? current.server.close(() => resolve()) : resolve()));
  }

  private tlsContent(certFile: string, keyFile: string): string {
    try {
      return fs.readFileSync(certFile, "utf8") + fs.readFileSync(keyFile, "utf8");
    } catch {
      return ""; // between a file's removal and its new content
    }
  }

  private reloadCertificates(): void {
    const tls = this.running?.tls;
    if (!this.reloadsCertificates || !tls || !this.running?.server) return;
    const now = this.tlsContent(tls.certFile, tls.keyFile);
    if (now === "" || now === tls.loaded) return;
    try {
      this.running.server.setSecureContext({ cert: fs.readFileSync(tls.certFile), key: fs.readFileSync(tls.keyFile) });
      tls.loaded = now;
    } catch {
      // a pair half-written (the new certificate, the old key): the next sync loads it whole
    }
  }

  private argvOf(text: string): string[] {
    const container = (parse(text) as { spec: { containers: Array<{ command?: string[]; args?: string[] }> } }).spec.containers[0];
    return [...(container.command ?? []), ...(container.args ?? [])];
  }

  private async sync(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const file = path.join(this.root, this.manifestPath);
      const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
      const argv = text === undefined ? undefined : this.argvOf(text);
      if (JSON.stringify(argv) === JSON.stringify(this.running?.argv)) {
        this.reloadCertificates();
        return;
      }
      await this.kill();
      if (!argv) return;
      this.restarts++;
      const flags = readFlags(text!);
      const file2 = (flag: string, fallback: string) => {
        const value = flags.get(flag)?.at(-1);
        return value ? path.join(this.root, value) : fallback;
      };
      const certFile = file2("tls-cert-file", this.defaultTls.cert);
      const keyFile = file2("tls-private-key-file", this.defaultTls.key);
      const ok = this.healthy(argv);
      const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
        res.writeHead(ok && req.url === "/healthz" ? 200 : 500);
        res.end(ok ? "ok" : "[-]nodeipam failed: cidr out of range");
      });
      await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
      const pid = this.nextPid++;
      fs.mkdirSync(path.join(this.root, "proc", String(pid)), { recursive: true });
      fs.writeFileSync(path.join(this.root, "proc", String(pid), "cmdline"), argv.join("\0") + "\0");
      this.running = { pid, argv, server, tls: { certFile, keyFile, loaded: this.tlsContent(certFile, keyFile) } };
    } finally {
      this.busy = false;
    }
  }
}

async function controlPlaneRoot(): Promise<{ root: string; tls: { cert: string; key: string } }> {
  const root = tempDir("cp-root");
  fs.mkdirSync(path.join(root, "etc/kubernetes/manifests"), { recursive: true });
  fs.mkdirSync(path.join(root, "proc"), { recursive: true });
  const serving = await createPki(tempDir("serving-pki"));
  const cert = await serving.issue("serving", { commonName: "localhost", ipAddresses: ["127.0.0.1"], usage: "server" });
  return { root, tls: { cert: cert.certPath, key: cert.keyPath } };
}

for (const source of NODE_SOURCES) describe(`flagEditStep in a sandbox root with a simulated kubelet (manifest from ${source})`, function () {
  this.timeout(120_000);
  const kubelets: SimulatedKubelet[] = [];
  afterEach(async () => {
    for (const k of kubelets.splice(0)) await k.stop();
  });

  let KCM = KCM_FIXTURE;
  async function setup(healthy: (argv: string[]) => boolean) {
    const { root, tls } = await controlPlaneRoot();
    if (source === "kubeadm") KCM = generatedNode(root).controllerManagerManifest;
    fs.writeFileSync(path.join(root, KCM_PATH), KCM, { mode: 0o600 });
    const port = await freePort();
    const kubelet = new SimulatedKubelet(root, KCM_PATH, port, healthy, tls);
    kubelets.push(kubelet);
    kubelet.start();
    const step = flagEditStep({
      path: KCM_PATH,
      component: "kube-controller-manager",
      currentContent: KCM,
      flags: { "cluster-cidr": "10.48.0.0/16", "service-cluster-ip-range": "10.112.0.0/12", "node-cidr-mask-size": 24, "allocate-node-cidrs": false },
      healthUrl: `https://127.0.0.1:${port}/healthz`,
      timeoutSeconds: 20,
      backupDir: BACKUP_DIR,
      root,
    });
    shellcheck("kcm flag edit", step.script);
    return { root, kubelet, step };
  }

  it("writes the new flags, waits for KCM to run them healthy, keeps the original; a re-run changes nothing", async () => {
    const { root, kubelet, step } = await setup(() => true);
    const first = await run(step.script);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /kube-controller-manager is healthy and runs with --cluster-cidr=10\.48\.0\.0\/16/);
    assert.equal(fs.readFileSync(path.join(root, KCM_PATH), "utf8"), step.newContent);
    assert.equal(fs.readFileSync(path.join(root, BACKUP_DIR, KCM_PATH), "utf8"), KCM, "the pre-migration manifest is kept");
    assert.equal((fs.statSync(path.join(root, KCM_PATH)).mode & 0o777), 0o600, "the manifest keeps its mode");
    const restarts = kubelet.restarts;
    const before = treeHash(root);
    const second = await run(step.script);
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, /already has the new content; nothing to do/);
    assert.equal(treeHash(root), before, "the second run changed the node");
    assert.equal(kubelet.restarts, restarts, "the second run restarted KCM");
  });

  it("restores the previous manifest and exits with its own status when KCM does not come up healthy with the new flags", async () => {
    // Like the real KCM with Nodes outside its range: unhealthy as soon as it runs the new --cluster-cidr.
    const { root, step } = await setup((argv) => !argv.includes("--cluster-cidr=10.48.0.0/16"));
    const result = await run(step.script.replace("readonly TIMEOUT=20", "readonly TIMEOUT=3"));
    assert.equal(result.status, NOT_HEALTHY_RESTORED, "the exit a caller may answer with a fallback");
    assert.match(result.stderr, /kube-controller-manager did not become healthy with the new \/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml; the previous manifest is back in place/);
    assert.equal(fs.readFileSync(path.join(root, KCM_PATH), "utf8"), KCM, "the old manifest is back, byte for byte");
    assert.equal(fs.readFileSync(path.join(root, BACKUP_DIR, "failed", KCM_PATH), "utf8"), step.newContent, "the failed manifest is kept for the post-mortem");
    assert.match(result.stdout, /kube-controller-manager is healthy and runs with --cluster-cidr=10\.244\.0\.0\/16/, "the restore was checked against the old flags");
  });
});

describe("etcd's address edit, and its clean start after its member was replaced, in a sandbox root with a simulated kubelet (issue 16)", function () {
  this.timeout(120_000);
  const ETCD_PATH = "/etc/kubernetes/manifests/etcd.yaml";
  const HELD_DIR = "/etc/kubernetes/cidr-migration-held/2024-05-01";
  const ETCD = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-etcd.yaml"), "utf8");
  const MOVED = ETCD.replaceAll("192.37.70.3", "192.37.70.33");
  const CLEAN_START = withExistingClusterFlags(MOVED, "cp-1=https://192.37.70.1:2380,controlplane=https://192.37.70.33:2380");
  let kubelet: SimulatedKubelet | undefined;
  after(async () => kubelet?.stop());

  it("the edit fails on the member's data and puts the old manifest back (its own exit); the clean start sets the data aside, starts on the replacement's manifest, then only waits; the edit then counts it done", async () => {
    const { root, tls } = await controlPlaneRoot();
    fs.writeFileSync(path.join(root, ETCD_PATH), ETCD, { mode: 0o600 });
    // the member's data without its WAL: it runs at the old address, and cannot restart at the new one
    fs.mkdirSync(path.join(root, "var/lib/etcd/member/snap"), { recursive: true });
    fs.writeFileSync(path.join(root, "var/lib/etcd/member/snap/db"), "the removed member's data");
    const port = await freePort();
    const healthUrl = `https://127.0.0.1:${port}/healthz`;
    const atNewAddress = "--advertise-client-urls=https://192.37.70.33:2379";
    kubelet = new SimulatedKubelet(root, ETCD_PATH, port, (argv) => !argv.includes(atNewAddress) || !fs.existsSync(path.join(root, "var/lib/etcd/member")), tls);
    kubelet.start();
    await kubelet.waitRunning();
    const wait = { url: healthUrl, expectFlags: [atNewAddress], timeoutSeconds: 3 };
    const edit = guardedManifestEdit({ path: ETCD_PATH, currentContent: ETCD, newContent: MOVED, backupDir: BACKUP_DIR, doneContent: CLEAN_START, wait: { component: "etcd", ...wait }, root });
    const cleanStart = etcdCleanStart({ path: ETCD_PATH, heldDir: HELD_DIR, heldContents: [ETCD, MOVED], newContent: CLEAN_START, dataDir: "/var/lib/etcd", backupDir: BACKUP_DIR, wait, root });
    shellcheck("etcd edit", edit);
    shellcheck("etcd clean start", cleanStart);

    const failed = await run(edit);
    assert.equal(failed.status, NOT_HEALTHY_RESTORED, failed.stderr);
    assert.match(failed.stderr, /etcd did not become healthy with the new .*etcd\.yaml; the previous manifest is back in place/);
    assert.equal(fs.readFileSync(path.join(root, ETCD_PATH), "utf8"), ETCD, "the old manifest is back");

    const started = await run(cleanStart);
    assert.equal(started.status, 0, started.stderr);
    assert.equal(fs.readFileSync(path.join(root, ETCD_PATH), "utf8"), CLEAN_START);
    assert.equal(fs.existsSync(path.join(root, "var/lib/etcd/member")), false, "etcd starts from an empty data dir");
    assert.equal(fs.readFileSync(path.join(root, BACKUP_DIR, "etcd-data-of-the-replaced-member/snap/db"), "utf8"), "the removed member's data", "the old data is kept");
    assert.deepEqual(fs.readdirSync(path.join(root, HELD_DIR)), [], "nothing left held");
    assert.match(started.stdout, /moved the removed member's data .* aside/);

    const before = treeHash(root);
    const restarts = kubelet.restarts;
    const again = await run(cleanStart);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /is the replacement member's already/);
    const editAgain = await run(edit);
    assert.equal(editAgain.status, 0, editAgain.stderr);
    assert.match(editAgain.stdout, /is the manifest an earlier run started etcd from; waiting for it/);
    assert.equal(treeHash(root), before, "neither re-run changed the node");
    assert.equal(kubelet.restarts, restarts, "nor restarted etcd");
  });

  it("the clean start refuses a manifest this run neither read nor wrote, before it stops etcd or touches its data", async () => {
    const { root, tls } = await controlPlaneRoot();
    const foreign = ETCD.replace("--data-dir=/var/lib/etcd", "--data-dir=/var/lib/etcd-other");
    fs.writeFileSync(path.join(root, ETCD_PATH), foreign, { mode: 0o600 });
    fs.mkdirSync(path.join(root, "var/lib/etcd/member"), { recursive: true });
    const port = await freePort();
    const own = new SimulatedKubelet(root, ETCD_PATH, port, () => true, tls);
    own.start();
    await own.waitRunning();
    try {
      const result = await run(etcdCleanStart({ path: ETCD_PATH, heldDir: HELD_DIR, heldContents: [ETCD, MOVED], newContent: CLEAN_START, dataDir: "/var/lib/etcd", backupDir: BACKUP_DIR, wait: { url: `https://127.0.0.1:${port}/healthz`, expectFlags: ["--advertise-client-urls=https://192.37.70.33:2379"], timeoutSeconds: 3 }, root }));
      assert.equal(result.status, 1);
      assert.match(result.stderr, /is not a manifest this run wrote or read/);
      assert.ok(fs.existsSync(path.join(root, "var/lib/etcd/member")), "the data stays");
      assert.equal(fs.readFileSync(path.join(root, ETCD_PATH), "utf8"), foreign, "the manifest stays in place");
      assert.equal(fs.readdirSync(path.join(root, "proc")).length, 1, "etcd still runs: it was never stopped");
    } finally {
      await own.stop();
    }
  });
});

for (const source of NODE_SOURCES) describe(`renewApiserverCert in a sandbox root with real openssl (node from ${source})`, function () {
  this.timeout(180_000);
  const kubelets: SimulatedKubelet[] = [];
  afterEach(async () => {
    for (const k of kubelets.splice(0)) await k.stop();
  });

  /**
   * A control-plane node: CA + an apiserver cert for the OLD range (the SANs kubeadm gives it), the manifest and the
   * kubeadm-config text: made here after the fixtures, or all written by this version's kubeadm.
   */
  async function node(extraOldSans: string[] = [], reloadsCertificates = false) {
    const { root, tls } = await controlPlaneRoot();
    const pkiDir = path.join(root, "etc/kubernetes/pki");
    let apiserverManifest = APISERVER;
    let clusterConfiguration = fixtureClusterConfiguration();
    if (source === "kubeadm") {
      const files = generatedNode(root);
      apiserverManifest = files.apiserverManifest;
      clusterConfiguration = files.clusterConfiguration;
    }
    if (source === "fixtures" || extraOldSans.length > 0) {
      const pki = await createPki(pkiDir);
      await pki.issue("apiserver", {
        commonName: "kube-apiserver",
        dnsNames: ["cp-1", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"],
        ipAddresses: ["10.96.0.1", "192.168.1.105", ...extraOldSans],
        usage: "server",
      });
    }
    const oldCert = fs.readFileSync(path.join(pkiDir, "apiserver.crt"), "utf8");
    // The real manifest, pointed at loopback: --advertise-address stays what kubeadm wrote.
    const port = await freePort();
    const manifest = apiserverManifest.replace("--secure-port=6443", `--secure-port=${port}`).replace("--service-cluster-ip-range=10.96.0.0/12", "--service-cluster-ip-range=10.112.0.0/12");
    fs.writeFileSync(path.join(root, APISERVER_PATH), manifest, { mode: 0o600 });
    const kubelet = new SimulatedKubelet(root, APISERVER_PATH, port, () => true, tls, reloadsCertificates);
    kubelets.push(kubelet);
    kubelet.start();
    await kubelet.waitRunning();
    return { root, pkiDir, port, oldCert, kubelet, clusterConfiguration };
  }

  function script(root: string, port: number, kubeadm: string, clusterConfiguration: string): string {
    return renewApiserverCert({
      certConfig: { clusterConfiguration, serviceSubnet: "10.112.0.0/12", nodeName: "cp-1", advertiseAddress: "192.168.1.105", bindPort: port, extraSans: ["10.96.0.1"] },
      newServiceIp: "10.112.0.1",
      backupDir: BACKUP_DIR,
      servingAddress: `127.0.0.1:${port}`,
      health: { url: `https://127.0.0.1:${port}/healthz`, expectFlags: ["--service-cluster-ip-range=10.112.0.0/12"], timeoutSeconds: 30 },
      kubeadm,
      timeoutSeconds: 30,
      // the stand-in apiserver reloads nothing unless asked to: its restart follows soon
      reloadWaitSeconds: 3,
      root,
    });
  }

  function sans(certPem: string): string[] {
    const out = spawnSync("openssl", ["x509", "-noout", "-ext", "subjectAltName"], { input: certPem, encoding: "utf8" }).stdout;
    return out.split("\n").slice(1).join(",").split(",").map((s) => s.trim()).filter((s) => s !== "").sort();
  }

  it("re-issues with real kubeadm from the cluster's own config, keeps the old pair, restarts the apiserver, serves the new SAN; a re-run changes nothing", async () => {
    const kubeadm = realKubeadm();
    const { root, pkiDir, port, oldCert, kubelet, clusterConfiguration } = await node();
    const text = script(root, port, kubeadm, clusterConfiguration);
    shellcheck("renew apiserver cert", text);
    const restartsBefore = kubelet.restarts;
    const result = await run(text);
    assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
    const newCert = fs.readFileSync(path.join(pkiDir, "apiserver.crt"), "utf8");
    assert.notEqual(newCert, oldCert);
    const newSans = sans(newCert);
    assert.ok(newSans.includes("IP Address:10.112.0.1"), `new SANs: ${newSans.join(", ")}`);
    for (const san of sans(oldCert)) assert.ok(newSans.includes(san), `old SAN ${san} kept`);
    assert.equal(fs.readFileSync(path.join(root, BACKUP_DIR, "apiserver-cert/previous/apiserver.crt"), "utf8"), oldCert, "the old certificate is kept");
    assert.ok(fs.existsSync(path.join(root, BACKUP_DIR, "apiserver-cert/previous/apiserver.key")));
    assert.ok(!fs.existsSync(path.join(root, BACKUP_DIR, "apiserver-cert/staging")), "the staging directory, with its copy of the CA key, is gone");
    assert.ok(kubelet.restarts > restartsBefore, "the apiserver was restarted");
    assert.match(result.stdout, /kube-apiserver restarted and serves IP Address:10\.112\.0\.1/);
    const verify = spawnSync("openssl", ["verify", "-CAfile", path.join(pkiDir, "ca.crt"), path.join(pkiDir, "apiserver.crt")], { encoding: "utf8" });
    assert.equal(verify.status, 0, verify.stderr);

    const hash = treeHash(root);
    const restarts = kubelet.restarts;
    const again = await run(text);
    assert.equal(again.status, 0, again.stderr);
    assert.match(again.stdout, /already carries IP Address:10\.112\.0\.1; not re-issuing/);
    assert.match(again.stdout, /already serves the new certificate; no restart needed/);
    assert.equal(treeHash(root), hash, "the second run changed the node");
    assert.equal(kubelet.restarts, restarts);
  });

  it("does not restart an apiserver that reloads its new certificate itself, as kube-apiserver does", async () => {
    const { root, pkiDir, port, kubelet, clusterConfiguration } = await node([], true);
    const restarts = kubelet.restarts;
    const result = await run(script(root, port, realKubeadm(), clusterConfiguration));
    assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
    // served as soon as issued or a moment later, depending on when the stand-in noticed the files
    assert.match(result.stdout, /(already serves|reloaded) the new certificate( itself)?; no restart needed/);
    assert.equal(kubelet.restarts, restarts, "the apiserver was not restarted");
    assert.ok(fs.existsSync(path.join(root, APISERVER_PATH)), "its manifest never left");
    assert.ok(sans(fs.readFileSync(path.join(pkiDir, "apiserver.crt"), "utf8")).includes("IP Address:10.112.0.1"));
  });

  it("refuses, with real kubeadm, a new certificate that would lose a SAN the old one had (added by hand, not in kubeadm-config)", async () => {
    const { root, pkiDir, port, oldCert, kubelet, clusterConfiguration } = await node(["10.0.0.250"]);
    const restarts = kubelet.restarts;
    const result = await run(script(root, port, realKubeadm(), clusterConfiguration));
    assert.equal(result.status, 1);
    assert.match(result.stderr, /the new certificate lost SANs the old one had: IP Address:10\.0\.0\.250; the previous certificate stays in place/);
    assert.equal(fs.readFileSync(path.join(pkiDir, "apiserver.crt"), "utf8"), oldCert);
    assert.ok(sans(fs.readFileSync(path.join(root, BACKUP_DIR, "apiserver-cert/rejected-apiserver.crt"), "utf8")).includes("IP Address:10.112.0.1"), "kubeadm did issue a new-range cert; it was rejected for the lost SAN");
    assert.equal(kubelet.restarts, restarts);
  });

  /** A kubeadm that misbehaves: MODE=stale issues a cert without the new IP (as if it ignored the config), MODE=fail exits 1. */
  function misbehavingKubeadm(mode: "stale" | "fail"): string {
    const bin = path.join(tempDir("kubeadm-standin"), "kubeadm");
    fs.writeFileSync(bin, `#!/usr/bin/env bash
set -euo pipefail
[ "${mode}" = fail ] && { echo "error execution phase certs/apiserver: simulated failure" >&2; exit 1; }
# where kubeadm writes: the config's certificatesDir (init phase certs apiserver --config FILE)
cd "$(sed -n 's/^certificatesDir: *//p' "$6")"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out apiserver.key 2>/dev/null
openssl req -new -key apiserver.key -subj /CN=kube-apiserver -out /tmp/$$.csr
printf 'subjectAltName = DNS:kubernetes,IP:10.96.0.1\\n' > /tmp/$$.ext
openssl x509 -req -in /tmp/$$.csr -CA ca.crt -CAkey ca.key -set_serial 7 -days 1 -extfile /tmp/$$.ext -out apiserver.crt 2>/dev/null
rm -f /tmp/$$.csr /tmp/$$.ext
`, { mode: 0o755 });
    return bin;
  }

  for (const mode of ["stale", "fail"] as const) {
    it(`puts the old pair back and exits 1 when kubeadm ${mode === "stale" ? "issues a certificate without the new IP" : "fails"}, without restarting the apiserver`, async () => {
      const { root, pkiDir, port, oldCert, kubelet, clusterConfiguration } = await node();
      const oldKey = fs.readFileSync(path.join(pkiDir, "apiserver.key"), "utf8");
      const restarts = kubelet.restarts;
      const result = await run(script(root, port, misbehavingKubeadm(mode), clusterConfiguration));
      assert.equal(result.status, 1);
      assert.match(result.stderr, mode === "stale"
        ? /the new certificate lacks IP Address:10\.112\.0\.1 .*; the previous certificate stays in place/
        : /kubeadm init phase certs apiserver failed; the previous certificate stays in place/);
      assert.equal(fs.readFileSync(path.join(pkiDir, "apiserver.crt"), "utf8"), oldCert);
      assert.equal(fs.readFileSync(path.join(pkiDir, "apiserver.key"), "utf8"), oldKey);
      assert.equal(kubelet.restarts, restarts, "a rejected certificate never restarts the apiserver");
      assert.ok(!fs.existsSync(path.join(root, BACKUP_DIR, "apiserver-cert/staging/ca.key")), "no copy of the CA key is left behind");
      assert.ok(fs.existsSync(path.join(root, APISERVER_PATH)), "the manifest stays in place");
    });
  }

  // the script's control flow, not the node's files: once is enough
  if (source === "fixtures") it("never leaves the manifest out: when the old apiserver does not stop, it is moved back and the step fails", async () => {
    const { root, pkiDir, port, clusterConfiguration } = await node();
    const pki = await createPki(pkiDir);
    // The certificate on disk already has the new IP but the running apiserver still serves the old one, so the
    // script goes straight to the restart; a kube-apiserver the kubelet does not manage keeps running.
    await pki.issue("apiserver", { commonName: "kube-apiserver", dnsNames: ["cp-1", "kubernetes"], ipAddresses: ["10.112.0.1", "10.96.0.1", "127.0.0.1", "192.168.1.105"], usage: "server" });
    fs.mkdirSync(path.join(root, "proc", "99"), { recursive: true });
    fs.writeFileSync(path.join(root, "proc", "99", "cmdline"), "/usr/local/bin/kube-apiserver\0--secure-port=1\0");
    const text = script(root, port, misbehavingKubeadm("fail"), clusterConfiguration).replace("readonly TIMEOUT=30", "readonly TIMEOUT=2");
    const result = await run(text);
    assert.equal(result.status, 1);
    assert.match(result.stdout, /already carries IP Address:10\.112\.0\.1; not re-issuing/);
    assert.match(result.stderr, /kube-apiserver still runs 2s after its manifest was moved out; the manifest is moved back/);
    assert.ok(fs.existsSync(path.join(root, APISERVER_PATH)), "the manifest is back");
    assert.ok(!fs.existsSync(path.join(root, BACKUP_DIR, "apiserver-cert/kube-apiserver.yaml.parked")));
  });
});
