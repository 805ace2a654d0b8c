/**
 * The node-side components under the SDK's mock monitor (graph shape, order and inputs only):
 * connectionFor, ControlPlane, EnableCidrAllocation and ApiserverCerts.
 * - every remote script they declare passes Debian's shellcheck;
 * - the write steps' scripts carry the manifest the read step returned, edited with exactly the planned flags
 *   (decoded from the script and read back with lib/controlPlane/manifestFlags) and nothing else changed;
 * - the steps run strictly one after another, node after node (direct dependencies as the engine gets them);
 * - the SSH private key is a secret on the wire; bad arguments throw a ResourceError naming the field.
 * What the scripts do on a node is proven in test/integration/componentsScripts.test.ts (sandbox root, real
 * openssl) and test/integration/componentsSsh.test.ts (real sshd).
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import * as pulumi from "@pulumi/pulumi";
import { ApiserverCerts } from "../../../components/apiserverCerts";
import { ControlPlane, EnableCidrAllocation } from "../../../components/controlPlane";
import { connectionFor } from "../../../components/remoteConnection";
import { readFlags } from "../../../lib/controlPlane/manifestFlags";
import { NodeTarget } from "../../../lib/config/migrationConfig";
import { REMOTE_SCRIPT_TYPE } from "../../../lib/gate/policyRules";
import { MockGraph, RegisteredResource, captureGraph, isWireSecret, plaintextOf } from "../../support/pulumiMocks";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures");
const KCM = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const APISERVER = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-apiserver.yaml"), "utf8");
const CLUSTER_CONFIGURATION: string = parse(fs.readFileSync(path.join(FIXTURES, "testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml"), "utf8")).data.ClusterConfiguration;
const COMMAND = REMOTE_SCRIPT_TYPE;
const kubeadmConfigMap = (type: string, id: string) => (type === "kubernetes:core/v1:ConfigMap" && id === "kube-system/kubeadm-config"
  ? { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "kube-system", name: "kubeadm-config" }, data: { ClusterConfiguration: CLUSTER_CONFIGURATION } }
  : undefined);
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";

const nodes: NodeTarget[] = [
  { name: "cp-1", host: "10.0.0.11", port: 22, user: "admin", role: "control-plane" },
  { name: "cp-2", host: "10.0.0.12", port: 2222, user: "", role: "control-plane" },
];
const common = { nodes, ssh: { user: "root", privateKey: KEY }, runId: "2024-05-01" };
const serviceCidr = { from: "10.96.0.0/12", to: "10.112.0.0/12" };
const podCidr = { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 };

/** The read steps return the manifest as readFile prints it: one line of base64. */
function manifestOutputs(resource: { type: string; name: string }): Record<string, unknown> {
  if (resource.type !== COMMAND) return {};
  if (/-kcm-read$/.test(resource.name)) return { stdout: Buffer.from(KCM).toString("base64"), stderr: "" };
  if (/-apiserver-read$|certs-cp-\d-read$/.test(resource.name)) return { stdout: Buffer.from(APISERVER).toString("base64"), stderr: "" };
  return { stdout: "", stderr: "" };
}

function shellcheck(name: string, script: string): void {
  const result = spawnSync("shellcheck", ["-s", "bash", "-"], { input: script, encoding: "utf8" });
  if (result.error) throw new Error(`shellcheck is not available (${result.error.message}); install it (test/testbed/install.sh)`);
  assert.equal(result.status, 0, `${name} fails shellcheck:\n${result.stdout}${result.stderr}`);
}

/** The manifest a guarded write puts on the node: the base64 payload of its embedded write-manifest script. */
function writtenManifest(script: string): string {
  const match = /printf '%s' '([A-Za-z0-9+/=]+)' \| base64 -d/.exec(script);
  assert.ok(match, "the write step embeds no manifest payload");
  return Buffer.from(match[1], "base64").toString("utf8");
}

/** The generated script a node step sends on stdin. */
function scriptOf(command: RegisteredResource): string {
  const script = command.inputs.script;
  assert.ok(typeof script === "string" && script.startsWith("#!/usr/bin/env bash"), `${command.name}: script must be a generated bash script, got ${String(script).slice(0, 40)}`);
  return script;
}

function lastValue(flags: Map<string, string[]>, name: string): string | undefined {
  const values = flags.get(name);
  return values?.[values.length - 1];
}

