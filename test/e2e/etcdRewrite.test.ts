/**
 * The EtcdRewrite resource under the real Pulumi engine, on a test-bed cluster whose etcd uses TLS with client
 * certificates (as kubeadm's does): the preview lists every move, `up` refuses while the apiserver answers, runs
 * once it is stopped, the apiserver starts on the new range with every object kept, a second `up` changes nothing,
 * and no etcd key material is in the state or the output.
 */
import { strict as assert } from "assert";
import { Etcd3 } from "etcd3";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { EtcdRewrite, movesForPreview } from "../../dynamic-providers/etcdRewrite";
import { rewriteTargetsFromPlan } from "../../lib/etcdRewrite/rewriteTargets";
import { RewriteTargets } from "../../lib/etcdRewrite/rewritePlan";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { EngineStack } from "./engineStack";
import { APISERVER_FEATURE_GATES, serviceMoveConfig } from "../support/serviceRangePhase";
import { seedServiceShapes } from "../support/serviceShapes";
import { startTestCluster, TestCluster } from "../testbed/controlPlane";
import { registerNode, waitForPodCIDR } from "../testbed/kubelet";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const PROJECT = path.join(__dirname, "rewrite-project");
const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const OLD_PODS = "10.244.0.0/16";
const NEW_PODS = "10.48.0.0/16";
const NODES = ["node-1", "node-2"];

describe(`the real Pulumi engine runs the etcd rewrite (Kubernetes ${resolveTestBedVersion().kube}, etcd over TLS)`, function () {
  this.timeout(600_000);
  let cluster: TestCluster;
  let rest: KubeRest;
  let stack: EngineStack;
  let targets: RewriteTargets;
  let servicesBefore: Map<string, KubeObject>;
  let pem: { caCert: string; cert: string; key: string };
  const journalDirectory = fs.mkdtempSync(path.join(os.tmpdir(), "rewrite-e2e-"));

  const program = () => async () => {
    const moves = movesForPreview(targets);
    const rewrite = new EtcdRewrite("etcd-rewrite", {
      endpoints: [cluster.etcd.endpoint],
      caCert: pulumi.secret(pem.caCert), cert: pulumi.secret(pem.cert), key: pulumi.secret(pem.key),
      apiservers: [cluster.server],
      serviceCidr: targets.serviceCidr, podCidr: targets.podCidr,
      services: moves.services, nodes: moves.nodes,
      journalDirectory, trigger: "e2e",
    });
    return { written: rewrite.written, alreadyMoved: rewrite.alreadyMoved };
  };
  const all = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`;
  const services = async () => new Map((await rest.list("/api/v1/services")).map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, s]));

  before(async () => {
    cluster = await startTestCluster({ serviceCidr: OLD_RANGE, podCidr: OLD_PODS, etcdTls: true });
    const tls = cluster.etcd.tls!;
    pem = { caCert: fs.readFileSync(tls.caCertPath, "utf8"), cert: fs.readFileSync(tls.certPath, "utf8"), key: fs.readFileSync(tls.keyPath, "utf8") };
    rest = await kubeRest(cluster.kubeConfig());
    for (const [i, name] of NODES.entries()) await registerNode(cluster.kubeConfig(), { name, internalIP: `192.0.2.${31 + i}` });
    for (const name of NODES) await waitForPodCIDR(cluster.kubeConfig(), name, 30_000);
    await seedServiceShapes(rest, "shop", { index: 0, oldPrefix: "10.96" });
    await rest.create(paths.services("kube-system"), { metadata: { name: "kube-dns" }, spec: { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }] } });
    const config = serviceMoveConfig(OLD_RANGE, NEW_RANGE);
    config.nodes = NODES.map((name, i) => ({ name, host: `192.0.2.${31 + i}`, port: 22, user: "root", role: "worker" }));
    targets = rewriteTargetsFromPlan(buildPlan(config, await discoverInventory(cluster.kubeConfig())));
    servicesBefore = await services();
    stack = await EngineStack.init(`rewrite-${process.pid}`, "config: {}\n", PROJECT);
  });

  after(async () => {
    await stack?.remove();
    rest?.close();
    await cluster?.stop();
  });

  it("previews every Service's and Node's old → new, reading nothing from etcd", async () => {
    const preview = await stack.runProgram(program(), ["preview", "--diff"]);
    assert.equal(preview.exitCode, 0, all(preview));
    const web = targets.services.get("shop/web")![0];
    assert.match(preview.stdout, new RegExp(`shop/web\\s*: "${web.from.replace(/\./g, "\\.")} → ${web.to.replace(/\./g, "\\.")}"`));
    const node = targets.nodes.get("node-1")![0];
    assert.ok(preview.stdout.includes(`${node.from} → ${node.to}`));
    assert.ok(!all(preview).includes(pem.key.split("\n")[1]), "the etcd client key is not in the preview");
  });

  it("refuses while the apiserver answers, and writes nothing", async () => {
    const up = await stack.runProgram(program(), ["up", "--yes", "--skip-preview"]);
    assert.notEqual(up.exitCode, 0);
    assert.match(all(up), new RegExp(`kube-apiserver still answers at ${cluster.server.replace(/\./g, "\\.")}.*Nothing was written`));
    assert.deepEqual([...(await services()).values()].map((s) => s.metadata!.resourceVersion), [...servicesBefore.values()].map((s) => s.metadata!.resourceVersion));
  });

  it("rewrites once the apiserver is stopped; the apiserver and KCM start on the new ranges with every Service kept", async () => {
    await cluster.stopControlPlane();
    const up = await stack.runProgram(program(), ["up", "--yes", "--skip-preview"]);
    assert.equal(up.exitCode, 0, all(up));
    const outputs = JSON.parse(await stack.pulumiOk(["stack", "output", "--json"]));
    assert.ok(outputs.written >= targets.services.size + targets.nodes.size, JSON.stringify(outputs));
    await cluster.startControlPlane({ serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES, controllerManager: { clusterCidr: NEW_PODS, serviceClusterIpRange: NEW_RANGE } });
    const after = await services();
    for (const [key, [change]] of targets.services) {
      const now = after.get(key)!;
      assert.equal(now.metadata!.uid, servicesBefore.get(key)!.metadata!.uid, `${key} keeps its uid`);
      assert.equal((now.spec as { clusterIP: string }).clusterIP, change.to, `${key} at its planned IP`);
    }
    assert.equal(after.size, servicesBefore.size);
    const state = await stack.exportState();
    for (const secret of [pem.key, pem.cert]) assert.ok(!state.text.includes(secret.split("\n")[1]), "no etcd TLS material in plaintext in the state");
    const journal = fs.readdirSync(journalDirectory);
    assert.deepEqual(journal, ["etcd-rewrite-e2e.jsonl"]);
  });

  it("a second `up` changes nothing", async () => {
    const again = await stack.runProgram(program(), ["up", "--yes", "--skip-preview"]);
    assert.equal(again.exitCode, 0, all(again));
    assert.doesNotMatch(again.stdout, /\+\s+1 to create|~\s+1 to update|\+-\s+1 to replace/);
    const etcd = new Etcd3({ hosts: cluster.etcd.endpoint, credentials: { rootCertificate: Buffer.from(pem.caCert), certChain: Buffer.from(pem.cert), privateKey: Buffer.from(pem.key) } });
    try {
      const web = (await etcd.get("/registry/services/specs/shop/web").buffer())!;
      assert.ok(web.toString("latin1").includes(targets.services.get("shop/web")![0].to));
    } finally {
      etcd.close();
    }
  });
});
