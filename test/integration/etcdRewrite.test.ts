// The etcd rewrite strategy on the real test bed (etcd + kube-apiserver + kube-controller-manager of the test-bed
// version): objects written through the apiserver on the old ranges, the apiserver and KCM stopped, the rewrite run
// against etcd, both started on the new flags, then every Service and Node compared field by field.
import { strict as assert } from "assert";
import { Etcd3 } from "etcd3";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { bridgeTargets, rewriteTargetsFromPlan } from "../../lib/etcdRewrite/rewriteTargets";
import { RewriteConflict, runRewrite } from "../../lib/etcdRewrite/rewriteRun";
import { RewriteTargets } from "../../lib/etcdRewrite/rewritePlan";
import { AddressChange } from "../../lib/etcdRewrite/addressChange";
import { storedRange } from "../../lib/etcdRewrite/rangeAllocationRecord";
import { readStoredValue } from "../../lib/etcdRewrite/storedValue";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";
import { Plan } from "../../lib/plan/planModel";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { BRIDGE_ANNOTATION, openOldIpBridges, removeOldIpBridges } from "../../lib/serviceMove/oldIpBridge";
import { parseServiceRefKey } from "../../lib/serviceMove/serviceRef";
import { APISERVER_FEATURE_GATES, serviceMoveConfig, servesServiceCidrs } from "../support/serviceRangePhase";
import { SeededShapes, seedServiceShapes } from "../support/serviceShapes";
import { childOrTests, RUN_ENV, runFaultChild } from "../support/faultChild";
import { runCli } from "../support/cli";
import { etcdSnapshotProvider } from "../../dynamic-providers/etcdSnapshot";
import { readRewriteScope } from "../../lib/etcdRewrite/rewriteRun";
import { EtcdEntry } from "../../lib/etcdRewrite/rewritePlan";
import { snapshotTool } from "../testbed/kubeBinaries";
import { startEtcd } from "../testbed/etcd";
import { useTestCluster } from "../testbed/fixture";
import { registerNode, waitForPodCIDR } from "../testbed/kubelet";

const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const OLD_PODS = "10.244.0.0/16";
const NEW_PODS = "10.48.0.0/16";
const NS = "rewrite";
const NODES = ["node-1", "node-2", "node-3"];
const KEEP_FINALIZER = "example.com/keep";
/** Events the apiserver's repair loops raise when the allocator's records disagree with the Services. */
const REPAIR_REASONS = new Set(["ClusterIPNotAllocated", "ClusterIPOutOfRange", "ClusterIPAlreadyAllocated", "ClusterIPNotValid", "IPAddressNotAllocated", "IPAddressWrongReference", "ClusterIPNotInServiceCIDR"]);

type Objects = Map<string, KubeObject>;

interface ChildRun { endpoint: string; journalPath: string; services: [string, AddressChange[]][]; nodes: [string, AddressChange[]][]; targets: RewriteTargets }

/** The rewrite in a child process, which the fault hook SIGKILLs at the armed point, as a dying machine would. */
async function runAsChild(): Promise<void> {
  const run = JSON.parse(process.env[RUN_ENV] ?? "{}") as ChildRun;
  const etcd = new Etcd3({ hosts: run.endpoint });
  const report = await runRewrite(etcd, { journalPath: run.journalPath, concurrency: 1, targets: { ...run.targets, services: new Map(run.services), nodes: new Map(run.nodes) } });
  etcd.close();
  process.stdout.write(JSON.stringify(report));
}

childOrTests(module, runAsChild, defineTests);

function keyed(items: KubeObject[]): Objects {
  return new Map(items.map((o) => [`${o.metadata!.namespace ?? ""}/${o.metadata!.name}`, o]));
}

function withoutVolatile(object: KubeObject, dropped: string[]): unknown {
  const copy = structuredClone(object) as Record<string, any>;
  delete copy.metadata.resourceVersion;
  delete copy.metadata.managedFields;
  delete copy.status?.conditions;
  for (const field of dropped) delete copy.spec[field];
  return copy;
}

function defineTests(): void {
  // the apiserver's default storage (protobuf), and JSON, which --storage-media-type=application/json gives
  for (const storageMediaType of [undefined, "application/json"] as const) defineCycle(storageMediaType);
}