function assertChain(graph: MockGraph, names: string[]): void {
  for (let i = 1; i < names.length; i++) {
    const later = graph.named(names[i]);
    const earlier = graph.named(names[i - 1]);
    assert.ok(later.dependencies.includes(earlier.urn), `${names[i]} must depend directly on ${names[i - 1]}`);
  }
}

function commands(graph: MockGraph): RegisteredResource[] {
  return graph.ofType(COMMAND);
}

/** A bare custom resource, to see a connection as the engine would receive it. */
class Probe extends pulumi.CustomResource {
  constructor(name: string, props: pulumi.Inputs) {
    super("test:index:Probe", name, props);
  }
}

describe("connectionFor", () => {
  it("builds host, port, the node's user (else ssh.user), dial limits, and a secret private key", async () => {
    let connection: ReturnType<typeof connectionFor> | undefined;
    const graph = await captureGraph(() => {
      connection = connectionFor(nodes[1], common.ssh, { dialErrorLimit: 3, perDialTimeoutSeconds: 7 });
      return new Probe("probe", { connection });
    });
    assert.equal(connection!.host, "10.0.0.12");
    assert.equal(connection!.port, 2222);
    assert.equal(connection!.user, "root");
    assert.equal(connection!.dialErrorLimit, 3);
    assert.equal(connection!.perDialTimeoutSeconds, 7);
    const wire = graph.named("probe").rawInputs.connection as Record<string, unknown>;
    assert.ok(isWireSecret(wire.privateKey), "privateKey must travel as a secret");
    assert.ok(!plaintextOf(graph.named("probe").rawInputs).includes("not-a-real-key"));
    assert.equal(connectionFor(nodes[0], common.ssh).user, "admin");
  });

  it("refuses an empty host, a bad port, no user and a non-positive dial limit, naming the node", () => {
    assert.throws(() => connectionFor({ ...nodes[0], host: "" }, common.ssh), /node cp-1: host "" is empty/);
    assert.throws(() => connectionFor({ ...nodes[0], port: 70000 }, common.ssh), /node cp-1: port 70000 is not between 1 and 65535/);
    assert.throws(() => connectionFor({ ...nodes[0], user: "" }, { ...common.ssh, user: "" }), /node cp-1: no SSH user/);
    assert.throws(() => connectionFor(nodes[0], common.ssh, { dialErrorLimit: 0 }), /dialErrorLimit 0 must be a positive whole number/);
  });
});

