import { strict as assert } from "assert";
import { Writer } from "protobufjs/minimal";
import { unownedChanges } from "../../../lib/etcdRewrite/exactRewrite";
import { allocationBitmap } from "../../../lib/etcdRewrite/rangeAllocationRecord";
import { rewriteService, storedClusterIPs } from "../../../lib/etcdRewrite/serviceRecord";
import { rewriteNode, storedPodCidrs } from "../../../lib/etcdRewrite/nodeRecord";
import { goJson, readStoredValue } from "../../../lib/etcdRewrite/storedValue";
import { changedPaths } from "../../../lib/etcdRewrite/wireDiff";
import { lengthDelimited, rewriteFields, stringField } from "../../../lib/etcdRewrite/wireMessage";

// Values laid out the way the apiserver stores them: "k8s\0" + runtime.Unknown {typeMeta = 1, raw = 2, contentType = 4}.
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const cat = (...parts: Uint8Array[]) => Buffer.concat(parts);

function envelope(apiVersion: string, kind: string, raw: Uint8Array): Buffer {
  const typeMeta = cat(stringField(1, apiVersion), stringField(2, kind));
  return cat(MAGIC, lengthDelimited(1, typeMeta), lengthDelimited(2, raw), stringField(3, ""), stringField(4, ""));
}

function annotation(key: string, value: string): Uint8Array {
  return lengthDelimited(12, cat(stringField(1, key), stringField(2, value)));
}

function storedService(clusterIP: string, annotations: Record<string, string>): Buffer {
  const creation = lengthDelimited(8, Writer.create().uint32(8).int64(1_764_000_000).uint32(16).int32(0).finish());
  const meta = cat(stringField(1, "web"), stringField(3, "shop"), stringField(5, "6a1f-uid"), creation, ...Object.entries(annotations).map(([k, v]) => annotation(k, v)), stringField(14, "example.com/keep"));
  const port = lengthDelimited(1, cat(stringField(1, "http"), stringField(2, "TCP"), Writer.create().uint32(24).int32(80).finish()));
  const spec = cat(port, stringField(3, clusterIP), stringField(4, "ClusterIP"), stringField(18, clusterIP), stringField(19, "IPv4"), stringField(17, "SingleStack"));
  const status = lengthDelimited(3, lengthDelimited(1, new Uint8Array()));
  return envelope("v1", "Service", cat(lengthDelimited(1, meta), lengthDelimited(2, spec), status));
}

describe("etcd rewrite: the wire-level record edits", () => {
  it("moves a protobuf Service's clusterIP, clusterIPs and IP-carrying annotations; every other byte is copied", () => {
    const before = storedService("10.96.12.7", { "example.com/peer": "tcp://10.96.12.7:80", "example.com/unrelated": "10.96.12.70" });
    const stored = readStoredValue(before);
    const after = rewriteService(before, stored, [{ from: "10.96.12.7", to: "10.100.12.7" }]);
    assert.deepEqual(storedClusterIPs(readStoredValue(after)), ["10.100.12.7"]);
    const raw = (v: Buffer) => (readStoredValue(v) as { raw: Uint8Array }).raw;
    assert.deepEqual(changedPaths(raw(before), raw(after), new Set(["1", "1.12", "2"])).sort(), ["1.12.2", "2.18", "2.3"]);
    assert.deepEqual(unownedChanges("Service", before, after), []);
    assert.ok(after.toString("latin1").includes("10.96.12.70"), "10.96.12.7 inside 10.96.12.70 is not an occurrence");
    assert.ok(after.subarray(0, 4).equals(MAGIC));
  });

  it("returns the same bytes when there is nothing to move (a re-run)", () => {
    const value = storedService("10.100.12.7", {});
    assert.ok(rewriteService(value, readStoredValue(value), [{ from: "10.96.12.7", to: "10.100.12.7" }]).equals(value));
  });

  it("reports a change outside the owned fields, so the proof can fail", () => {
    const before = storedService("10.96.12.7", {});
    const stored = readStoredValue(before) as { raw: Uint8Array };
    // a rewrite that also touched the spec's type (field 4)
    const wrongRaw = rewriteFields(stored.raw, (field, payload) => (field.number === 2 ? rewriteFields(payload, (f) => (f.number === 4 ? Buffer.from("NodePort") : undefined)) : undefined));
    const wrong = envelope("v1", "Service", wrongRaw);
    assert.deepEqual(unownedChanges("Service", before, wrong), ["2.4"]);
  });

  it("moves a Node's podCIDR and podCIDRs", () => {
    const spec = cat(stringField(1, "10.244.3.0/24"), stringField(3, "aws:///i-1"), stringField(7, "10.244.3.0/24"));
    const before = envelope("v1", "Node", cat(lengthDelimited(1, stringField(1, "node-3")), lengthDelimited(2, spec)));
    const after = rewriteNode(before, readStoredValue(before), [{ from: "10.244.3.0/24", to: "10.48.3.0/24" }]);
    assert.deepEqual(storedPodCidrs(readStoredValue(after)), ["10.48.3.0/24"]);
    assert.deepEqual(unownedChanges("Node", before, after), []);
  });

  it("rewrites JSON-stored objects the way Go's encoder writes them, and refuses JSON it cannot re-encode exactly", () => {
    const object = { kind: "Service", apiVersion: "v1", metadata: { name: "a", annotations: { note: "a & b <c>", peer: "10.96.0.9:53" } }, spec: { clusterIP: "10.96.0.9", clusterIPs: ["10.96.0.9"], type: "ClusterIP" } };
    const before = Buffer.from(goJson(object));
    assert.ok(before.toString().includes("a \\u0026 b \\u003cc\\u003e"));
    const stored = readStoredValue(before);
    assert.equal(stored.format, "json");
    const after = rewriteService(before, stored, [{ from: "10.96.0.9", to: "10.100.0.9" }]);
    assert.deepEqual(JSON.parse(after.toString()).spec, { clusterIP: "10.100.0.9", clusterIPs: ["10.100.0.9"], type: "ClusterIP" });
    assert.equal(JSON.parse(after.toString()).metadata.annotations.peer, "10.100.0.9:53");
    assert.deepEqual(unownedChanges("Service", before, after), []);
    const handWritten = readStoredValue(Buffer.from('{ "kind": "Service" }'));
    assert.equal(handWritten.format, "unknown");
  });

  it("recognises values encrypted at rest and never reads them", () => {
    const stored = readStoredValue(Buffer.from("k8s:enc:aescbc:v1:key1:\x00\x01binary"));
    assert.deepEqual(stored, { format: "encrypted", provider: "aescbc" });
  });

  it("builds the legacy allocator's bitmap: bit i for address network + 1 + i, big-endian", () => {
    assert.equal(allocationBitmap("10.96.0.0/16", ["10.96.0.1", "10.96.0.10"]).toString("hex"), "0201");
    assert.equal(allocationBitmap("10.96.0.0/16", []).length, 0);
    assert.equal(allocationBitmap("10.96.0.0/16", ["10.96.1.0"]).toString("hex"), "80" + "00".repeat(31));
    assert.equal(allocationBitmap("10.96.0.0/16", ["fd00::1"]).length, 0, "another family is not in this map");
  });
});
