// The node side of a node move over real SSH: an OpenSSH server (test/testbed/sshd.ts) inside a network namespace
// that holds real cni0 (bridge) and flannel.1 (VXLAN) links, and a veth whose address a worker's address change
// really moves, and a sandbox directory standing in for the node's `/`. The scripts, the runner command and the connection settings are taken from the resources
// NodeRollout declares (under the SDK's mock monitor, as the engine would receive them) and run in dependency
// order; a read step's real stdout is fed back as its output, as the engine does, before the steps that use it.
// Only systemctl and kubeadm are fakes (first on the session's PATH): no kubelet or kubeadm can run here.
import { strict as assert } from "assert";
import { execFileSync, spawnSync } from "child_process";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NodeRollout, NodeRolloutArgs } from "../../components/nodeRollout";
import { Inventory } from "../../lib/plan/inventory";
import { MigrationConfig } from "../../lib/config/migrationConfig";
import { RUN_SCRIPT_FROM_STDIN } from "../../lib/remote/stdinRunner";
import { buildPlan } from "../../lib/plan/plan";
import { MockGraph, RegisteredResource, captureGraph, isWireSecret, plaintextOf } from "../support/pulumiMocks";
import { REMOTE_SCRIPT_TYPE } from "../../lib/gate/policyRules";
import { SshServer, startSshd } from "../testbed/sshd";

const FIXTURES = path.join(__dirname, "..", "fixtures");
const KUBELET_CONFIG = fs.readFileSync(path.join(FIXTURES, "testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml"), "utf8");
const RUN_ID = "2024-05-01";
const BACKUP = `/var/lib/cidr-migration/backup/${RUN_ID}`;
const TOKEN = "k8sabc.0123456789abcdef";

const FAKE_SYSTEMCTL = `#!/usr/bin/env bash
printf 'systemctl %s\\n' "$*" >> "$FAKE_CALLS"
state="$FAKE_ROOT/run/fake-systemd"
case "$1" in
  stop) rm -f "$state/$2.active" ;;
  start) mkdir -p "$state"; : > "$state/$2.active" ;;
  is-active) [ "$2" = --quiet ] && shift; [ -e "$state/$2.active" ] ;;
  *) echo "fake systemctl: unexpected $*" >&2; exit 2 ;;
esac
`;
const FAKE_KUBEADM = `#!/usr/bin/env bash
printf 'kubeadm %s\\n' "$*" >> "$FAKE_CALLS"
case "$1 $2" in
  "token create") echo "kubeadm join 192.168.10.11:6443 --token ${TOKEN} --discovery-token-ca-cert-hash sha256:${"c0".repeat(32)} " ;;
  "reset -f") rm -rf "$FAKE_ROOT/etc/kubernetes/kubelet.conf" "$FAKE_ROOT/etc/kubernetes/pki"; rm -f "$FAKE_ROOT/run/fake-systemd/kubelet.active" ;;
  join*) mkdir -p "$FAKE_ROOT/etc/kubernetes"; printf 'server: https://%s\\n' "$2" > "$FAKE_ROOT/etc/kubernetes/kubelet.conf" ;;
  *) echo "fake kubeadm: unexpected $*" >&2; exit 2 ;;
esac
`;

function write(file: string, content: string, mode = 0o644): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content, { mode });
}

/** sha256 of every file under dir (path + content), to prove a re-run changes nothing. */
function treeHash(dir: string): string {
    const hash = createHash("sha256");
    const walk = (d: string): void => {
        for (const entry of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
            const p = path.join(d, entry.name);
            hash.update(path.relative(dir, p));
            if (entry.isDirectory()) walk(p);
            else hash.update(fs.readFileSync(p));
        }
    };
    walk(dir);
    return hash.digest("hex");
}

function config(strategy: MigrationConfig["nodeRollout"]["strategy"], port: number): MigrationConfig {
    return {
        serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
        podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
        platform: "kubeadm",
    cni: "flannel",
        kubeconfig: { path: "/unused" },
        etcd: { endpoints: ["https://127.0.0.1:2379"] },
        nodes: [
            { name: "cp-1", host: "127.0.0.1", port, user: "root", role: "control-plane" },
            { name: "worker-1", host: "127.0.0.1", port, user: "root", role: "worker" },
        ],
        nodeAddresses: [],
        ssh: { user: "root" },
        dns: { namespace: "kube-system", name: "kube-dns" },
        nodeRollout: { strategy, maxUnavailable: 1, drainTimeoutSeconds: 300, dnsDisruptionBudget: true },
        services: { strategy: "recreate", parallelism: 1, allowLoadBalancerRecreate: false, bridgeOldIps: false, routeNewIpsFirst: true, moveInPlace: false },
        snapshot: { directory: "/unused", trigger: RUN_ID },
    };
}