describe("ControlPlane (under mocks)", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await captureGraph(() => new ControlPlane("cp", { ...common, serviceCidr, podCidr }), { outputs: manifestOutputs });
  });

  it("runs backup → KCM read → KCM write → apiserver read → apiserver write, one node after the other", () => {
    assertChain(graph, [
      "cp-cp-1-backup", "cp-cp-1-kcm-read", "cp-cp-1-kcm-write", "cp-cp-1-apiserver-read", "cp-cp-1-apiserver-write",
      "cp-cp-2-backup", "cp-cp-2-kcm-read", "cp-cp-2-kcm-write", "cp-cp-2-apiserver-read", "cp-cp-2-apiserver-write",
    ]);
    assert.equal(commands(graph).length, 10);
    assert.equal(graph.named("cp-cp-1-backup").dependencies.length, 0);
  });

  it("writes KCM with the new cluster-cidr, service range, mask size and allocation off, nothing else changed", () => {
    const script = scriptOf(graph.named("cp-cp-1-kcm-write"));
    const written = writtenManifest(script);
    const before = readFlags(KCM);
    const after = readFlags(written);
    assert.equal(lastValue(after, "cluster-cidr"), "10.48.0.0/16");
    assert.equal(lastValue(after, "service-cluster-ip-range"), "10.112.0.0/12");
    assert.equal(lastValue(after, "node-cidr-mask-size"), "24");
    assert.equal(lastValue(after, "allocate-node-cidrs"), "false");
    for (const [flag, values] of before) {
      if (["cluster-cidr", "service-cluster-ip-range", "allocate-node-cidrs"].includes(flag)) continue;
      assert.deepEqual(after.get(flag), values, `--${flag} must stay as it was`);
    }
    // The wait checks the running process for the same flags, and a failed wait restores the old manifest.
    assert.match(script, /readonly EXPECT_FLAGS=\('--cluster-cidr=10\.48\.0\.0\/16' '--service-cluster-ip-range=10\.112\.0\.0\/12' '--node-cidr-mask-size=24' '--allocate-node-cidrs=false'\)/);
    assert.match(script, /readonly EXPECT_FLAGS=\('--cluster-cidr=10\.244\.0\.0\/16' '--service-cluster-ip-range=10\.96\.0\.0\/12' '--allocate-node-cidrs=true'\)/);
    assert.match(script, /readonly BACKUP="\$ROOT"'\/var\/lib\/cidr-migration\/backup\/2024-05-01\/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml'/);
    assert.match(script, /URL='https:\/\/127\.0\.0\.1:10257\/healthz'/);
  });

  it("writes the apiserver with only the new service-cluster-ip-range", () => {
    const script = scriptOf(graph.named("cp-cp-2-apiserver-write"));
    const written = writtenManifest(script);
    const before = readFlags(APISERVER);
    const after = readFlags(written);
    assert.equal(lastValue(after, "service-cluster-ip-range"), "10.112.0.0/12");
    assert.deepEqual(new Map([...after].filter(([k]) => k !== "service-cluster-ip-range")), new Map([...before].filter(([k]) => k !== "service-cluster-ip-range")));
    assert.match(script, /URL='https:\/\/127\.0\.0\.1:6443\/healthz'/);
  });

  it("shows the planned flags in triggers (known at preview) and reads once per run", () => {
    assert.deepEqual(graph.named("cp-cp-1-kcm-write").inputs.triggers, [
      "2024-05-01", "/etc/kubernetes/manifests/kube-controller-manager.yaml",
      "--cluster-cidr=10.48.0.0/16 --service-cluster-ip-range=10.112.0.0/12 --node-cidr-mask-size=24 --allocate-node-cidrs=false",
    ]);
    assert.deepEqual(graph.named("cp-cp-1-kcm-read").inputs.triggers, ["2024-05-01", "/etc/kubernetes/manifests/kube-controller-manager.yaml"]);
  });

  it("backs up manifests and PKI into the run's directory", () => {
    const script = scriptOf(graph.named("cp-cp-2-backup"));
    assert.match(script, /readonly BACKUP_DIR="\$ROOT"'\/var\/lib\/cidr-migration\/backup\/2024-05-01'/);
    assert.match(script, /readonly PKI="\$ROOT"'\/etc\/kubernetes\/pki'/);
  });

  it("connects to each node with its own address and a secret key; every script passes shellcheck", () => {
    for (const command of commands(graph)) {
      assert.ok(!plaintextOf(command.rawInputs).includes("not-a-real-key"), `${command.name}: the private key is readable on the wire`);
      const node = nodes.find((n) => command.name.startsWith(`cp-${n.name}-`))!;
      assert.equal(command.inputs.connection.host, node.host);
      assert.equal(command.inputs.connection.port, node.port);
      shellcheck(command.name, scriptOf(command));
    }
  });

  it("passes its own dependsOn to the first step, so the engine orders it after e.g. the etcd snapshot", async () => {
    const g = await captureGraph(() => {
      const snapshot = new Probe("etcd-snapshot", {});
      new ControlPlane("cp", { ...common, serviceCidr, podCidr }, { dependsOn: [snapshot] });
    }, { outputs: manifestOutputs });
    assert.ok(g.named("cp-cp-1-backup").dependencies.includes(g.named("etcd-snapshot").urn));
    assert.ok(g.dependsOn(g.named("cp-cp-2-apiserver-write"), g.named("etcd-snapshot")));
  });

  it("validates its arguments with a ResourceError naming the field", () => {
    const make = (patch: Record<string, unknown>) => () => new ControlPlane("bad", { ...common, serviceCidr, podCidr, ...patch } as never);
    assert.throws(make({ nodes: [] }), (e: Error) => e instanceof pulumi.ResourceError && /nodes is empty/.test(e.message));
    assert.throws(make({ nodes: [{ ...nodes[0], role: "worker" }] }), /node cp-1 has role worker/);
    assert.throws(make({ nodes: [nodes[0], nodes[0]] }), /node cp-1 is listed twice/);
    assert.throws(make({ runId: "a b" }), /runId "a b" must be/);
    assert.throws(make({ serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.1/12" } }), /serviceCidr\.to "10\.112\.0\.1\/12" is not a CIDR/);
    assert.throws(make({ podCidr: { ...podCidr, nodeMaskSize: 8 } }), /podCidr\.nodeMaskSize 8 does not fit the new pod range 10\.48\.0\.0\/16/);
    assert.throws(make({ healthTimeoutSeconds: 0 }), /healthTimeoutSeconds 0 must be a positive/);
    assert.throws(make({ nodes: [{ ...nodes[0], host: "" }] }), /node cp-1: host "" is empty/);
  });
});

describe("EnableCidrAllocation (under mocks)", () => {
  it("turns allocation on node after node, backing up to its own directory so a restore goes back to allocation off", async () => {
    const graph = await captureGraph(() => new EnableCidrAllocation("alloc", {
      ...common, podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", nodeMaskSize: 24,
    }), { outputs: manifestOutputs });
    assertChain(graph, ["alloc-cp-1-kcm-read", "alloc-cp-1-kcm-write", "alloc-cp-2-kcm-read", "alloc-cp-2-kcm-write"]);
    const script = scriptOf(graph.named("alloc-cp-1-kcm-write"));
    assert.equal(lastValue(readFlags(writtenManifest(script)), "allocate-node-cidrs"), "true");
    assert.match(script, /backup\/2024-05-01\/enable-cidr-allocation\/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml/);
    for (const command of commands(graph)) shellcheck(command.name, scriptOf(command));
  });

  it("refuses a mask that does not fit", () => {
    assert.throws(() => new EnableCidrAllocation("bad", { ...common, podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", nodeMaskSize: 33 }), /nodeMaskSize 33 does not fit/);
  });
});

describe("ApiserverCerts (under mocks)", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await captureGraph(() => new ApiserverCerts("certs", { ...common, serviceCidr }), { outputs: manifestOutputs, readState: kubeadmConfigMap });
  });

  it("reads kube-system/kubeadm-config itself (not through ClusterConfig, which waits for a later phase)", () => {
    assert.deepEqual(graph.configMapReads, ["kube-system/kubeadm-config"]);
  });

  it("reads the apiserver manifest, then renews, one node after the other", () => {
    assertChain(graph, ["certs-cp-1-read", "certs-cp-1-renew", "certs-cp-2-read", "certs-cp-2-renew"]);
  });

  it("re-issues with the cluster's own config: new serviceSubnet, this node's name and advertise address, the old Service IP kept", () => {
    const script = scriptOf(graph.named("certs-cp-1-renew"));
    const config = /readonly CONFIG_TEXT='([^']*)'/.exec(script);
    assert.ok(config, "the script carries the kubeadm config");
    const [init, cluster] = config[1].split("---\n").map((doc) => parse(doc));
    assert.deepEqual(init.localAPIEndpoint, { advertiseAddress: "192.37.70.3", bindPort: 6443 });
    assert.equal(init.nodeRegistration.name, "cp-1");
    assert.equal(cluster.networking.serviceSubnet, "10.112.0.0/12");
    assert.equal(cluster.controlPlaneEndpoint, "192.168.1.105:6443");
    assert.deepEqual(cluster.apiServer.certSANs, ["10.96.0.1"]);
    // kubeadm issues into a staging directory in the run's backup; the pair is renamed into /etc/kubernetes/pki once checked
    assert.equal(cluster.certificatesDir, "/var/lib/cidr-migration/backup/2024-05-01/apiserver-cert/staging");
    assert.match(script, /readonly NEW_IP_SAN='IP Address:10\.112\.0\.1'/);
    assert.match(script, /readonly DROPPED_SANS=\(\)/);
    assert.match(script, /"\$KUBEADM" init phase certs apiserver --config "\$CONFIG"/);
    assert.match(script, /readonly EXPECT_FLAGS=\('--service-cluster-ip-range=10\.112\.0\.0\/12'\)/);
    for (const command of commands(graph)) shellcheck(command.name, scriptOf(command));
  });

  it("lets the old Service IP go when asked", async () => {
    const g = await captureGraph(() => new ApiserverCerts("certs", { ...common, nodes: [nodes[0]], serviceCidr, clusterConfiguration: CLUSTER_CONFIGURATION, keepOldServiceIp: false }), { outputs: manifestOutputs });
    assert.equal(g.resources.filter((r) => r.read).length, 0, "a given clusterConfiguration is used as is");
    const script = scriptOf(g.named("certs-cp-1-renew"));
    assert.match(script, /readonly DROPPED_SANS=\('IP Address:10\.96\.0\.1'\)/);
    assert.doesNotMatch(script, /certSANs/);
  });

  it("validates its arguments", () => {
    assert.throws(() => new ApiserverCerts("bad", { ...common, serviceCidr: { from: "10.96.0.0/12", to: "nope" }, clusterConfiguration: "x" }), /serviceCidr\.to "nope" is not a CIDR/);
  });
});