function defineCycle(storageMediaType: "application/json" | undefined): void {
describe(`etcd rewrite strategy (real etcd, apiserver and KCM; stored as ${storageMediaType ?? "protobuf"})`, function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: OLD_PODS, storageMediaType });
  let rest: KubeRest;
  let etcd: Etcd3;
  let seed: SeededShapes;
  let plan: Plan;
  let targets: RewriteTargets;
  let servicesBefore: Objects;
  let nodesBefore: Objects;
  let journalPath: string;
  let ipAddressesServed: boolean;
  let snapshotPath: string;
  let scopeBefore: EtcdEntry[];
  let bridged: string[];
  /** When the control plane started on the rewritten data, and how long the apiserver's (appended) log was then. */
  let rewrittenStart: { at: Date; logLength: number };

  before(async () => {
    const c = cluster();
    rest = await kubeRest(c.kubeConfig());
    etcd = new Etcd3({ hosts: c.etcd.endpoint });
    journalPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rewrite-journal-")), "journal.jsonl");
    for (const [i, name] of NODES.entries()) await registerNode(c.kubeConfig(), { name, internalIP: `192.0.2.${21 + i}` });
    for (const name of NODES) await waitForPodCIDR(c.kubeConfig(), name, 30_000);
    await rest.mergePatch(`/api/v1/nodes/node-2`, { metadata: { finalizers: [KEEP_FINALIZER], labels: { pool: "b" } } });
    seed = await seedServiceShapes(rest, NS, { index: 0, oldPrefix: "10.96" });
    await rest.create(paths.services("kube-system"), { metadata: { name: "kube-dns", labels: { "k8s-app": "kube-dns" } }, spec: { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }] } });
    await rest.mergePatch(`${paths.services(NS)}/web`, { metadata: { finalizers: [KEEP_FINALIZER] } });
    ipAddressesServed = await servesServiceCidrs(c.kubeConfig());
    const config = serviceMoveConfig(OLD_RANGE, NEW_RANGE);
    config.nodes = NODES.map((name, i) => ({ name, host: `192.0.2.${21 + i}`, port: 22, user: "root", role: "worker" }));
    plan = buildPlan(config, await discoverInventory(c.kubeConfig()));
    targets = rewriteTargetsFromPlan(plan);
    // the graph's bridges, opened through the API before the stop (bridgeOldIps off: DNS and kubernetes only)
    bridged = await openOldIpBridges(rest, Object.entries(bridgeTargets(targets, ["kube-system/kube-dns", "default/kubernetes"])).map(([key, oldIp]) => ({ ...parseServiceRefKey(key)!, oldIp })));
    servicesBefore = keyed(await rest.list("/api/v1/services"));
    // the snapshot the graph takes first, and what the rewrite's keys held then
    const snapshot = await etcdSnapshotProvider.create!({ endpoints: [c.etcd.endpoint], directory: path.dirname(journalPath), trigger: "t", version: "1", keepOnDelete: true, etcdctl: snapshotTool() });
    snapshotPath = snapshot.outs!.path;
    scopeBefore = await readRewriteScope(etcd, "/registry", snapshot.outs!.revision);
    nodesBefore = keyed(await rest.list("/api/v1/nodes"));
  });

  after(async () => {
    // leave nothing that blocks the test bed's teardown
    await rest?.mergePatch(`${paths.services(NS)}/web`, { metadata: { finalizers: null } }).catch(() => undefined);
    etcd?.close();
    rest?.close();
  });

  it("plans every Service in the old range and every Node's podCIDR", () => {
    assert.equal(targets.services.get("default/kubernetes")?.[0].to, "10.100.0.1");
    for (const [name, ip] of Object.entries(seed.moving)) {
      assert.deepEqual(targets.services.get(`${NS}/${name}`), [{ from: ip, to: plan.services.find((s) => s.name === name && s.namespace === NS)!.newClusterIP }]);
    }
    assert.deepEqual([...targets.nodes.keys()].sort(), NODES);
  });

  it("reads its keys page by page at one revision: pages of 2 give what one page gives", async () => {
    const revision = (await etcd.get("/registry/services/specs/default/kubernetes").exec()).header.revision;
    const paged = await readRewriteScope(etcd, "/registry", revision, 2);
    assert.ok(paged.filter((e) => e.key.startsWith("/registry/services/specs/")).length > 10);
    assert.deepEqual(paged, await readRewriteScope(etcd, "/registry", revision));
  });

  it("stops at a conflicting etcd write, naming the key, and writes nothing of that object", async () => {
    const c = cluster();
    await c.stopControlPlane();
    const webKey = "/registry/services/specs/rewrite/web";
    const conflict = runRewrite(etcd, {
      targets, journalPath, concurrency: 1,
      // someone writes the object between the read and the write: the same bytes, a new mod_revision
      afterPlan: async () => { await etcd.put(webKey).value((await etcd.get(webKey).buffer())!); },
    });
    await assert.rejects(conflict, (err: unknown) => err instanceof RewriteConflict && err.message.includes(webKey));
    const stored = (await etcd.get(webKey).buffer())!;
    assert.equal(stored.subarray(0, 1).toString(), storageMediaType ? "{" : "k", `stored as ${storageMediaType ?? "protobuf"}`);
    const stillOld = stored.toString("latin1");
    assert.ok(stillOld.includes(seed.moving.web), "web keeps its old ClusterIP in etcd");
  });

  // one transaction at a time, so each kill leaves work behind: first after web's transaction, then before node-2's
  for (const fault of ["rewrite-after-txn:/registry/services/specs/rewrite/web", "rewrite-after-journal:/registry/minions/node-2"]) {
    it(`is cut by SIGKILL at ${fault}; what it wrote is whole`, async () => {
      const run: ChildRun = { endpoint: cluster().etcd.endpoint, journalPath, services: [...targets.services], nodes: [...targets.nodes], targets };
      const end = await runFaultChild(__filename, run, fault);
      assert.equal(end.signal, "SIGKILL", end.output);
      const key = fault.slice(fault.indexOf(":") + 1);
      const value = (await etcd.get(key).buffer())!.toString("latin1");
      if (fault.startsWith("rewrite-after-txn")) assert.ok(value.includes(targets.services.get(`${NS}/web`)![0].to), "the transaction before the kill is in etcd");
      else assert.ok(value.includes(targets.nodes.get("node-2")![0].from), "journaled but not yet sent: etcd still holds the old value");
    });
  }

  it("re-runs after the conflict, the kills and a truncated journal, then the apiserver and KCM start on the new ranges", async () => {
    const c = cluster();
    // a crash while journaling leaves a partial last line
    fs.appendFileSync(journalPath, '{"at":"2026-12-03T00:00:00Z","obj');
    const report = await runRewrite(etcd, { targets, journalPath });
    assert.ok(report.alreadyMoved > 0, `what the killed runs wrote is recognised as moved: ${JSON.stringify(report)}`);
    assert.equal(report.journal.truncatedBytes, Buffer.byteLength('{"at":"2026-12-03T00:00:00Z","obj'));
    assert.ok(report.journal.earlierLines > 0, "the first run journaled before it wrote");
    assert.ok(report.written > 0);
    // (event times have whole seconds)
    rewrittenStart = { at: new Date(Math.floor(Date.now() / 1000) * 1000), logLength: c.apiserverLog().length };
    await c.startControlPlane({
      serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES,
      controllerManager: { clusterCidr: NEW_PODS, serviceClusterIpRange: NEW_RANGE },
    });
    assert.equal(c.controllerManagerExited(), false, "KCM accepts every node podCIDR in its new --cluster-cidr");
  });

  it("keeps every Service's identity and fields; only the planned addresses change", async () => {
    const after = keyed(await rest.list("/api/v1/services"));
    assert.deepEqual([...after.keys()].sort(), [...servicesBefore.keys()].sort(), "no Service lost or added");
    for (const [key, before] of servicesBefore) {
      const now = after.get(key)!;
      const change = targets.services.get(key.replace(/^\//, ""))?.[0];
      assert.equal(now.metadata!.uid, before.metadata!.uid, `${key} uid`);
      assert.equal(now.metadata!.creationTimestamp, before.metadata!.creationTimestamp, `${key} creationTimestamp`);
      assert.deepEqual(now.metadata!.ownerReferences, before.metadata!.ownerReferences, `${key} ownerReferences`);
      assert.deepEqual(now.metadata!.finalizers, before.metadata!.finalizers, `${key} finalizers`);
      const spec = now.spec as { clusterIP?: string; clusterIPs?: string[] };
      if (!change) {
        assert.deepEqual(now, before, `${key} untouched`);
        continue;
      }
      assert.equal(spec.clusterIP, change.to, `${key} clusterIP`);
      assert.deepEqual(spec.clusterIPs, [change.to], `${key} clusterIPs`);
      assert.ok(BigInt(now.metadata!.resourceVersion!) > BigInt(before.metadata!.resourceVersion!), `${key} resourceVersion advances`);
      const name = before.metadata!.name!;
      const expectedAnnotations = before.metadata!.namespace === NS ? seed.expectedAnnotations(name, change.to) : before.metadata!.annotations;
      assert.deepEqual(now.metadata!.annotations, expectedAnnotations, `${key} annotations`);
      assert.deepEqual(withoutVolatile(now, ["clusterIP", "clusterIPs"]), withoutVolatile(expectedAnnotations ? { ...before, metadata: { ...before.metadata, annotations: expectedAnnotations } } : before, ["clusterIP", "clusterIPs"]), `${key} every other field`);
    }
    const kubernetes = after.get("default/kubernetes")!;
    assert.equal((kubernetes.spec as { clusterIP: string }).clusterIP, "10.100.0.1", "the kubernetes Service at the new first IP");
    // the bridges opened before the stop came through the rewrite: each Service still answers at its old IP
    assert.deepEqual(bridged.sort(), ["default/kubernetes 10.96.0.1", "kube-system/kube-dns 10.96.0.10"]);
    for (const [key, oldIp] of [["default/kubernetes", "10.96.0.1"], ["kube-system/kube-dns", "10.96.0.10"]]) {
      const service = after.get(key)!;
      assert.deepEqual((service.spec as { externalIPs?: string[] }).externalIPs, [oldIp], `${key} keeps its old IP as an externalIP`);
      assert.equal(service.metadata!.annotations?.[BRIDGE_ANNOTATION], oldIp, `${key}'s bridge annotation still names the old IP`);
    }
    // and the bridges' end takes exactly those entries away
    const removed = await removeOldIpBridges(rest);
    assert.deepEqual(removed.sort(), ["default/kubernetes 10.96.0.1", "kube-system/kube-dns 10.96.0.10"]);
    const dns = await rest.get(`${paths.services("kube-system")}/kube-dns`);
    assert.equal((dns.spec as { externalIPs?: string[] }).externalIPs, undefined);
  });

  it("keeps every Node's identity; only its podCIDR moves, into the new --cluster-cidr", async () => {
    const after = keyed(await rest.list("/api/v1/nodes"));
    for (const [key, before] of nodesBefore) {
      const now = after.get(key)!;
      const planned = targets.nodes.get(before.metadata!.name!)![0];
      assert.equal(now.metadata!.uid, before.metadata!.uid);
      assert.deepEqual(now.metadata!.finalizers, before.metadata!.finalizers);
      assert.equal((now.spec as { podCIDR: string }).podCIDR, planned.to);
      assert.deepEqual((now.spec as { podCIDRs: string[] }).podCIDRs, [planned.to]);
      assert.ok(planned.to.startsWith("10.48."), `${key}: ${planned.to} in ${NEW_PODS}`);
      assert.deepEqual((now.spec as { taints?: unknown }).taints, (before.spec as { taints?: unknown }).taints);
      assert.deepEqual(now.metadata!.labels, before.metadata!.labels);
    }
  });

  it("moved the allocator's records: the moved IPs are taken, a new Service gets a new-range IP, nothing is repaired", async () => {
    const webIp = targets.services.get(`${NS}/web`)![0].to;
    await assert.rejects(
      rest.create(paths.services(NS), { metadata: { name: "squatter" }, spec: { clusterIP: webIp, ports: [{ port: 80 }] } }),
      (err: unknown) => /already allocated|already been allocated|provided IP is already/i.test(String((err as Error).message)),
      `a create at web's new IP ${webIp} is refused as taken`,
    );
    const fresh = await rest.create(paths.services(NS), { metadata: { name: "fresh" }, spec: { ports: [{ port: 80 }] } });
    assert.match((fresh.spec as { clusterIP: string }).clusterIP, /^10\.100\./, "a new Service gets a new-range IP");
    const freed = await rest.create(paths.services(NS), { metadata: { name: "reuses-old" }, spec: { ports: [{ port: 80 }] } });
    assert.match((freed.spec as { clusterIP: string }).clusterIP, /^10\.100\./);
    if (ipAddressesServed) {
      const addresses = await rest.list("/apis/networking.k8s.io/v1/ipaddresses");
      const names = new Set(addresses.map((a) => a.metadata!.name!));
      for (const [key, [change]] of targets.services) {
        assert.ok(names.has(change.to), `IPAddress ${change.to} exists for ${key}`);
        assert.ok(!names.has(change.from), `IPAddress ${change.from} is gone`);
        const ref = addresses.find((a) => a.metadata!.name === change.to)!.spec as { parentRef: { namespace: string; name: string } };
        assert.equal(`${ref.parentRef.namespace}/${ref.parentRef.name}`, key);
      }
      const defaultCidr = await rest.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes");
      assert.deepEqual((defaultCidr.spec as { cidrs: string[] }).cidrs, [NEW_RANGE]);
      assert.equal(defaultCidr.metadata!.deletionTimestamp, undefined);
    }
    // the legacy bitmap, where it is kept (1.32; 1.33 writes it beside the IPAddresses until dual-write is off)
    const bitmap = await etcd.get("/registry/ranges/serviceips").buffer();
    if (bitmap) assert.equal(storedRange(readStoredValue(bitmap)), NEW_RANGE, "the bitmap maps the new range");
    assert.ok(bitmap || ipAddressesServed, "the cluster keeps at least one of the two allocator records");
    // the repair loops run at start and then on a timer/informer; give them a few seconds to speak
    await new Promise((r) => setTimeout(r, 5_000));
    // Only what the apiserver did since it started on the rewritten data: before the stop its repair loop can race
    // its own informers on a Service the seed has just created ("10.96.x.y is not allocated; repairing"), as it can
    // on the Services this test creates meanwhile (10.100.x.y), which is why those are not ours either.
    const events = (await rest.list("/api/v1/events")).filter((e) => {
      const { lastTimestamp, eventTime, firstTimestamp } = e as { lastTimestamp?: string; eventTime?: string; firstTimestamp?: string };
      return new Date(lastTimestamp ?? eventTime ?? firstTimestamp ?? 0) >= rewrittenStart.at;
    });
    // ours: the moved addresses, old and new
    const ours = [...targets.services.values()].flatMap(([change]) => [change.from, change.to]);
    const mentionsOurs = (text: string) => ours.some((ip) => new RegExp(`(^|[^0-9.])${ip.replace(/\./g, "\\.")}([^0-9]|$)`).test(text));
    const repairs = events.filter((e) => REPAIR_REASONS.has((e as { reason?: string }).reason ?? "") && mentionsOurs((e as { message?: string }).message ?? ""));
    assert.deepEqual(repairs.map((e) => `${(e as { reason?: string }).reason}: ${(e as { message?: string }).message}`), [], "no repair events for our addresses");
    const repairLines = cluster().apiserverLog().slice(rewrittenStart.logLength).split("\n").filter((line) => /may have leaked|appears to have leaked|is not allocated; repairing/.test(line));
    assert.deepEqual(repairLines.filter(mentionsOurs), [], "no repair or leak of our addresses in the apiserver log");
  });

  it("`cidr-migration restore` undoes the whole run from the snapshot taken before it", async () => {
    const restoreRoot = path.join(path.dirname(journalPath), "restored");
    const dataDir = path.join(restoreRoot, "data");
    const result = await runCli(["restore", "--snapshot", snapshotPath, "--data-dir", dataDir, "--name", "default"]);
    assert.equal(result.code, 0, result.stderr);
    const restored = await startEtcd({ dir: restoreRoot, dataDir });
    const client = new Etcd3({ hosts: restored.endpoint });
    try {
      const scope = await readRewriteScope(client, "/registry");
      const values = (entries: EtcdEntry[]) => entries.map((e) => `${e.key}=${e.value.toString("base64")}`).sort();
      assert.deepEqual(values(scope), values(scopeBefore), "every rewritten key holds its value from before the run");
    } finally {
      client.close();
      await restored.stop();
    }
  });

  it("a second run finds nothing left to write", async () => {
    const c = cluster();
    await rest.delete(`${paths.services(NS)}/fresh`);
    await rest.delete(`${paths.services(NS)}/reuses-old`);
    await c.stopControlPlane();
    const report = await runRewrite(etcd, { targets, journalPath });
    assert.equal(report.written, 0);
    assert.equal(report.alreadyMoved, targets.services.size + targets.nodes.size);
    await c.startControlPlane({ serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES });
  });
});
}
