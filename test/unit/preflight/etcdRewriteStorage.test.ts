import * as assert from "assert";
import * as fs from "fs";
import * as net from "net";
import * as os from "os";
import * as path from "path";
import { validateConfig } from "../../../lib/config/config";
import { goJson } from "../../../lib/etcdRewrite/storedValue";
import { lengthDelimited, stringField } from "../../../lib/etcdRewrite/wireMessage";
import { preflightFindings } from "../../../lib/preflight";
import { PreflightInput } from "../../../lib/preflight/checkInput";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { EtcdProbe, probeEtcd, RewriteKeySample, SampledKey, sampleRewriteKeys } from "../../../lib/preflight/etcdProbe";
import { checkEtcdRewriteStorage } from "../../../lib/preflight/etcdRewriteStorage";
import { Finding } from "../../../lib/report/findings";

// services.strategy etcd-rewrite: the etcd version and the stored format of a sampled Service and Node, judged before
// anything changes.

const SERVICES = "/registry/services/specs/";
const NODES = "/registry/minions/";

// "k8s\0" + runtime.Unknown {typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2}, as the apiserver stores protobuf
function protobuf(kind: string): Buffer {
  const typeMeta = Buffer.concat([stringField(1, "v1"), stringField(2, kind)]);
  return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), lengthDelimited(1, typeMeta), lengthDelimited(2, stringField(1, "x"))]);
}

const service = (value: Buffer): SampledKey => ({ key: `${SERVICES}default/kubernetes`, value });
const node = (value: Buffer): SampledKey => ({ key: `${NODES}cp-1`, value });
const encrypted = Buffer.from("k8s:enc:aescbc:v1:key1:\x00\x01binary", "latin1");

function config(strategy: "recreate" | "etcd-rewrite") {
  return validateConfig({
    values: {
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      etcd: { endpoints: ["http://a:2379"] },
      nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
      services: { strategy },
    },
  });
}

const up = (endpoint: string, version = "3.5.21") => ({ endpoint, ok: true as const, version, dbSizeBytes: 2 ** 20, memberId: "7", leader: "7", alarms: [] });
const dir = { directory: "/backups", exists: true, testedDirectory: "/backups", writable: true, freeBytes: 10 * 2 ** 30 };

function probe(sample: Partial<RewriteKeySample> | undefined, statuses: EtcdProbe["statuses"] = [up("http://a:2379")]): EtcdProbe {
  return {
    endpoints: statuses.map((s) => s.endpoint),
    statuses,
    snapshotDirectory: dir,
    rewriteSample: sample && { servicePrefix: SERVICES, nodePrefix: NODES, ...sample },
  };
}

function input(etcd: EtcdProbe | undefined, strategy: "recreate" | "etcd-rewrite" = "etcd-rewrite"): PreflightInput {
  return {
    config: config(strategy),
    cluster: { ...emptyClusterObjects(), nodes: [{ metadata: { name: "cp-1" } }] },
    allowSecretValues: false,
    etcd,
  };
}

const codes = (fs: Finding[]) => fs.map((f) => [f.code, f.severity, f.object]);

