/**
 * NodeRollout under the SDK's mock monitor: the graph's shape, order and inputs only (what the steps do is proven
 * on the test bed by test/integration/nodeRolloutApi.test.ts and over real SSH by nodeRolloutSsh.test.ts).
 * The plan comes from the real planner (lib/plan) on the small three-control-plane Calico fixture, widened to five
 * workers so that maxUnavailable 2 gives two worker waves.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { CONTROL_PLANE_JOIN_TOKEN_SCRIPT, NodeRollout, NodeRolloutArgs } from "../../../components/nodeRollout";
import { validateConfig } from "../../../lib/config/config";
import { Inventory } from "../../../lib/plan/inventory";
import { MigrationConfig } from "../../../lib/config/migrationConfig";
import { buildPlan } from "../../../lib/plan/plan";
import { Plan } from "../../../lib/plan/planModel";
import { readStackFile } from "../../../lib/config/stackFile";
import { REMOTE_SCRIPT_TYPE } from "../../../lib/gate/policyRules";
import { MockGraph, RegisteredResource, captureGraph, isWireSecret, plaintextOf } from "../../support/pulumiMocks";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures");
const KUBELET_CONFIG = fs.readFileSync(path.join(FIXTURES, "testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml"), "utf8");
const COMMAND = REMOTE_SCRIPT_TYPE;
const DYNAMIC = (type: string) => `pulumi-nodejs:dynamic/cidr-migration:${type}`;
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n";
const KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\nusers: [{name: admin, user: {client-key-data: SECRETKEYDATA}}]\n";
const TOKEN = "abcdef.0123456789abcdef";
const KCM = fs.readFileSync(path.join(FIXTURES, "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const KUBEADM_FLAGS = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=192.168.10.22"\n';
const JOIN = `W0501 10:00:00.000000 1 version.go:104] could not fetch a Kubernetes version from the internet\nkubeadm join 192.168.10.11:6443 --token ${TOKEN} --discovery-token-ca-cert-hash sha256:${"ab".repeat(32)}`;

const CERTIFICATE_KEY = "0f".repeat(32);
const CONTROL_PLANE_JOIN = `${JOIN} --control-plane --certificate-key ${CERTIFICATE_KEY}`;

function inventory(): Inventory {
  const inv = JSON.parse(fs.readFileSync(path.join(FIXTURES, "plan", "inventory-small.json"), "utf8")) as Inventory;
  for (const [name, cidr] of [["worker-4", "10.244.6.0/24"], ["worker-5", "10.244.7.0/24"]]) {
    inv.nodes.push({ name, podCIDR: cidr, podCIDRs: [cidr], internalIPs: [`192.168.10.${20 + Number(name.slice(-1))}`], controlPlane: false, labels: {}, unschedulable: false });
  }
  return inv;
}

function configAndPlan(change: (values: Record<string, any>) => void = () => {}): { config: MigrationConfig; plan: Plan } {
  const source = readStackFile(path.join(FIXTURES, "plan", "stack-small.yaml"));
  const values = source.values as Record<string, any>;
  values.nodes = [
    ...values.nodes,
    { name: "worker-4", host: "192.168.10.24", role: "worker" },
    { name: "worker-5", host: "192.168.10.25", port: 2222, role: "worker" },
  ];
  change(values);
  const inv = inventory();
  const config = validateConfig(source, { inventory: inv });
  return { config, plan: buildPlan(config, inv) };
}

function argsFor(config: MigrationConfig, plan: Plan, extra: Partial<NodeRolloutArgs> = {}): NodeRolloutArgs {
  return {
    plan,
    nodes: config.nodes,
    ssh: { user: config.ssh.user, privateKey: KEY },
    kubeconfig: KUBECONFIG,
    rollout: config.nodeRollout,
    runId: "2024-05-01",
    ...extra,
  };
}

/** The remote read steps answer like the node would: config.yaml as one line of base64, the join command. */
function nodeOutputs(resource: { type: string; name: string }): Record<string, unknown> {
  if (resource.type !== COMMAND) return {};
  if (resource.name.endsWith("-kubelet-config-read")) return { stdout: Buffer.from(KUBELET_CONFIG).toString("base64"), stderr: "" };
  if (resource.name.endsWith("-join-token")) return { stdout: resource.name.startsWith("nodes-cp-") ? CONTROL_PLANE_JOIN : JOIN, stderr: "" };
  if (resource.name.endsWith("-kubelet-flags-read")) return { stdout: Buffer.from(KUBEADM_FLAGS).toString("base64"), stderr: "" };
  if (resource.name.endsWith("-kcm-allocation-off-read")) return { stdout: Buffer.from(KCM).toString("base64"), stderr: "" };
  return { stdout: "", stderr: "" };
}

