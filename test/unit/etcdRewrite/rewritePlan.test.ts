import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { appendJournal, readAndRepairJournal } from "../../../lib/etcdRewrite/rewriteJournal";
import { EtcdEntry, planRewrite, RewriteTargets } from "../../../lib/etcdRewrite/rewritePlan";
import { goJson } from "../../../lib/etcdRewrite/storedValue";

// JSON-stored objects keep these cases readable; the protobuf path is proven in wireRewrite.test.ts and on the test bed.
const entry = (key: string, object: unknown, modRevision = "7"): EtcdEntry => ({ key, value: Buffer.from(goJson(object)), modRevision });
const service = (ns: string, name: string, ip: string) =>
  entry(`/registry/services/specs/${ns}/${name}`, { kind: "Service", apiVersion: "v1", metadata: { name, namespace: ns }, spec: { clusterIP: ip, clusterIPs: [ip] } });
const ipAddress = (ip: string, ns: string, name: string) =>
  entry(`/registry/ipaddresses/${ip}`, { kind: "IPAddress", apiVersion: "networking.k8s.io/v1", metadata: { name: ip, uid: `uid-${ip}`, creationTimestamp: "2026-01-01T00:00:00Z", labels: { "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io" } }, spec: { parentRef: { group: "", resource: "services", namespace: ns, name } } });

function targets(services: Record<string, [string, string]>): RewriteTargets {
  return {
    prefix: "/registry",
    serviceCidr: { from: "10.96.0.0/16", to: "10.100.0.0/16" },
    services: new Map(Object.entries(services).map(([k, [from, to]]) => [k, [{ from, to }]])),
    nodes: new Map(),
  };
}
const identity = { newUid: () => "new-uid", now: new Date("2026-12-03T08:00:00.123Z") };

describe("etcd rewrite: planning from what etcd holds", () => {
  it("moves a Service and its IPAddress in one transaction conditioned on both keys and on the new key being absent", () => {
    const plan = planRewrite([service("a", "web", "10.96.0.5"), ipAddress("10.96.0.5", "a", "web")], targets({ "a/web": ["10.96.0.5", "10.100.0.5"] }), identity);
    assert.deepEqual(plan.refusals, []);
    assert.equal(plan.txns.length, 1);
    const [txn] = plan.txns;
    assert.deepEqual(txn.compare, [
      { key: "/registry/services/specs/a/web", modRevision: "7" },
      { key: "/registry/ipaddresses/10.96.0.5", modRevision: "7" },
      { key: "/registry/ipaddresses/10.100.0.5", modRevision: "0" },
    ]);
    assert.deepEqual(txn.delete, ["/registry/ipaddresses/10.96.0.5"]);
    const created = JSON.parse(txn.put[1].value.toString());
    assert.deepEqual(created.metadata, { name: "10.100.0.5", uid: "new-uid", creationTimestamp: "2026-12-03T08:00:00Z", labels: { "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io" } });
    assert.deepEqual(created.spec.parentRef, { group: "", resource: "services", namespace: "a", name: "web" });
  });

  it("refuses, naming each key, values encrypted at rest", () => {
    const plan = planRewrite([{ key: "/registry/services/specs/a/web", value: Buffer.from("k8s:enc:kms:v2:key:xyz"), modRevision: "3" }], targets({}), identity);
    assert.equal(plan.txns.length, 0);
    assert.match(plan.refusals[0], /\/registry\/services\/specs\/a\/web is encrypted at rest \(k8s:enc:kms\).*services\.strategy: recreate/);
  });

  it("refuses a Service in the old range that the plan does not move, and a new IP someone else holds", () => {
    const plan = planRewrite([
      service("a", "web", "10.96.0.5"), ipAddress("10.96.0.5", "a", "web"),
      service("a", "late", "10.96.0.6"),
      service("b", "squatter", "10.100.0.5"), ipAddress("10.100.0.5", "b", "squatter"),
    ], targets({ "a/web": ["10.96.0.5", "10.100.0.5"] }), identity);
    assert.equal(plan.txns.length, 0, "nothing is written when anything is refused");
    assert.ok(plan.refusals.some((r) => r.includes("Service a/late") && r.includes("10.96.0.6") && r.includes("run the plan again")));
    assert.ok(plan.refusals.some((r) => r.includes("Service a/web") && r.includes("already held by IPAddress 10.100.0.5 (services b/squatter)")));
  });

  it("plans nothing for what a crashed run already moved, and finishes half-moved IPAddresses", () => {
    const plan = planRewrite([
      service("a", "web", "10.100.0.5"), ipAddress("10.100.0.5", "a", "web"),
      service("a", "api", "10.96.0.7"), ipAddress("10.96.0.7", "a", "api"), ipAddress("10.100.0.7", "a", "api"),
    ], targets({ "a/web": ["10.96.0.5", "10.100.0.5"], "a/api": ["10.96.0.7", "10.100.0.7"] }), identity);
    assert.deepEqual(plan.refusals, []);
    assert.equal(plan.alreadyMoved, 1);
    assert.equal(plan.txns.length, 1);
    assert.deepEqual(plan.txns[0].delete, ["/registry/ipaddresses/10.96.0.7"]);
    assert.deepEqual(plan.txns[0].put.map((p) => p.key), ["/registry/services/specs/a/api"], "the IPAddress already made is kept, not made again");
  });

  it("rewrites the legacy bitmap to the new range with the moved IPs", () => {
    const range = entry("/registry/ranges/serviceips", { kind: "RangeAllocation", apiVersion: "v1", metadata: { creationTimestamp: null }, range: "10.96.0.0/16", data: Buffer.from([0x10]).toString("base64") });
    const plan = planRewrite([service("a", "web", "10.96.0.5"), range], targets({ "a/web": ["10.96.0.5", "10.100.0.5"] }), identity);
    const bitmap = JSON.parse(plan.txns.find((t) => t.object.startsWith("RangeAllocation"))!.put[0].value.toString());
    assert.equal(bitmap.range, "10.100.0.0/16");
    assert.equal(Buffer.from(bitmap.data, "base64").toString("hex"), "10", "10.100.0.5 is bit 4, as 10.96.0.5 was");
  });
});

describe("etcd rewrite: the journal", () => {
  it("drops a partial last line left by a crash, and appending goes on from a clean end", () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "journal-")), "j.jsonl");
    appendJournal(file, [{ at: "t1", object: "Service a/web", before: [] }]);
    fs.appendFileSync(file, '{"at":"t2","obj');
    const read = readAndRepairJournal(file);
    assert.equal(read.lines.length, 1);
    assert.equal(read.truncatedBytes, 15);
    appendJournal(file, [{ at: "t3", object: "Node n", before: [] }]);
    assert.deepEqual(readAndRepairJournal(file).lines.map((l) => l.at), ["t1", "t3"]);
  });
});