describe("preflight: services.strategy etcd-rewrite and what etcd holds", () => {
  it("a tested etcd holding protobuf and apiserver JSON: nothing to say", () => {
    const json = Buffer.from(goJson({ kind: "Node", apiVersion: "v1", metadata: { name: "cp-1" }, spec: { podCIDR: "10.244.0.0/24" } }));
    assert.deepStrictEqual(checkEtcdRewriteStorage(input(probe({ service: service(protobuf("Service")), node: node(json) }))), []);
  });

  it("says nothing under services.strategy recreate, however etcd stores things", () => {
    assert.deepStrictEqual(checkEtcdRewriteStorage(input(probe({ service: service(encrypted) }, [up("http://a:2379", "3.4.23")]), "recreate")), []);
  });

  it("a Service encrypted at rest is a blocker naming the Service, the key and the provider", () => {
    const found = checkEtcdRewriteStorage(input(probe({ service: service(encrypted), node: node(protobuf("Node")) })));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_ENCRYPTED", "blocker", "Service default/kubernetes"]]);
    assert.strictEqual(
      found[0].message,
      "etcd key /registry/services/specs/default/kubernetes is encrypted at rest (k8s:enc:aescbc: an EncryptionConfiguration covers services): services.strategy etcd-rewrite never decrypts, so it cannot move ClusterIPs",
    );
    assert.match(found[0].action, /^use services\.strategy: recreate/);
  });

  it("a Node encrypted, or stored in a format the rewrite does not handle, is a blocker too", () => {
    const enc = checkEtcdRewriteStorage(input(probe({ service: service(protobuf("Service")), node: node(Buffer.from("k8s:enc:kms:v2:provider:xyz")) })));
    assert.deepStrictEqual(codes(enc), [["ETCD_REWRITE_ENCRYPTED", "blocker", "Node cp-1"]]);
    assert.match(enc[0].message, /k8s:enc:kms.*covers nodes.*cannot move podCIDRs/);

    const handWritten = Buffer.from('{ "kind": "Service" }');
    const yamlish = Buffer.from("kind: Node\n");
    const odd = checkEtcdRewriteStorage(input(probe({ service: service(handWritten), node: node(yamlish) })));
    assert.deepStrictEqual(codes(odd), [
      ["ETCD_REWRITE_STORAGE_FORMAT", "blocker", "Service default/kubernetes"],
      ["ETCD_REWRITE_STORAGE_FORMAT", "blocker", "Node cp-1"],
    ]);
    assert.match(odd[0].message, /^etcd key \/registry\/services\/specs\/default\/kubernetes holds JSON that does not re-encode to the same bytes/);
    assert.match(odd[1].message, /^etcd key \/registry\/minions\/cp-1 holds neither protobuf/);
    assert.strictEqual(odd[1].action, "use services.strategy: recreate");
  });

  it("an etcd version the rewrite was not tested on is a blocker per endpoint; tested ones are not", () => {
    const statuses = [up("http://a:2379", "3.4.23"), up("http://b:2379", "3.6.4"), up("http://c:2379", "3.8.0")];
    const found = checkEtcdRewriteStorage(input(probe({ service: service(protobuf("Service")), node: node(protobuf("Node")) }, statuses)));
    assert.deepStrictEqual(codes(found), [
      ["ETCD_REWRITE_UNTESTED_ETCD", "blocker", "etcd http://a:2379"],
      ["ETCD_REWRITE_UNTESTED_ETCD", "blocker", "etcd http://c:2379"],
    ]);
    assert.strictEqual(found[0].message, "runs etcd 3.4.23, a version services.strategy etcd-rewrite was not tested on (3.5.x, 3.6.x, 3.7.x); the rewrite would refuse it after stopping the apiservers");
    assert.match(found[0].action, /^use services\.strategy: recreate/);
  });

  it("nothing under the rewrite's keys: a blocker (another --etcd-prefix, or another cluster's etcd); no Node key is fine without Nodes", () => {
    const found = checkEtcdRewriteStorage(input(probe({})));
    assert.deepStrictEqual(codes(found), [
      ["ETCD_REWRITE_KEYS_MISSING", "blocker", "etcd keys /registry/services/specs/"],
      ["ETCD_REWRITE_KEYS_MISSING", "blocker", "etcd keys /registry/minions/"],
    ]);
    assert.match(found[0].message, /no Service is stored under \/registry\/services\/specs\/.*--etcd-prefix/);
    const noNodes = { ...input(probe({ service: service(protobuf("Service")) })) };
    noNodes.cluster = { ...noNodes.cluster, nodes: [] };
    assert.deepStrictEqual(checkEtcdRewriteStorage(noNodes), []);
  });

  describe("when etcd could not be read, the etcd checks have said so: no second finding", () => {
    it("health check skipped for want of credentials", () => {
      const skipped = { ...probe(undefined, []), endpoints: ["https://a:2379"], skippedReason: "no CA" };
      assert.deepStrictEqual(checkEtcdRewriteStorage(input(skipped)), []);
      assert.deepStrictEqual(preflightFindings(input(skipped)).filter((f) => f.code.startsWith("ETCD")).map((f) => f.code), ["ETCD_CHECK_SKIPPED"]);
    });

    it("endpoints that do not answer: ETCD_UNREACHABLE only, even when the sample read failed too", () => {
      const down = { endpoint: "http://a:2379", ok: false as const, error: "no answer to status within 5000 ms" };
      assert.deepStrictEqual(checkEtcdRewriteStorage(input(probe(undefined, [down]))), []);
      assert.deepStrictEqual(checkEtcdRewriteStorage(input(probe({ error: "14 UNAVAILABLE" }, [down, up("http://b:2379")]))), []);
    });

    it("a read that fails where every status request answered is news: a blocker", () => {
      const found = checkEtcdRewriteStorage(input(probe({ error: "etcdserver: permission denied" })));
      assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_READ_FAILED", "blocker", "etcd http://a:2379"]]);
      assert.match(found[0].message, /reading one key under \/registry\/services\/specs\/ and \/registry\/minions\/ failed: etcdserver: permission denied/);
    });
  });

  it("registers the check: an encrypted Service is in the preflight report", () => {
    const found = preflightFindings(input(probe({ service: service(encrypted), node: node(protobuf("Node")) })));
    assert.ok(found.some((f) => f.code === "ETCD_REWRITE_ENCRYPTED" && f.severity === "blocker"));
  });
});

describe("preflight etcd probe: the etcd-rewrite sample", () => {
  it("reads the first key under the rewrite's Service and Node prefixes", async () => {
    const asked: string[] = [];
    const sample = await sampleRewriteKeys(async (prefix) => {
      asked.push(prefix);
      return prefix === SERVICES ? service(protobuf("Service")) : undefined;
    });
    assert.deepStrictEqual(asked.sort(), [NODES, SERVICES]);
    assert.deepStrictEqual({ ...sample, service: sample.service?.key }, { servicePrefix: SERVICES, nodePrefix: NODES, service: `${SERVICES}default/kubernetes`, node: undefined });
  });

  it("a failed read is recorded as the error's first line, not thrown", async () => {
    const sample = await sampleRewriteKeys(async () => {
      throw new Error("etcdserver: permission denied\nmore");
    });
    assert.deepStrictEqual(sample, { servicePrefix: SERVICES, nodePrefix: NODES, error: "etcdserver: permission denied" });
  });

  it("is read only when asked and some endpoint answered: an unreachable etcd gets no sample", async function () {
    this.timeout(15_000);
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, "127.0.0.1", () => {
        const p = (server.address() as net.AddressInfo).port;
        server.close(() => resolve(p));
      });
    });
    const snapshots = fs.mkdtempSync(path.join(os.tmpdir(), "etcd-sample-"));
    try {
      const found = await probeEtcd({ endpoints: [`http://127.0.0.1:${port}`], snapshotDirectory: snapshots, timeoutMs: 1000, sampleRewriteKeys: true });
      assert.strictEqual(found.statuses[0].ok, false);
      assert.strictEqual(found.rewriteSample, undefined);
    } finally {
      fs.rmSync(snapshots, { recursive: true, force: true });
    }
  });
});