async function rollout(args: NodeRolloutArgs): Promise<{ graph: MockGraph; component: NodeRollout }> {
  let component: NodeRollout | undefined;
  const graph = await captureGraph(() => { component = new NodeRollout("nodes", args); }, { outputs: nodeOutputs });
  return { graph, component: component! };
}

function shellcheck(name: string, script: string): void {
  const result = spawnSync("shellcheck", ["-s", "bash", "-"], { input: script, encoding: "utf8" });
  if (result.error) throw new Error(`shellcheck is not available (${result.error.message}); install it (test/testbed/install.sh)`);
  assert.equal(result.status, 0, `${name} fails shellcheck:\n${result.stdout}${result.stderr}`);
}

const step = (graph: MockGraph, node: string, name: string): RegisteredResource => graph.named(`nodes-${node}-${name}`);
const directlyAfter = (later: RegisteredResource, earlier: RegisteredResource) => later.dependencies.includes(earlier.urn);

describe("NodeRollout graph (mocks: order and inputs)", function () {
  this.timeout(60_000);

  it("runs the canary first and alone, control-plane nodes one at a time, then workers in waves of maxUnavailable", async () => {
    const { config, plan } = configAndPlan();
    const { graph, component } = await rollout(argsFor(config, plan));
    assert.deepEqual(component.waves.map((w) => w.nodes.map((n) => n.name)), [["worker-1"], ["cp-1"], ["cp-2"], ["cp-3"], ["worker-2", "worker-3"], ["worker-4", "worker-5"]]);
    assert.equal(component.waves[0].canary, true);

    const drain = (node: string) => step(graph, node, "drain");
    const rejoin = (node: string) => step(graph, node, "rejoin");
    // each wave starts when every node of the previous wave is verified, and not before
    const waves = component.waves.map((w) => w.nodes.map((n) => n.name));
    for (let i = 1; i < waves.length; i++) {
      for (const node of waves[i]) {
        assert.deepEqual(drain(node).dependencies.sort(), waves[i - 1].map((n) => rejoin(n).urn).sort(), `${node} waits for wave ${i - 1}`);
      }
    }
    // the canary's move precedes everything else; nothing runs beside it
    for (const node of ["cp-1", "cp-2", "cp-3", "worker-2", "worker-3", "worker-4", "worker-5"]) {
      assert.ok(graph.dependsOn(drain(node), rejoin("worker-1")), `${node} after the canary`);
      assert.ok(!graph.dependsOn(rejoin("worker-1"), drain(node)));
    }
    // control-plane nodes strictly one after another
    assert.ok(graph.dependsOn(drain("cp-2"), rejoin("cp-1")) && graph.dependsOn(drain("cp-3"), rejoin("cp-2")));
    // the nodes of one wave do not wait for each other
    assert.ok(!graph.dependsOn(drain("worker-3"), drain("worker-2")) && !graph.dependsOn(drain("worker-2"), drain("worker-3")));
    assert.ok(!graph.dependsOn(rejoin("worker-5"), drain("worker-4")));
    assert.deepEqual(component.done.length, 2);
  });

  it("chains each node's steps: drain, CNI cleanup, kubelet stop, delete, Calico IPAM, clusterDNS, kubelet start, rejoin", async () => {
    const { config, plan } = configAndPlan();
    const { graph } = await rollout(argsFor(config, plan));
    const order = ["drain", "cni-cleanup", "kubelet-stop", "deregister", "calico-ipam", "kubelet-config-read", "kubelet-config-dns", "kubelet-start", "rejoin"];
    for (const node of ["worker-1", "cp-2", "worker-5"]) {
      const s = (name: string) => step(graph, node, name);
      assert.ok(directlyAfter(s("cni-cleanup"), s("drain")));
      assert.ok(directlyAfter(s("kubelet-stop"), s("cni-cleanup")));
      assert.ok(directlyAfter(s("deregister"), s("kubelet-stop")));
      assert.ok(directlyAfter(s("calico-ipam"), s("deregister")));
      assert.ok(directlyAfter(s("kubelet-config-read"), s("kubelet-stop")));
      assert.ok(directlyAfter(s("kubelet-config-dns"), s("kubelet-config-read")));
      assert.ok(directlyAfter(s("kubelet-start"), s("calico-ipam")) && directlyAfter(s("kubelet-start"), s("kubelet-config-dns")));
      assert.ok(directlyAfter(s("rejoin"), s("kubelet-start")));
      for (let i = 1; i < order.length; i++) assert.ok(graph.dependsOn(s("rejoin"), s(order[i - 1])), `${node}: rejoin after ${order[i - 1]}`);
    }
    assert.equal(graph.ofType(DYNAMIC("NodeDrain")).length, 8);
    assert.equal(graph.ofType(DYNAMIC("CalicoIpamRelease")).length, 8);
  });

  it("gives every API step the planned subnet and the run id; the kubeconfig and the SSH key only as secrets", async () => {
    const { config, plan } = configAndPlan();
    const { graph } = await rollout(argsFor(config, plan));
    for (const move of plan.nodes) {
      const drain = step(graph, move.name, "drain");
      assert.equal(drain.inputs.step, "drain");
      assert.equal(drain.inputs.plannedPodCIDR, move.newPodCIDR);
      assert.equal(drain.inputs.oldPodCIDR, move.oldPodCIDR);
      assert.equal(drain.inputs.runId, "2024-05-01");
      assert.equal(drain.inputs.drainTimeoutSeconds, 300);
      assert.deepEqual(drain.inputs.dnsService, { namespace: plan.dns.namespace, name: plan.dns.name }, "its evicted DNS pods leave the DNS Service while they still answer");
      assert.equal(step(graph, move.name, "rejoin").inputs.plannedPodCIDR, move.newPodCIDR);
      assert.deepEqual(step(graph, move.name, "calico-ipam").inputs.oldPoolCidrs, ["10.244.0.0/16"]);
    }
    for (const resource of graph.resources.filter((r) => r.type.startsWith("pulumi-nodejs:dynamic/") && r.type !== COMMAND)) {
      assert.ok(isWireSecret(resource.rawInputs.kubeconfig), `${resource.name}: kubeconfig is a secret`);
      assert.ok(!plaintextOf(resource.rawInputs).includes("SECRETKEYDATA"));
    }
    for (const command of graph.ofType(COMMAND)) {
      const connection = command.rawInputs.connection as Record<string, unknown>;
      assert.ok(isWireSecret(connection.privateKey), `${command.name}: SSH key is a secret`);
      assert.ok(!plaintextOf(command.rawInputs).includes("not-a-real-key"));
    }
    const worker5 = step(graph, "worker-5", "cni-cleanup").inputs.connection;
    assert.deepEqual([worker5.host, worker5.port, worker5.user], ["192.168.10.25", 2222, "ubuntu"]);
  });

  it("runs every node script as a generated bash script; each one passes shellcheck and writes its backups under the run's directory", async () => {
    const { config, plan } = configAndPlan();
    const { graph } = await rollout(argsFor(config, plan));
    const commands = graph.ofType(COMMAND);
    assert.equal(commands.length, 8 * 5);
    for (const command of commands) {
      assert.match(command.inputs.script, /^#!\/usr\/bin\/env bash\n/, command.name);
      shellcheck(command.name, command.inputs.script);
    }
    const cleanup = step(graph, "worker-2", "cni-cleanup").inputs.script as string;
    assert.match(cleanup, /readonly OLD_RANGES=\('10\.244\.0\.0\/16' '10\.244\.3\.0\/24'\)/);
    assert.match(cleanup, /'\/var\/lib\/cidr-migration\/backup\/2024-05-01\/etc\/cni\/net\.d'/);
    assert.match(step(graph, "worker-2", "kubelet-stop").inputs.script, /systemctl stop kubelet/);
    assert.match(step(graph, "worker-2", "kubelet-start").inputs.script, /systemctl start kubelet/);
  });

  it("moves clusterDNS in /var/lib/kubelet/config.yaml to the new DNS Service IP, editing exactly what the node returned", async () => {
    const { config, plan } = configAndPlan();
    assert.equal(plan.dns.newClusterIP, "10.112.0.10");
    const { graph } = await rollout(argsFor(config, plan));
    const write = step(graph, "worker-1", "kubelet-config-dns");
    assert.deepEqual(write.inputs.triggers, ["2024-05-01", "10.112.0.10"]);
    const payload = /printf '%s' '([A-Za-z0-9+/=]+)' \| base64 -d/.exec(write.inputs.script);
    assert.ok(payload, "the write embeds the new config.yaml");
    const written = Buffer.from(payload[1], "base64").toString("utf8");
    assert.equal(written, KUBELET_CONFIG.replace("clusterDNS:\n- 10.96.0.10\n", "clusterDNS:\n- 10.112.0.10\n"));
  });

  it("leaves out the DNS steps when DNS does not move and the Calico step for other CNIs", async () => {
    const { config, plan } = configAndPlan();
    const flannel: Plan = { ...plan, cni: "flannel", dns: { ...plan.dns, newClusterIP: plan.dns.oldClusterIP! } };
    const { graph } = await rollout(argsFor(config, flannel));
    assert.equal(graph.ofType(DYNAMIC("CalicoIpamRelease")).length, 0);
    assert.ok(!graph.resources.some((r) => r.name.includes("kubelet-config")));
    assert.ok(directlyAfter(step(graph, "worker-1", "kubelet-start"), step(graph, "worker-1", "deregister")));
    assert.match(step(graph, "worker-1", "cni-cleanup").inputs.script, /for link in 'cni0' 'flannel\.1'/);
  });

  it("kubeadm-rejoin: a fresh token per worker from a control-plane node, secret end to end; control-plane nodes re-register", async () => {
    const { config, plan } = configAndPlan((v) => { v.nodeRollout = { maxUnavailable: 2, strategy: "kubeadm-rejoin" }; });
    const { graph, component } = await rollout(argsFor(config, plan));
    assert.equal(component.steps["cp-1"].strategy, "reregister");
    assert.ok(component.steps["cp-1"].kubeletStop && !component.steps["cp-1"].kubeadmRejoin);
    for (const node of ["worker-1", "worker-4"]) {
      const token = step(graph, node, "join-token");
      assert.equal(token.inputs.connection.host, "192.168.10.11", "made on cp-1");
      assert.equal(token.inputs.script, "kubeadm token create --print-join-command --ttl 2h");
      assert.equal(token.inputs.secretOutput, true, "the token is stored only as a secret and never quoted in an error");
      assert.ok(directlyAfter(token, step(graph, node, "cni-cleanup")));
      assert.ok(directlyAfter(step(graph, node, "deregister"), token));
      const rejoin = step(graph, node, "kubeadm-rejoin");
      assert.ok(directlyAfter(rejoin, step(graph, node, "calico-ipam")));
      assert.ok(directlyAfter(step(graph, node, "rejoin"), rejoin));
      assert.ok(isWireSecret(rejoin.rawInputs.script), "the join script is a secret");
      assert.ok(!plaintextOf(rejoin.rawInputs).includes(TOKEN));
      assert.match(rejoin.inputs.script, new RegExp(`readonly TOKEN='${TOKEN}'`));
      assert.match(rejoin.inputs.script, /'--node-name' 'worker-\d'/);
      shellcheck(rejoin.name, rejoin.inputs.script);
      assert.ok(!graph.resources.some((r) => r.name === `nodes-${node}-kubelet-stop`));
    }
  });

  it("kubeadm-rejoin of a control-plane node etcd can spare: etcd checked first, the token and the certificates' key from another control-plane node, joined as a control-plane node, its KCM's allocation off; secret end to end", async () => {
    const { config, plan } = configAndPlan((v) => { v.nodeRollout = { maxUnavailable: 2, strategy: "kubeadm-rejoin" }; });
    const etcd = { endpoints: ["https://192.168.10.11:2379"], caCert: "CA", cert: "CERT", key: "ETCDKEY" };
    const { graph, component } = await rollout(argsFor(config, plan, {
      controlPlaneJoins: { "cp-1": { advertiseAddress: "192.168.10.11", etcdDataDir: "/var/lib/etcd" }, "cp-2": { advertiseAddress: "192.168.10.12", etcdDataDir: "/data/etcd" } },
      etcd,
    }));
    assert.equal(component.steps["cp-3"].strategy, "reregister", "a control-plane node not listed re-registers");
    for (const [node, tokenHost] of [["cp-1", "192.168.10.12"], ["cp-2", "192.168.10.11"]]) {
      assert.equal(component.steps[node].strategy, "kubeadm-rejoin");
      const check = step(graph, node, "etcd-check");
      assert.equal(check.type, DYNAMIC("EtcdRejoinCheck"));
      assert.deepEqual([check.inputs.member, check.inputs.nodeAddress, check.inputs.endpoints], [node, `192.168.10.1${node.slice(-1)}`, etcd.endpoints]);
      assert.ok(isWireSecret(check.rawInputs.key), "the etcd client key only as a secret");
      assert.ok(directlyAfter(step(graph, node, "drain"), check), "nothing changes on the node before etcd is checked");
      const token = step(graph, node, "join-token");
      assert.equal(token.inputs.connection.host, tokenHost, "made on another control-plane node");
      assert.equal(token.inputs.script, CONTROL_PLANE_JOIN_TOKEN_SCRIPT);
      assert.equal(token.inputs.secretOutput, true);
      const rejoin = step(graph, node, "kubeadm-rejoin");
      assert.equal(rejoin.type, DYNAMIC("ControlPlaneRejoin"), "its etcd member leaves and the node joins again in one step");
      assert.deepEqual([rejoin.inputs.nodeAddress, rejoin.inputs.endpoints, rejoin.inputs.connection.host], [`192.168.10.1${node.slice(-1)}`, etcd.endpoints, `192.168.10.1${node.slice(-1)}`]);
      assert.ok(isWireSecret(rejoin.rawInputs.script) && isWireSecret(rejoin.rawInputs.key));
      assert.match(rejoin.inputs.script, /kubeadm reset -f --skip-phases=remove-etcd-member/);
      assert.ok(!plaintextOf(rejoin.rawInputs).includes(CERTIFICATE_KEY) && !plaintextOf(rejoin.rawInputs).includes(TOKEN));
      assert.match(rejoin.inputs.script, new RegExp(`readonly CERTIFICATE_KEY='${CERTIFICATE_KEY}'`));
      assert.match(rejoin.inputs.script, new RegExp(`'--control-plane' '--apiserver-advertise-address' '192\\.168\\.10\\.1${node.slice(-1)}'`));
      assert.match(rejoin.inputs.script, new RegExp(`readonly ETCD_DATA_DIR=.*${node === "cp-2" ? "/data/etcd" : "/var/lib/etcd"}`));
      shellcheck(rejoin.name, rejoin.inputs.script);
      const kcmRead = step(graph, node, "kcm-allocation-off-read");
      const kcmWrite = step(graph, node, "kcm-allocation-off-write");
      assert.ok(directlyAfter(kcmRead, rejoin) && directlyAfter(kcmWrite, kcmRead));
      assert.deepEqual(kcmWrite.inputs.triggers.slice(-1), ["--allocate-node-cidrs=false"]);
      assert.ok(directlyAfter(step(graph, node, "rejoin"), kcmWrite), "the Node is rejoined once its KCM cannot allocate");
    }
    // without etcd to check, refused before any step
    await assert.rejects(captureGraph(() => new NodeRollout("nodes", argsFor(config, plan, { controlPlaneJoins: { "cp-2": { advertiseAddress: "192.168.10.12", etcdDataDir: "/var/lib/etcd" } } }))),
      /controlPlaneJoins needs etcd \(its endpoints\)/);
  });

  it("etcd-rewrite: no Node deleted; the rejoin waits for the kept Node; with Flannel, bridge routes on every node before, beside each rejoin, and removed after the last wave", async () => {
    const { config, plan } = configAndPlan((v) => { v.services = { strategy: "etcd-rewrite" }; v.nodeRollout = { maxUnavailable: 2 }; });
    assert.equal(config.nodeRollout.strategy, "etcd-rewrite");
    const calico = await rollout(argsFor(config, plan));
    assert.equal(calico.graph.ofType(DYNAMIC("NodeDeregister")).length, 0, "the Node is never deleted");
    assert.equal(step(calico.graph, "worker-1", "rejoin").inputs.nodeKept, true);
    assert.ok(directlyAfter(step(calico.graph, "worker-1", "calico-ipam"), step(calico.graph, "worker-1", "kubelet-stop")));
    assert.ok(!calico.graph.resources.some((r) => r.name.includes("bridge-routes")), "Calico routes by IPAM block, not by the Node's podCIDR");

    const flannel: Plan = { ...plan, cni: "flannel" };
    const { graph, component } = await rollout(argsFor(config, flannel));
    const nodes = config.nodes.map((n) => n.name);
    const before = nodes.map((n) => step(graph, n, "bridge-routes-before"));
    for (const b of before) assert.match(b.inputs.script, /node on its old subnet/);
    assert.deepEqual(step(graph, "worker-1", "drain").dependencies.sort(), before.map((b) => b.urn).sort(), "the canary drains once every node routes the new subnets");
    const routes = step(graph, "worker-1", "bridge-routes");
    assert.match(routes.inputs.script, /readonly ROLLED=1/);
    assert.ok(directlyAfter(routes, step(graph, "worker-1", "kubelet-start")));
    assert.ok(!graph.dependsOn(step(graph, "worker-1", "rejoin"), routes), "beside the rejoin, whose DaemonSet pod replacement restarts flanneld");
    assert.ok(directlyAfter(step(graph, "cp-1", "drain"), routes), "the next wave waits for the routes too");
    const removals = nodes.map((n) => step(graph, n, "bridge-routes-remove"));
    for (const r of removals) {
      assert.match(r.inputs.script, /ip -4 route flush proto "\$PROTO"/);
      assert.ok(graph.dependsOn(r, step(graph, "worker-5", "rejoin")) && graph.dependsOn(r, step(graph, "worker-4", "bridge-routes")));
    }
    assert.equal(component.done.length, removals.length, "the rollout is done when the routes are gone");
    for (const r of [...before, routes, ...removals]) shellcheck(r.name, r.inputs.script);
  });

  it("a worker whose address changes (nodeAddresses): the new address beside the old and --node-ip while it is deregistered, the rejoin waits for the new InternalIP, the old address goes last over the new one; even under kubeadm-rejoin", async () => {
    const { config, plan } = configAndPlan((v) => {
      v.nodeRollout = { maxUnavailable: 2, strategy: "kubeadm-rejoin" };
      v.nodeAddresses = [{ name: "worker-2", from: "192.168.10.22", to: "192.168.20.22" }];
      v.hostAddress = { persistence: "nmcli", prefix: 24 };
    });
    const { graph, component } = await rollout(argsFor(config, plan, { addressChanges: { changes: config.nodeAddresses, host: config.hostAddress! } }));
    const s = (name: string) => step(graph, "worker-2", name);
    assert.equal(component.steps["worker-2"].strategy, "reregister", "kubeadm reset would rewrite the kubelet's flags");
    assert.equal(component.steps["worker-3"].strategy, "kubeadm-rejoin", "the other workers keep their strategy");
    assert.ok(directlyAfter(s("address-add"), s("calico-ipam")));
    assert.ok(directlyAfter(s("kubelet-flags-read"), s("address-add")));
    assert.ok(directlyAfter(s("kubelet-node-ip"), s("kubelet-flags-read")));
    assert.ok(directlyAfter(s("kubelet-start"), s("kubelet-node-ip")));
    assert.ok(directlyAfter(s("address-remove-old"), s("rejoin")));
    assert.ok(directlyAfter(s("address-agents"), s("address-remove-old")), "the agents restart once only the new address is left");
    assert.deepEqual([s("address-agents").inputs.step, s("address-agents").inputs.internalIP, s("address-agents").inputs.oldInternalIP], ["address-agents", "192.168.20.22", "192.168.10.22"]);
    assert.equal(s("rejoin").inputs.internalIP, "192.168.20.22");
    assert.equal(s("address-add").inputs.connection.host, "192.168.10.22", "added over the old address");
    assert.equal(s("address-remove-old").inputs.connection.host, "192.168.20.22", "removed over the new one");
    assert.match(s("address-add").inputs.script, /readonly OLD_IP='192\.168\.10\.22' NEW_IP='192\.168\.20\.22' PREFIX=24\n/);
    assert.match(s("address-add").inputs.script, /nmcli connection modify/);
    assert.match(s("address-remove-old").inputs.script, /ip addr del "\$OLD_CIDR"/);
    // --node-ip edited in what the node returned, written back only if the file is still that
    const write = s("kubelet-node-ip").inputs.script as string;
    assert.ok(write.includes(Buffer.from(KUBEADM_FLAGS.replace("--node-ip=192.168.10.22", "--node-ip=192.168.20.22")).toString("base64")), "the edited flags file");
    for (const name of ["address-add", "kubelet-node-ip", "address-remove-old"]) shellcheck(name, s(name).inputs.script);
    // the next wave waits for the old address to be gone and the agents on the new one
    const next = component.waves.findIndex((w) => w.nodes.some((n) => n.name === "worker-2")) + 1;
    for (const n of component.waves[next].nodes) assert.ok(directlyAfter(step(graph, n.name, "drain"), s("address-agents")), `${n.name} after worker-2's agents are on its new address`);
    assert.ok(!graph.resources.some((r) => r.name === "nodes-worker-3-address-add"), "only the listed worker");
  });

  it("a worker reached at a management address: every address step runs over that address, which the change leaves alone", async () => {
    const { config, plan } = configAndPlan((v) => {
      v.nodes = v.nodes.map((n: { name: string }) => (n.name === "worker-2" ? { ...n, host: "10.250.0.22" } : n));
      v.nodeAddresses = [{ name: "worker-2", from: "192.168.10.22", to: "192.168.20.22" }];
      v.hostAddress = { persistence: "netplan", prefix: 24 };
    });
    const { graph } = await rollout(argsFor(config, plan, { addressChanges: { changes: config.nodeAddresses, host: config.hostAddress! } }));
    const s = (name: string) => step(graph, "worker-2", name);
    for (const name of ["address-add", "kubelet-node-ip", "address-remove-old"]) assert.equal(s(name).inputs.connection.host, "10.250.0.22", `${name} over nodes[].host`);
    assert.match(s("address-add").inputs.script, /readonly OLD_IP='192\.168\.10\.22' NEW_IP='192\.168\.20\.22' PREFIX=24\n/);
    assert.equal(s("rejoin").inputs.internalIP, "192.168.20.22");
  });

  it("reports the plan's estimate per node and in total beside the manual 5-8 minutes per node", async () => {
    const { config, plan } = configAndPlan();
    const { component } = await rollout(argsFor(config, plan));
    const e = component.estimate;
    assert.deepEqual(e.perNode.map((p) => [p.node, p.seconds]), plan.nodes.map((n) => [n.name, 240]));
    assert.equal(e.totalSeconds, 6 * 240, "six waves; the nodes of a wave move together");
    assert.deepEqual(e.manualMinutes, { min: 40, max: 64 });
    assert.match(e.summary, /^node rollout: 8 node\(s\) in 6 wave\(s\), estimated 24 min \(worker-1 4 min, cp-1 4 min, .*\); the manual runbook takes 40-64 min \(5-8 min per node, one after another\)$/);
  });

  it("refuses arguments it cannot roll, naming the node or field", async () => {
    const { config, plan } = configAndPlan();
    const cases: Array<[Partial<NodeRolloutArgs>, RegExp]> = [
      [{ nodes: config.nodes.filter((n) => n.name !== "worker-3") }, /^node worker-3 is planned to move but is not in cidr-migration:nodes; add it with its SSH host, or re-plan$/],
      [{ runId: "../x" }, /^runId "\.\.\/x" must be 1-128 letters, digits/],
      [{ rollout: { ...config.nodeRollout, drainTimeoutSeconds: 0 } }, /^rollout\.drainTimeoutSeconds 0 must be a positive whole number/],
      [{ rollout: { ...config.nodeRollout, strategy: "kubeadm-rejoin" }, tokenNode: "worker-1" }, /^tokenNode worker-1 is not a control-plane node in cidr-migration:nodes; name one that is$/],
      [{ plan: { ...plan, nodes: plan.nodes.map((n) => (n.name === "worker-2" ? { ...n, batch: 0 } : n)) } }, /^node rollout batch 0 holds worker-1, worker-2: the canary goes alone; re-run the planner$/],
      [{ plan: { ...plan, nodes: plan.nodes.map((n) => (n.name === "cp-2" ? { ...n, batch: 1 } : n)) } }, /^node rollout batch 1 holds cp-1, cp-2: control-plane nodes go one at a time \(etcd quorum\)/],
      [{ unmanagedPods: "force" as never }, /^unmanagedPods "force" must be "refuse" or "evict"$/],
    ];
    for (const [change, message] of cases) {
      await assert.rejects(captureGraph(() => new NodeRollout("nodes", argsFor(config, plan, change))), (err: Error) => {
        assert.ok(err instanceof pulumi.ResourceError, `a ResourceError, got ${err}`);
        assert.match(err.message, message);
        return true;
      });
    }
  });
});
