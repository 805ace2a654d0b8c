// The node lab behind `cidr-migration sandbox up|down|status --nodes`: a real 3-node kubeadm cluster (cluster.sh)
// and a Pulumi stack of this project for it, `nodes`, ready for `cidr-migration pulumi preview --stack nodes`.
// The stack's state and its passphrase stay in the lab's directory; its secrets (the etcd client certificate, the
// SSH key) are set with `pulumi config set --secret`, so the stack file holds them encrypted. Runtime code: no mocha.
import { spawn, spawnSync } from "child_process";
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { stringify } from "yaml";
import { engineEnv } from "../engineEnv";
import { cacheRoot, resolveTestBedVersion, versionTable } from "../kubeVersion";

export const LAB_STACK = "nodes";
const HERE = __dirname;
const REPO_ROOT = path.join(HERE, "..", "..", "..");
const CONTROL_PLANE_NODE = "cp-1";

/** The ranges the lab's cluster starts in (cluster.sh's defaults) and the ones its stack moves to. */
export const LAB_RANGES = {
  serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
  podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
};

export function labDir(): string {
  return process.env.CIDR_MIGRATION_NODE_LAB ?? path.join(cacheRoot(), "node-lab");
}

/**
 * Where a lab lives and what it runs: the default one (`sandbox up --nodes`), or another beside it for a fleet, in
 * its own directory and network (lab.sh's CIDR_MIGRATION_NODE_LAB_NET), with its own nodes and stack.
 */
export interface LabSite {
  dir: string;
  net: number;
  /** cp-1 first, then the workers */
  nodes: string[];
  stack: string;
}

export const DEFAULT_SITE_NODES = [CONTROL_PLANE_NODE, "worker-1", "worker-2"];

/** The address a test moves a lab node to (nodeAddresses): the same /24, which the lab's bridge reaches, host number + 100. */
export function movedLabAddress(ip: string): string {
  const octets = ip.split(".");
  return [...octets.slice(0, 3), String(Number(octets[3]) + 100)].join(".");
}

export function defaultSite(): LabSite {
  return { dir: labDir(), net: 0, nodes: DEFAULT_SITE_NODES, stack: LAB_STACK };
}

/** A further lab: `net` 1-4, in `<cache>/node-lab-<net>`, its stack `nodes-<net>`. */
export function extraSite(net: number, nodes: string[]): LabSite {
  return { dir: path.join(cacheRoot(), `node-lab-${net}`), net, nodes, stack: `${LAB_STACK}-${net}` };
}

/** What the lab's scripts read: the site, and the default lab's images, which every lab shares. */
export function siteEnv(site: LabSite): NodeJS.ProcessEnv {
  return {
    ...process.env,
    CIDR_MIGRATION_NODE_LAB: site.dir,
    CIDR_MIGRATION_NODE_LAB_NET: String(site.net),
    CIDR_MIGRATION_NODE_LAB_NODES: site.nodes.join(" "),
    CIDR_MIGRATION_NODE_LAB_IMAGES: path.join(labDir(), "images"),
  };
}

export interface LabNode { name: string; ip: string; role: "control-plane" | "worker" }

export interface LabInfo {
  labDir: string;
  kubeconfigPath: string;
  stack: string;
  stackFile: string;
  /** `. <envFile>` gives a shell the engine, the stack's backend and passphrase, and etcdutl for the snapshot */
  envFile: string;
  nodes: LabNode[];
}

export type LabStatus = ({ running: true } & LabInfo) | { running: false; labDir: string; reason: string };

function labNodes(site: LabSite): LabNode[] {
  const file = path.join(site.dir, "addresses");
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => {
    const [name, ip] = line.trim().split(/\s+/);
    // cp-1 runs kubeadm init; further cp-N nodes join as control-plane nodes (cluster.sh)
    return { name, ip, role: name.startsWith("cp-") ? "control-plane" : "worker" };
  });
}

/** A node runs while the PID namespace's init that lab.sh recorded lives. */
function nodeRunning(pidFile: string): boolean {
  try {
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim());
    process.kill(pid, 0);
    return pid > 0;
  } catch {
    return false;
  }
}

function info(site: LabSite, nodes: LabNode[]): LabInfo {
  const dir = site.dir;
  return {
    labDir: dir,
    kubeconfigPath: path.join(dir, "nodes", CONTROL_PLANE_NODE, "fs", "etc", "kubernetes", "admin.conf"),
    stack: site.stack,
    stackFile: path.join(REPO_ROOT, `Pulumi.${site.stack}.yaml`),
    envFile: path.join(dir, "env"),
    nodes,
  };
}

export function labStatus(site = defaultSite()): LabStatus {
  const dir = site.dir;
  const nodes = labNodes(site);
  if (nodes.length === 0) return { running: false, labDir: dir, reason: "no node lab is up (cidr-migration sandbox up --nodes starts one)" };
  const down = nodes.filter((n) => !nodeRunning(path.join(dir, "nodes", n.name, "pid")));
  if (down.length > 0) return { running: false, labDir: dir, reason: `node ${down.map((n) => n.name).join(", ")} is not running; cidr-migration sandbox down --nodes clears what is left` };
  const lab = info(site, nodes);
  if (!fs.existsSync(lab.kubeconfigPath)) return { running: false, labDir: dir, reason: "the nodes run but kubeadm init never finished; cidr-migration sandbox down --nodes, then up again" };
  return { running: true, ...lab };
}

