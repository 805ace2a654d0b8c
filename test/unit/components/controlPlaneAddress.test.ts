/**
 * ControlPlaneAddress under the SDK's mock monitor: the graph's shape, order and inputs only (what the steps do is
 * proven on real processes: the etcd peer move on a real three-member etcd, the certificates and file edits on real
 * kubeadm output, the scripts in a sandbox root, and the whole chain on the node lab's control-plane nodes).
 * The read step answers with real kubeadm manifests (test/fixtures/manifests, v1.29) moved to each node's address.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { ControlPlaneAddress, ControlPlaneAddressArgs } from "../../../components/controlPlaneAddress";
import { REMOTE_SCRIPT_TYPE } from "../../../lib/gate/policyRules";
import { CONTROL_PLANE_NODE_FILES } from "../../../lib/controlPlane/controlPlaneAddressEdits";
import { markNodeAddress } from "../../../lib/controlPlane/staticPodRestartEdit";
import { MockGraph, RegisteredResource, captureGraph, isWireSecret, plaintextOf } from "../../support/pulumiMocks";

const MANIFESTS = path.join(__dirname, "..", "..", "fixtures", "manifests");
const FIXTURE_ADDRESS = "192.37.70.3";
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";
const KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\nusers: [{name: admin, user: {client-key-data: SECRETKEYDATA}}]\n";
const ETCD_KEY = "-----BEGIN PRIVATE KEY-----\nETCDCLIENTKEY\n-----END PRIVATE KEY-----\n";
const CLUSTER_CONFIGURATION = "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: cp.example:6443\nnetworking:\n  serviceSubnet: 10.96.0.0/12\n";
const STEPS = ["etcd-quorum", "address-add", "certs-both", "read-files", "kubelet", "node-address", "etcd-peer", "etcd", "apiserver", "components", "node-follow", "certs-new", "etcd-handoff", "address-remove-old", "address-agents"];
const kubeconfigAt = (ip: string) => `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://${ip}:6443\n  name: kubernetes\n`;

/** What a control-plane node at `ip` holds, as kubeadm wrote it (the fixture's address replaced by the node's). */
function nodeFiles(ip: string): Map<string, string | undefined> {
  const at = (text: string) => text.split(FIXTURE_ADDRESS).join(ip);
  const files = new Map<string, string | undefined>(CONTROL_PLANE_NODE_FILES.map((p) => [p, undefined]));
  files.set("/etc/kubernetes/manifests/etcd.yaml", at(fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-etcd.yaml"), "utf8")));
  files.set("/etc/kubernetes/manifests/kube-apiserver.yaml", at(fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-kube-apiserver.yaml"), "utf8")));
  const kcm = fs.readFileSync(path.join(MANIFESTS, "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
  files.set("/etc/kubernetes/manifests/kube-controller-manager.yaml", kcm);
  // no scheduler manifest among the fixtures: the controller-manager's, renamed, has the shape the edit meets
  files.set("/etc/kubernetes/manifests/kube-scheduler.yaml", kcm.split("kube-controller-manager").join("kube-scheduler"));
  for (const conf of ["admin", "controller-manager", "scheduler", "kubelet"]) files.set(`/etc/kubernetes/${conf}.conf`, kubeconfigAt(ip));
  files.set("/var/lib/kubelet/kubeadm-flags.env", `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=${ip}"\n`);
  return files;
}

const OLD = { "cp-2": "192.37.70.3", "cp-3": "192.37.70.4" } as const;
const NEW = { "cp-2": "192.37.80.3", "cp-3": "192.37.80.4" } as const;

function args(extra: Partial<ControlPlaneAddressArgs> = {}): ControlPlaneAddressArgs {
  return {
    nodes: [
      { name: "cp-1", host: "192.37.70.2", port: 22, user: "root", role: "control-plane" },
      { name: "cp-2", host: OLD["cp-2"], port: 22, user: "root", role: "control-plane" },
      // reached at a management address, which the change leaves alone
      { name: "cp-3", host: "10.250.0.4", port: 22, user: "root", role: "control-plane" },
    ],
    ssh: { user: "root", privateKey: KEY },
    runId: "2024-05-01",
    changes: (["cp-2", "cp-3"] as const).map((name) => ({ name, from: OLD[name], to: NEW[name], role: "control-plane" as const, prefix: 24 })),
    host: { persistence: "netplan" },
    kubeconfig: KUBECONFIG,
    etcd: { endpoints: ["https://192.37.70.2:2379", "https://192.37.70.3:2379"], caCert: "CA", cert: "CERT", key: ETCD_KEY },
    serviceSubnet: "10.112.0.0/12",
    apiserverExtraSans: ["10.96.0.1"],
    clusterConfiguration: CLUSTER_CONFIGURATION,
    ...extra,
  };
}

/** The read step answers like the node: one line per file, base64 or "-". */
function outputs(resource: { type: string; name: string }): Record<string, unknown> {
  const node = /^cp-address-(cp-\d)-read-files$/.exec(resource.name)?.[1] as keyof typeof OLD | undefined;
  if (resource.type !== REMOTE_SCRIPT_TYPE || !node) return resource.type === REMOTE_SCRIPT_TYPE ? { stdout: "", stderr: "" } : {};
  const lines = [...nodeFiles(OLD[node])].map(([p, text]) => `${p} ${text === undefined ? "-" : Buffer.from(text).toString("base64")}`);
  return { stdout: `${lines.join("\n")}\n`, stderr: "" };
}

async function declare(a: ControlPlaneAddressArgs): Promise<MockGraph> {
  return captureGraph(() => new ControlPlaneAddress("cp-address", a), { outputs });
}

const step = (graph: MockGraph, node: string, name: string): RegisteredResource => graph.named(`cp-address-${node}-${name}`);
const directlyAfter = (later: RegisteredResource, earlier: RegisteredResource) => later.dependencies.includes(earlier.urn);
const base64Of = (text: string) => Buffer.from(text).toString("base64");

describe("ControlPlaneAddress (mocked engine): a control-plane node's address change, one node at a time (issue 16)", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await declare(args());
  });

  it("chains each node's steps in order, and the second node after the first node's last step", () => {
    for (const node of ["cp-2", "cp-3"]) {
      for (let i = 1; i < STEPS.length; i++) {
        assert.ok(directlyAfter(step(graph, node, STEPS[i]), step(graph, node, STEPS[i - 1])), `${node}: ${STEPS[i]} right after ${STEPS[i - 1]}`);
      }
    }
    assert.ok(directlyAfter(step(graph, "cp-3", "etcd-quorum"), step(graph, "cp-2", "address-agents")), "cp-3 starts once cp-2 is done");
    assert.deepEqual([step(graph, "cp-2", "address-agents").inputs.internalIP, step(graph, "cp-2", "address-agents").inputs.oldInternalIP], [NEW["cp-2"], OLD["cp-2"]]);
    assert.ok(!graph.resources.some((r) => r.name.startsWith("cp-address-cp-1-")), "only the nodes that change");
  });

  it("runs over the node's SSH host, the old address's removal over the new one when SSH came in at the old", () => {
    for (const name of STEPS.filter((s) => !["etcd-quorum", "etcd-peer", "etcd-handoff", "node-address", "node-follow", "address-remove-old", "address-agents"].includes(s))) {
      assert.equal(step(graph, "cp-2", name).inputs.connection.host, OLD["cp-2"], `cp-2 ${name}`);
      assert.equal(step(graph, "cp-3", name).inputs.connection.host, "10.250.0.4", `cp-3 ${name}`);
    }
    assert.equal(step(graph, "cp-2", "address-remove-old").inputs.connection.host, NEW["cp-2"]);
    assert.equal(step(graph, "cp-3", "address-remove-old").inputs.connection.host, "10.250.0.4");
    assert.match(step(graph, "cp-2", "address-add").inputs.script, /readonly OLD_IP='192\.37\.70\.3' NEW_IP='192\.37\.80\.3' PREFIX=24\n/);
  });

  it("checks quorum first, then moves the member's peer URL, through the stack's etcd endpoints with its TLS as secrets", () => {
    const quorum = step(graph, "cp-2", "etcd-quorum");
    const peer = step(graph, "cp-2", "etcd-peer");
    assert.equal(quorum.type, "pulumi-nodejs:dynamic/cidr-migration:EtcdPeerMove");
    const handoff = step(graph, "cp-2", "etcd-handoff");
    assert.deepEqual([quorum.inputs.step, peer.inputs.step, handoff.inputs.step], ["check", "move", "handoff"]);
    for (const r of [quorum, peer, handoff, step(graph, "cp-2", "etcd")]) {
      assert.deepEqual([r.inputs.member, r.inputs.from, r.inputs.to], ["cp-2", OLD["cp-2"], NEW["cp-2"]]);
      for (const key of ["caCert", "cert", "key"]) assert.ok(isWireSecret(r.rawInputs[key]), `${r.name} ${key} is a secret`);
    }
    for (const r of graph.resources) {
      const text = plaintextOf(r.rawInputs);
      assert.ok(!text.includes("ETCDCLIENTKEY") && !text.includes("SECRETKEYDATA") && !text.includes("not-a-real-key"), `${r.name} holds a secret in plaintext`);
    }
  });

  it("edits what the node read: the kubelet's files first, etcd.yaml and kube-apiserver.yaml with health waits, then the components' kubeconfigs with their restarts", () => {
    const files = nodeFiles(OLD["cp-2"]);
    const moved = (p: string) => files.get(p)!.split(OLD["cp-2"]).join(NEW["cp-2"]);
    const kubelet = step(graph, "cp-2", "kubelet").inputs.script as string;
    for (const p of ["/etc/kubernetes/kubelet.conf", "/var/lib/kubelet/kubeadm-flags.env"]) assert.ok(kubelet.includes(base64Of(moved(p))), `${p} written at the new address`);
    assert.match(kubelet, /systemctl restart kubelet/);
    assert.doesNotMatch(kubelet, /wait_restarted/);
    // etcd restarts through its own provider, which builds the edit and, where the member cannot come back, its replacement
    const etcd = step(graph, "cp-2", "etcd");
    assert.equal(etcd.type, "pulumi-nodejs:dynamic/cidr-migration:EtcdMemberRestart");
    assert.deepEqual(etcd.inputs.manifest, { path: "/etc/kubernetes/manifests/etcd.yaml", current: files.get("/etc/kubernetes/manifests/etcd.yaml"), next: moved("/etc/kubernetes/manifests/etcd.yaml") });
    assert.deepEqual([etcd.inputs.member, etcd.inputs.from, etcd.inputs.to, etcd.inputs.healthUrl], ["cp-2", OLD["cp-2"], NEW["cp-2"], "http://127.0.0.1:2381/readyz"]);
    assert.match(etcd.inputs.heldDir as string, /^\/etc\/kubernetes\/cidr-migration-held\//);
    assert.match(etcd.inputs.backupDir as string, /^\/var\/lib\/cidr-migration\/backup\//);
    const apiserver = step(graph, "cp-2", "apiserver").inputs.script as string;
    assert.ok(apiserver.includes(base64Of(moved("/etc/kubernetes/manifests/kube-apiserver.yaml"))), "the apiserver manifest at the new address");
    assert.match(apiserver, /--advertise-address=192\.37\.80\.3/);
    const components = step(graph, "cp-2", "components").inputs.script as string;
    for (const p of ["/etc/kubernetes/admin.conf", "/etc/kubernetes/controller-manager.conf", "/etc/kubernetes/scheduler.conf"]) {
      assert.ok(components.includes(base64Of(moved(p))), `${p} written at the new address`);
    }
    // then each manifest marked with the new address, and a new process of it waited for at its health URL
    for (const [component, url] of [["kube-controller-manager", "https://127.0.0.1:10257/healthz"], ["kube-scheduler", "https://127.0.0.1:10259/healthz"]]) {
      const manifest = `/etc/kubernetes/manifests/${component}.yaml`;
      assert.ok(components.includes(base64Of(markNodeAddress(files.get(manifest)!, manifest, NEW["cp-2"])!)), `${manifest} marked with the new address`);
      assert.ok(components.includes(`COMPONENT='${component}' URL='${url}'`), `${component} waited for at ${url}`);
    }
    assert.ok(components.indexOf(base64Of(moved("/etc/kubernetes/scheduler.conf"))) < components.indexOf("COMPONENT='kube-controller-manager'"), "the kubeconfigs first");
    assert.doesNotMatch(components, /systemctl/);
    for (const name of ["kubelet", "apiserver", "components", "address-add", "address-remove-old", "certs-both", "certs-new"]) shellcheck(`cp-2 ${name}`, step(graph, "cp-2", name).inputs.script);
  });

  it("re-issues the certificates with both addresses, then with the new one only, keeping the extra apiserver SANs", () => {
    const both = step(graph, "cp-2", "certs-both").inputs.script as string;
    const last = step(graph, "cp-2", "certs-new").inputs.script as string;
    for (const script of [both, last]) {
      assert.match(script, /advertiseAddress: 192\.37\.80\.3/);
      assert.match(script, /10\.96\.0\.1/, "the old kubernetes Service IP stays a SAN");
      assert.match(script, /serviceSubnet: 10\.112\.0\.0\/12/);
    }
    assert.match(both, /    - 192\.37\.70\.3\n/, "the old address kept while clients still dial it");
    assert.doesNotMatch(last, /- 192\.37\.70\.3/, "then dropped");
  });

  it("the Node follows: the new InternalIP reported before the static pods restart, the host-network pods off the old one after", () => {
    const reported = step(graph, "cp-2", "node-address");
    const follow = step(graph, "cp-2", "node-follow");
    assert.equal(reported.type, "pulumi-nodejs:dynamic/cidr-migration:NodeAddressReported");
    assert.equal(follow.type, "pulumi-nodejs:dynamic/cidr-migration:NodeAddressFollow");
    for (const [r, stepName] of [[reported, "address-reported"], [follow, "address-follow"]] as const) {
      assert.deepEqual([r.inputs.step, r.inputs.node, r.inputs.internalIP, r.inputs.oldInternalIP], [stepName, "cp-2", NEW["cp-2"], OLD["cp-2"]]);
      assert.ok(isWireSecret(r.rawInputs.kubeconfig));
    }
  });

  it("refuses a change it cannot run, naming the node", async () => {
    const cases: Array<[Partial<ControlPlaneAddressArgs>, RegExp]> = [
      [{ nodes: args().nodes.filter((n) => n.name !== "cp-3") }, /^node cp-3 changes address but is not a control-plane node in cidr-migration:nodes/],
      [{ changes: args().changes.map((c) => ({ ...c, prefix: undefined })) }, /^node cp-2: the prefix length of its address is missing \(config hostAddress\.prefix\)$/],
      [{ host: { persistence: "hook" } }, /persistence "hook" needs the path of the operator's script/],
    ];
    for (const [change, message] of cases) {
      await assert.rejects(captureGraph(() => new ControlPlaneAddress("cp-address", args(change))), (err: Error) => {
        assert.ok(err instanceof pulumi.ResourceError, `a ResourceError, got ${err}`);
        assert.match(err.message, message);
        return true;
      });
    }
  });
});

function shellcheck(name: string, script: string): void {
  const result = spawnSync("shellcheck", ["-s", "bash", "-"], { input: script, encoding: "utf8" });
  if (result.error) throw new Error(`shellcheck is not available (${result.error.message}); install it (test/testbed/install.sh)`);
  assert.equal(result.status, 0, `${name} fails shellcheck:\n${result.stdout}${result.stderr}`);
}