const inventory: Inventory = {
    serverVersion: { major: "1", minor: "20", gitVersion: "v1.20.2" },
    services: [{ namespace: "kube-system", name: "kube-dns", type: "ClusterIP", clusterIP: "10.96.0.10", hasSelector: true }],
    nodes: [
        { name: "cp-1", podCIDR: "10.244.0.0/24", internalIPs: ["192.168.10.11"], controlPlane: true, labels: {}, unschedulable: false },
        { name: "worker-1", podCIDR: "10.244.3.0/24", internalIPs: ["192.168.10.21"], controlPlane: false, labels: {}, unschedulable: false },
    ],
    cni: { detected: "flannel", calicoPools: [], flannelNetwork: "10.244.0.0/16" },
};

describe("node rollout scripts over real SSH (sshd in a network namespace, sandbox root)", function () {
    this.timeout(60_000);
    const netns = `cidr-nr-ssh-${process.pid}`;
    let sshd: SshServer;
    let scratch: string;
    let root: string;
    let calls: string;
    let sessionTmp: string;

    const linkExists = (name: string) => spawnSync("ip", ["netns", "exec", netns, "ip", "link", "show", "dev", name]).status === 0;
    const recordedCalls = () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trim().split("\n") : []);

    function seedNode(): void {
        fs.rmSync(root, { recursive: true, force: true });
        write(`${root}/etc/cni/net.d/10-flannel.conflist`, `{"name":"cbr0","cniVersion":"0.3.1","plugins":[{"type":"flannel","delegate":{"hairpinMode":true,"isDefaultGateway":true}},{"type":"portmap","capabilities":{"portMappings":true}}]}\n`);
        write(`${root}/etc/cni/net.d/99-bridge.conf`, `{"cniVersion":"0.3.1","name":"bridge","type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.244.3.0/24"}}\n`);
        write(`${root}/run/flannel/subnet.env`, "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n");
        write(`${root}/var/lib/cni/networks/cbr0/10.244.3.5`, "c0ffee\neth0\n");
        write(`${root}/var/lib/cni/flannel/c0ffee`, "{}\n");
        write(`${root}/var/lib/kubelet/pki/kubelet-client-current.pem`, "-----BEGIN CERTIFICATE-----\nnode\n-----END CERTIFICATE-----\n", 0o600);
        write(`${root}/var/lib/kubelet/cpu_manager_state`, `{"policyName":"static","defaultCpuSet":"0-1"}\n`);
        write(`${root}/var/lib/kubelet/config.yaml`, KUBELET_CONFIG);
        write(`${root}/run/fake-systemd/kubelet.active`, "");
    }

    before(async () => {
        execFileSync("ip", ["netns", "add", netns]);
        execFileSync("ip", ["-n", netns, "link", "set", "lo", "up"]);
        scratch = fs.mkdtempSync(path.join(os.tmpdir(), "node-ssh-"));
        root = path.join(scratch, "root");
        calls = path.join(scratch, "calls.log");
        sessionTmp = path.join(scratch, "session-tmp");
        fs.mkdirSync(sessionTmp);
        const bin = path.join(scratch, "bin");
        write(path.join(bin, "systemctl"), FAKE_SYSTEMCTL, 0o755);
        write(path.join(bin, "kubeadm"), FAKE_KUBEADM, 0o755);
        sshd = await startSshd({ netns, listenAll: true, sessionEnv: { PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`, FAKE_ROOT: root, FAKE_CALLS: calls, TMPDIR: sessionTmp } });
    });

    after(async () => {
        await sshd?.stop();
        spawnSync("ip", ["netns", "delete", netns]);
        if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
    });

    beforeEach(() => {
        seedNode();
        fs.rmSync(calls, { force: true });
        for (const link of ["cni0", "flannel.1"]) spawnSync("ip", ["-n", netns, "link", "delete", link]);
        execFileSync("ip", ["-n", netns, "link", "add", "cni0", "type", "bridge"]);
        execFileSync("ip", ["-n", netns, "addr", "add", "10.244.3.1/24", "dev", "cni0"]);
        execFileSync("ip", ["-n", netns, "link", "add", "flannel.1", "type", "vxlan", "id", "1", "dstport", "8472"]);
    });

    function args(strategy: MigrationConfig["nodeRollout"]["strategy"]): NodeRolloutArgs {
        const c = config(strategy, sshd.port);
        return {
            plan: buildPlan(c, inventory),
            nodes: c.nodes,
            ssh: { user: "root", privateKey: sshd.privateKey },
            connection: { hostKey: sshd.hostKey },
            kubeconfig: "apiVersion: v1\nkind: Config\nclusters: []\n",
            rollout: c.nodeRollout,
            runId: RUN_ID,
            root,
        };
    }

    /**
     * The graph as the engine would get it, with the given read steps answering what the node really printed.
     * A read step not yet run answers a stand-in (the steps that use it are not run from that declaration).
     */
    async function declare(strategy: MigrationConfig["nodeRollout"]["strategy"], stdouts: Record<string, string> = {}): Promise<MockGraph> {
        const standIn = (name: string): string => {
            if (name.endsWith("-kubelet-config-read")) return Buffer.from(KUBELET_CONFIG).toString("base64");
            if (name.endsWith("-join-token")) return `kubeadm join 192.0.2.1:6443 --token aaaaaa.aaaaaaaaaaaaaaaa --discovery-token-ca-cert-hash sha256:${"00".repeat(32)}`;
            return "";
        };
        return captureGraph(() => new NodeRollout("nodes", args(strategy)), {
            outputs: (r) => (r.type === REMOTE_SCRIPT_TYPE ? { stdout: stdouts[r.name] ?? standIn(r.name), stderr: "" } : {}),
        });
    }

    /** Runs one declared node step over SSH through the RemoteScript provider, with its own connection and script. */
    async function runOk(resource: RegisteredResource): Promise<string> {
        assert.equal(resource.inputs.connection.hostKey, sshd.hostKey, "the host key is pinned");
        return (await sshd.runStep(resource.inputs)).stdout;
    }

    /** The reregister strategy's node steps for worker-1, in the graph's order (the API steps run elsewhere). */
    async function moveWorker(): Promise<string[]> {
        const first = await declare("reregister");
        const out: string[] = [];
        for (const step of ["cni-cleanup", "kubelet-stop", "kubelet-config-read"]) out.push(await runOk(first.named(`nodes-worker-1-${step}`)));
        const then = await declare("reregister", { "nodes-worker-1-kubelet-config-read": out[2] });
        for (const step of ["kubelet-config-dns", "kubelet-start"]) out.push(await runOk(then.named(`nodes-worker-1-${step}`)));
        return out;
    }

    it("cleans Flannel's links and state, stops the kubelet, moves clusterDNS, starts it; backups first", async () => {
        assert.ok(linkExists("cni0") && linkExists("flannel.1"));
        const [cleanup, , read, dns, start] = await moveWorker();

        assert.ok(!linkExists("cni0") && !linkExists("flannel.1"), "the links are gone from the namespace");
        assert.match(cleanup, /cidr-migration cleanup-cni: deleted link cni0/);
        assert.ok(!fs.existsSync(`${root}/etc/cni/net.d/99-bridge.conf`), "the config pinned to the old subnet is gone");
        assert.match(fs.readFileSync(`${root}${BACKUP}/etc/cni/net.d/99-bridge.conf`, "utf8"), /"subnet":"10\.244\.3\.0\/24"/);
        assert.ok(fs.existsSync(`${root}/etc/cni/net.d/10-flannel.conflist`), "flannel's own config stays");
        assert.ok(!fs.existsSync(`${root}/run/flannel/subnet.env`));
        assert.match(fs.readFileSync(`${root}${BACKUP}/run/flannel/subnet.env`, "utf8"), /FLANNEL_SUBNET=10\.244\.3\.1\/24/);
        assert.ok(!fs.existsSync(`${root}/var/lib/cni/networks`) && !fs.existsSync(`${root}/var/lib/cni/flannel`));

        assert.ok(!fs.existsSync(`${root}/var/lib/kubelet/cpu_manager_state`));
        assert.ok(fs.existsSync(`${root}${BACKUP}/var/lib/kubelet/cpu_manager_state`));
        assert.ok(fs.existsSync(`${root}/var/lib/kubelet/pki/kubelet-client-current.pem`), "the node's identity stays");

        assert.equal(Buffer.from(read.trim(), "base64").toString("utf8"), KUBELET_CONFIG);
        assert.match(dns, /wrote .*config\.yaml/);
        assert.equal(fs.readFileSync(`${root}/var/lib/kubelet/config.yaml`, "utf8"), KUBELET_CONFIG.replace("- 10.96.0.10\n", "- 10.112.0.10\n"));
        assert.equal(fs.readFileSync(`${root}${BACKUP}/var/lib/kubelet/config.yaml`, "utf8"), KUBELET_CONFIG);
        assert.match(start, /kubelet started/);
        assert.deepEqual(recordedCalls(), ["systemctl stop kubelet", "systemctl is-active --quiet kubelet", "systemctl start kubelet", "systemctl is-active --quiet kubelet"]);
        assert.deepEqual(fs.readdirSync(sessionTmp), [], "the runner removed its temp copy of every script");
    });

    it("a re-run of every step succeeds and changes nothing", async () => {
        await moveWorker();
        const once = treeHash(root);
        const second = await moveWorker();
        assert.equal(treeHash(root), once);
        assert.match(second[3], /already has the new content; nothing to do/);
        assert.ok(!linkExists("cni0") && !linkExists("flannel.1"));
    });

    it("a failing step fails the resource with the script's exit status and its one-line reason", async () => {
        fs.rmSync(`${root}/var/lib/kubelet/pki/kubelet-client-current.pem`);
        const graph = await declare("reregister");
        await assert.rejects(sshd.runStep(graph.named("nodes-worker-1-kubelet-stop").inputs),
            /^Error: the step's script failed on root@127\.0\.0\.1:\d+ with exit 1: cidr-migration kubelet-stop-for-reregister: .*kubelet-client-current\.pem is missing: the kubelet could not authenticate to re-register; use the kubeadm-rejoin strategy for this node$/);
        assert.deepEqual(recordedCalls(), [], "the kubelet was not stopped");
        assert.ok(fs.existsSync(`${root}/run/fake-systemd/kubelet.active`));
    });

    it("kubeadm-rejoin: the token made on the control-plane node reaches the join only inside secrets", async () => {
        write(`${root}/etc/kubernetes/kubelet.conf`, "old\n");
        const first = await declare("kubeadm-rejoin");
        await runOk(first.named("nodes-worker-1-cni-cleanup"));
        const token = first.named("nodes-worker-1-join-token");
        assert.equal(token.inputs.secretOutput, true);
        const printed = await runOk(token);
        assert.match(printed, new RegExp(`--token ${TOKEN.replace(".", "\\.")}`));

        const then = await declare("kubeadm-rejoin", { "nodes-worker-1-join-token": printed });
        const rejoin = then.named("nodes-worker-1-kubeadm-rejoin");
        assert.ok(isWireSecret(rejoin.rawInputs.script) && !plaintextOf(rejoin.rawInputs).includes(TOKEN));
        const out = await runOk(rejoin);
        assert.ok(!out.includes(TOKEN), "the script never prints the token");
        assert.deepEqual(recordedCalls(), [
            "kubeadm token create --print-join-command --ttl 2h",
            "kubeadm reset -f",
            `kubeadm join 192.168.10.11:6443 --token ${TOKEN} --discovery-token-ca-cert-hash sha256:${"c0".repeat(32)} --node-name worker-1`,
        ]);
        assert.equal(fs.readFileSync(`${root}/etc/kubernetes/kubelet.conf`, "utf8"), "server: https://192.168.10.11:6443\n");
        assert.equal(fs.readFileSync(`${root}${BACKUP}/etc/kubernetes/kubelet.conf`, "utf8"), "old\n");
        // a re-run on the joined node does nothing
        await runOk(rejoin);
        assert.equal(recordedCalls().filter((c) => c.startsWith("kubeadm reset")).length, 1);
    });

    it("the runner works under a plain POSIX login shell (dash) and passes the exit status through", () => {
        const tmp = fs.mkdtempSync(path.join(scratch, "dash-"));
        const ok = spawnSync("dash", ["-c", RUN_SCRIPT_FROM_STDIN], { input: "#!/usr/bin/env bash\nset -euo pipefail\nprintf 'a\\n' | cat\n", encoding: "utf8", env: { ...process.env, TMPDIR: tmp } });
        assert.equal(ok.status, 0, ok.stderr);
        assert.equal(ok.stdout, "a\n");
        const failing = spawnSync("dash", ["-c", RUN_SCRIPT_FROM_STDIN], { input: "set -euo pipefail\necho partial\nfalse | cat\necho never\n", encoding: "utf8", env: { ...process.env, TMPDIR: tmp } });
        assert.equal(failing.status, 1);
        assert.equal(failing.stdout, "partial\n");
        const exit3 = spawnSync("dash", ["-c", RUN_SCRIPT_FROM_STDIN], { input: "echo why >&2; exit 3\n", encoding: "utf8", env: { ...process.env, TMPDIR: tmp } });
        assert.equal(exit3.status, 3);
        assert.equal(exit3.stderr, "why\n");
        assert.deepEqual(fs.readdirSync(tmp), []);
    });
    it("a worker whose address moves: the new address added beside the old over a session to the old one, --node-ip moved, the old address removed over a session to the new one; each step again changes nothing", async () => {
        const FROM = "192.168.10.21";
        const TO = "192.168.20.21";
        const FLAGS = `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=${FROM}"\n`;
        write(`${root}/var/lib/kubelet/kubeadm-flags.env`, FLAGS);
        spawnSync("ip", ["-n", netns, "link", "delete", "eth0"]);
        execFileSync("ip", ["-n", netns, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"]);
        execFileSync("ip", ["-n", netns, "link", "set", "eth0", "up"]);
        execFileSync("ip", ["-n", netns, "addr", "add", `${FROM}/24`, "dev", "eth0"]);
        const addresses = () => execFileSync("ip", ["-n", netns, "-o", "-4", "addr", "show", "dev", "eth0"], { encoding: "utf8" }).split("\n").filter(Boolean).map((l) => l.split(/\s+/)[3]).sort();

        const c = config("reregister", sshd.port);
        c.nodes = c.nodes.map((n) => (n.name === "worker-1" ? { ...n, host: FROM } : n));
        const change = { name: "worker-1", from: FROM, to: TO, role: "worker" as const, prefix: 24 };
        const rolloutArgs: NodeRolloutArgs = { ...args("reregister"), nodes: c.nodes, addressChanges: { changes: [change], host: { persistence: "none" } } };
        const declareWith = (stdouts: Record<string, string>) => captureGraph(() => new NodeRollout("nodes", rolloutArgs), {
            // a read step not yet run answers a stand-in: the file as seeded (the steps that use it are not run from that declaration)
            outputs: (r) => (r.type === REMOTE_SCRIPT_TYPE ? { stdout: stdouts[r.name] ?? (r.name.endsWith("-kubelet-config-read") ? Buffer.from(KUBELET_CONFIG).toString("base64") : r.name.endsWith("-kubelet-flags-read") ? Buffer.from(FLAGS).toString("base64") : ""), stderr: "" } : {}),
        });
        const first = await declareWith({});
        const named = (g: MockGraph, step: string) => g.named(`nodes-worker-1-${step}`);
        assert.equal(named(first, "address-add").inputs.connection.host, FROM);
        assert.equal(named(first, "address-remove-old").inputs.connection.host, TO);

        for (const step of ["cni-cleanup", "kubelet-stop"]) await runOk(named(first, step));
        // (API: the Node deleted)
        await runOk(named(first, "address-add"));
        assert.deepEqual(addresses(), [`${FROM}/24`, `${TO}/24`].sort(), "both live while the session rides on the old one");
        const flags = await runOk(named(first, "kubelet-flags-read"));
        const then = await declareWith({ "nodes-worker-1-kubelet-flags-read": flags });
        await runOk(named(then, "kubelet-node-ip"));
        assert.equal(fs.readFileSync(`${root}/var/lib/kubelet/kubeadm-flags.env`, "utf8"), FLAGS.replace(`--node-ip=${FROM}`, `--node-ip=${TO}`));
        assert.equal(fs.readFileSync(`${root}${BACKUP}/var/lib/kubelet/kubeadm-flags.env`, "utf8"), FLAGS, "the flags file backed up first");
        await runOk(named(then, "kubelet-start"));
        // (API: the rejoin waits for InternalIP 192.168.20.21)
        await runOk(named(then, "address-remove-old"));
        assert.deepEqual(addresses(), [`${TO}/24`]);

        // again, as a re-run: each address step and the flags write find their work done; the old address stays gone
        const tree = treeHash(root);
        assert.match(await runOk(named(then, "address-remove-old")), /already removed/);
        // the node answers only at its new address now
        const atNewAddress = (r: RegisteredResource) => ({ ...r, inputs: { ...r.inputs, connection: { ...r.inputs.connection, host: TO } } });
        const again = await declareWith({ "nodes-worker-1-kubelet-flags-read": await runOk(atNewAddress(named(first, "kubelet-flags-read"))) });
        await runOk(atNewAddress(named(again, "kubelet-node-ip")));
        assert.match(await runOk(atNewAddress(named(again, "address-add"))), /already changed/);
        assert.equal(treeHash(root), tree, "nothing on the node changed");
        assert.deepEqual(addresses(), [`${TO}/24`]);
    });
});