/** A test-bed script, its output on our stderr (the CLI's stdout is the kubeconfig path alone). */
function script(file: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(REPO_ROOT, file), ...args], { env, stdio: ["ignore", process.stderr, process.stderr] });
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(" ")} failed (exit ${code}); its output is above`))));
  });
}

/**
 * Every binary the lab runs, built from the Go module proxy where the cache lacks it (each step skips what is built),
 * and the Pulumi engine its migrations run under: on a cold machine about 40 minutes, which the lab tests spend
 * before their cases' own time starts.
 */
export async function buildLab(): Promise<void> {
  const version = resolveTestBedVersion(versionTable().newest);
  await script("test/testbed/install.sh", [version.minor]);
  await script("test/testbed/build/kube.sh", [version.kube, "kubelet", "kube-proxy", "kube-scheduler", "agnhost"]);
  await script("test/testbed/build/node.sh", []);
  await script("test/testbed/build/pulumi.sh", []);
}

export async function labUp(site = defaultSite()): Promise<LabInfo> {
  if (process.getuid?.() !== 0) throw new Error("the node lab needs root: its nodes are network namespaces with their own mounts and cgroups");
  const status = labStatus(site);
  if (status.running) return status;
  if (labNodes(site).length > 0) throw new Error(status.reason);
  await buildLab();
  await script("test/testbed/nodes/cluster.sh", ["up"], siteEnv(site));
  const lab = info(site, labNodes(site));
  await initStack(lab);
  return lab;
}

export async function labDown(site = defaultSite()): Promise<void> {
  const dir = site.dir;
  const lab = info(site, labNodes(site));
  if (fs.existsSync(path.join(dir, "passphrase"))) {
    spawnSync("pulumi", ["stack", "rm", "--yes", "--force", "--stack", site.stack], { cwd: REPO_ROOT, env: stackEnv(dir), stdio: "ignore" });
  }
  fs.rmSync(lab.stackFile, { force: true });
  await script("test/testbed/nodes/cluster.sh", ["down"], siteEnv(site));
  for (const name of ["state", "snapshots", "passphrase", "env", "prober"]) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
}

/** The engine, and the stack's backend and passphrase: a file backend and a passphrase file in the lab's directory. */
export function stackEnv(dir = labDir()): Record<string, string> {
  const version = resolveTestBedVersion(versionTable().newest);
  const env = engineEnv();
  return {
    ...env,
    // etcdutl checks the snapshot the stack takes
    PATH: `${path.join(cacheRoot(), `etcd-${version.etcd}`, "bin")}:${env.PATH ?? process.env.PATH}`,
    PULUMI_BACKEND_URL: `file://${path.join(dir, "state")}`,
    PULUMI_CONFIG_PASSPHRASE_FILE: path.join(dir, "passphrase"),
  };
}

async function initStack(lab: LabInfo): Promise<void> {
  const dir = lab.labDir;
  fs.mkdirSync(path.join(dir, "state"), { recursive: true });
  // a passphrase already there is kept: a fleet's labs share one (the engine takes one from the environment)
  if (!fs.existsSync(path.join(dir, "passphrase"))) fs.writeFileSync(path.join(dir, "passphrase"), randomBytes(24).toString("hex"), { mode: 0o600 });
  const env = stackEnv(dir);
  fs.writeFileSync(lab.envFile, Object.entries(env).map(([k, v]) => `export ${k}="${v}"\n`).join(""), { mode: 0o600 });
  const cp = lab.nodes.find((n) => n.role === "control-plane")!;
  const config = {
    "cidr-migration:serviceCidr": LAB_RANGES.serviceCidr,
    "cidr-migration:podCidr": LAB_RANGES.podCidr,
    "cidr-migration:cni": "flannel",
    "cidr-migration:kubeconfig": lab.kubeconfigPath,
    "cidr-migration:etcd": { endpoints: [`https://${cp.ip}:2379`] },
    "cidr-migration:snapshot": { directory: path.join(dir, "snapshots"), trigger: "node-lab" },
    "cidr-migration:nodes": lab.nodes.map((n) => ({ name: n.name, host: n.ip, role: n.role })),
    "cidr-migration:ssh": { user: "root" },
    // the lab's nodes run cgroup v1, which kubeadm join's preflight refuses from 1.35 on (cluster.sh joined them the same way)
    "cidr-migration:nodeRollout": { maxUnavailable: 1, ignorePreflightErrors: ["SystemVerification"] },
  };
  fs.writeFileSync(lab.stackFile, `# The node lab's stack, written by cidr-migration sandbox up --nodes; sandbox down --nodes removes it.\n${stringify({ config })}`);
  const pulumi = (args: string[], stdin?: string) => {
    const result = spawnSync("pulumi", [...args, "--stack", lab.stack], { cwd: REPO_ROOT, env: { ...process.env, ...env }, input: stdin, encoding: "utf8" });
    if (result.status !== 0) throw new Error(`pulumi ${args.join(" ")} failed: ${(result.stderr || result.stdout).trim()}`);
  };
  pulumi(["stack", "init"]);
  const pki = path.join(dir, "nodes", cp.name, "fs", "etc", "kubernetes", "pki");
  const secrets: Array<[string, string]> = [
    ["etcd.caCert", path.join(pki, "etcd", "ca.crt")],
    ["etcd.cert", path.join(pki, "apiserver-etcd-client.crt")],
    ["etcd.key", path.join(pki, "apiserver-etcd-client.key")],
    ["ssh.privateKey", path.join(dir, "id_ed25519")],
  ];
  for (const [key, file] of secrets) pulumi(["config", "set", "--secret", "--path", key], fs.readFileSync(file, "utf8"));
}
