// The etcd snapshot provider against real etcd 3.4 (plain and TLS, started here), driven through the SDK's
// dynamic-provider host over gRPC with the provider serialized exactly as `pulumi up` sends it.
import * as assert from "assert";
import { execFile } from "child_process";
import { createHash } from "crypto";
import { Etcd3 } from "etcd3";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { EtcdSnapshot, etcdSnapshotProvider } from "../../dynamic-providers/etcdSnapshot";
import {
  asPersisted, isSecret, Props, ProviderHost, registrationOf, Registration, serializeDynamicProvider,
  startProviderHost, UNKNOWN, urnOf, PROVIDER_KEY,
} from "../support/providerHost";
import { startTcpProxy, TcpProxy } from "../support/tcpProxy";
import { EtcdProcess, startEtcd } from "../testbed/etcd";
import { snapshotTool } from "../testbed/kubeBinaries";
import { createPki } from "../testbed/pki";

const execFileAsync = promisify(execFile);

const SEED_KEYS = 400;
/** ~1.6 MB of values: the snapshot spans many 32 KiB stream messages, so a cut can land in the middle. */
const VALUE_BYTES = 4000;

function seedValue(i: number): string {
  return `value-${i}-`.padEnd(VALUE_BYTES, String.fromCharCode(97 + (i % 26)));
}

async function seed(etcd: EtcdProcess): Promise<void> {
  const client = clientFor(etcd);
  try {
    for (let batch = 0; batch < SEED_KEYS; batch += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => client.put(`/registry/test/key-${String(batch + j).padStart(4, "0")}`).value(seedValue(batch + j))));
    }
    // History, so revision and key count differ: overwrite some keys, delete others.
    for (let i = 0; i < 20; i++) await client.put(`/registry/test/key-${String(i).padStart(4, "0")}`).value(`rewritten-${i}`);
    for (let i = 390; i < SEED_KEYS; i++) await client.delete().key(`/registry/test/key-${String(i).padStart(4, "0")}`);
  } finally {
    client.close();
  }
}

function pem(file: string): string {
  return fs.readFileSync(file, "utf8");
}

function clientFor(etcd: EtcdProcess, endpoint = etcd.endpoint): Etcd3 {
  return new Etcd3({
    hosts: endpoint,
    credentials: etcd.tls ? { rootCertificate: fs.readFileSync(etcd.tls.caCertPath), certChain: fs.readFileSync(etcd.tls.certPath), privateKey: fs.readFileSync(etcd.tls.keyPath) } : undefined,
  });
}

async function sourceState(etcd: EtcdProcess): Promise<{ revision: number; keys: Record<string, string> }> {
  const client = clientFor(etcd);
  try {
    const response = await client.getAll().exec();
    const keys: Record<string, string> = {};
    for (const kv of response.kvs) keys[kv.key.toString()] = kv.value.toString();
    return { revision: Number(response.header.revision), keys };
  } finally {
    client.close();
  }
}

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

function dbSha256(file: string): string {
  const data = fs.readFileSync(file);
  return createHash("sha256").update(data.subarray(0, data.length - 32)).digest("hex");
}

/** The base64 body lines of PEM text: if any shows up somewhere, the PEM leaked. */
function pemBodyLines(...texts: string[]): string[] {
  return texts.flatMap((text) => text.trim().split("\n").filter((line) => !line.startsWith("-----") && line.length >= 40));
}

function assertNoPem(haystack: string, what: string, ...pems: string[]): void {
  const lines = pemBodyLines(...pems);
  assert.ok(lines.length >= pems.length);
  for (const line of lines) assert.ok(!haystack.includes(line), `${what} holds PEM text (${line.slice(0, 12)}…)`);
}

function withoutProvider(props: Props): Props {
  const { [PROVIDER_KEY]: _provider, ...rest } = props;
  return rest;
}

describe("EtcdSnapshot provider (real etcd, SDK dynamic-provider host)", function () {
  this.timeout(120_000);
  let plain: EtcdProcess;
  let tls: EtcdProcess;
  let host: ProviderHost;
  const scratch: string[] = [];
  const proxies: TcpProxy[] = [];

  before(async () => {
    [plain, tls] = await Promise.all([startEtcd(), startEtcd({ tls: true })]);
    await Promise.all([seed(plain), seed(tls)]);
    host = await startProviderHost();
  });

  after(async () => {
    await host?.stop();
    for (const proxy of proxies) await proxy.close();
    await Promise.all([plain?.stop(), tls?.stop()]);
    for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
  });

  function snapshotDir(): string {
    const dir = tempDir("etcd-snapshots-");
    scratch.push(dir);
    return dir;
  }

  async function proxyTo(etcd: EtcdProcess): Promise<TcpProxy> {
    const url = new URL(etcd.endpoint);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port) });
    proxies.push(proxy);
    return proxy;
  }

  function tlsArgs(etcd: EtcdProcess): { caCert: string; cert: string; key: string } {
    assert.ok(etcd.tls);
    return { caCert: pem(etcd.tls.caCertPath), cert: pem(etcd.tls.certPath), key: pem(etcd.tls.keyPath) };
  }

  /** Check then Create, as `pulumi up` does for a new resource. */
  async function checkAndCreate(registration: Registration): Promise<{ urn: string; checked: Props; id: string; outputs: Props }> {
    const urn = urnOf(registration.type, registration.name);
    const check = await host.check(urn, {}, registration.inputs);
    assert.deepStrictEqual(check.failures, []);
    const created = await host.create(urn, check.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs });
    return { urn, checked: check.inputs, id: created.id, outputs: created.outputs };
  }

  let plainSnapshot: Promise<{ path: string; revision: number; keys: Record<string, string>; outputs: Props }> | undefined;

  /** One Create against the plain etcd, shared by the tests that look at its file (taken once, on first use). */
  function snapshotOfPlain(): Promise<{ path: string; revision: number; keys: Record<string, string>; outputs: Props }> {
    plainSnapshot ??= (async () => {
      const dir = snapshotDir();
      const source = await sourceState(plain);
      const registration = await registrationOf(() => new EtcdSnapshot("pre-migration", { endpoints: [plain.endpoint], directory: dir, trigger: "before-cidr-move" }));
      const { id, outputs } = await checkAndCreate(registration);
      assert.strictEqual(id, outputs.path);
      return { path: outputs.path as string, revision: source.revision, keys: source.keys, outputs };
    })();
    return plainSnapshot;
  }

  it("registers the provider serialized by the SDK exactly as pulumi.dynamic.Resource does", async () => {
    const registration = await registrationOf(() => new EtcdSnapshot("pre-migration", { endpoints: [plain.endpoint], directory: "/unused", trigger: "t" }));
    assert.strictEqual(registration.type, "pulumi-nodejs:dynamic/cidr-migration:EtcdSnapshot");
    assert.strictEqual(registration.inputs[PROVIDER_KEY], await serializeDynamicProvider(etcdSnapshotProvider));
    assert.match(String(registration.inputs[PROVIDER_KEY]), /^exports\.handler = /);
  });

  it("plain etcd: Create streams a verified snapshot whose revision and key count match the source", async () => {
    const { path: file, revision, keys, outputs } = await snapshotOfPlain();
    const dir = path.dirname(file);
    assert.deepStrictEqual(fs.readdirSync(dir), [path.basename(file)], "only the snapshot, no temp file or restore scratch dir");
    assert.strictEqual(outputs.sizeBytes, fs.statSync(file).size);
    assert.strictEqual(outputs.sha256, dbSha256(file));
    assert.strictEqual(outputs.revision, revision);
    assert.strictEqual(outputs.keyCount, Object.keys(keys).length);
    assert.strictEqual(outputs.keyCount, SEED_KEYS - 10);
    assert.ok(!Number.isNaN(Date.parse(outputs.takenAt as string)));
    assert.match(outputs.restoreProof as string, /snapshot restore: ok/);
    const status = JSON.parse((await execFileAsync(snapshotTool(), ["snapshot", "status", file, "-w", "json"], { env: { ...process.env, ETCDCTL_API: "3" } })).stdout);
    assert.strictEqual(status.revision, revision);
  });

  it("restore round trip: etcdutl (etcdctl on etcd 3.4) restores the file and an etcd started on it serves the same keys and values", async () => {
    const snapshot = await snapshotOfPlain();
    // Written after the snapshot: must not come back.
    const writer = clientFor(plain);
    await writer.put("/registry/test/after-snapshot").value("x");
    writer.close();

    const restoreDir = tempDir("etcd-restored-");
    scratch.push(restoreDir);
    const dataDir = path.join(restoreDir, "data");
    await execFileAsync(snapshotTool(), ["snapshot", "restore", snapshot.path, "--data-dir", dataDir, "--name", "default"], { env: { ...process.env, ETCDCTL_API: "3" } });
    const restored = await startEtcd({ dir: restoreDir, dataDir });
    try {
      const state = await sourceState(restored);
      assert.strictEqual(Object.keys(state.keys).length, Object.keys(snapshot.keys).length);
      assert.ok(state.revision >= snapshot.revision);
      assert.strictEqual(state.keys["/registry/test/after-snapshot"], undefined);
      const sampled = Object.keys(snapshot.keys).filter((_, i) => i % 37 === 0);
      assert.ok(sampled.length >= 10);
      for (const key of sampled) assert.strictEqual(state.keys[key], snapshot.keys[key], key);
      assert.deepStrictEqual(state.keys, snapshot.keys);
    } finally {
      await restored.stop();
    }
  });

  it("TLS etcd: Create works with the PEM material as secrets, and no PEM reaches outputs, state, responses or logs", async () => {
    const dir = snapshotDir();
    const material = tlsArgs(tls);
    const source = await sourceState(tls);
    const registration = await registrationOf(() => new EtcdSnapshot("pre-migration-tls", { endpoints: [tls.endpoint], directory: dir, trigger: "t1", ...material }));
    for (const key of ["caCert", "cert", "key"]) assert.ok(isSecret(registration.inputs[key]), `${key} registered as a secret`);
    assert.deepStrictEqual(registration.additionalSecretOutputs, ["caCert", "cert", "key"]);

    const wireBefore = host.wire.length;
    const { checked, outputs } = await checkAndCreate(registration);
    assert.ok(isSecret(checked.key), "the engine keeps the checked key input secret");
    assert.strictEqual(outputs.keyCount, Object.keys(source.keys).length);
    assert.strictEqual(outputs.revision, source.revision);
    assert.strictEqual(outputs.sha256, dbSha256(outputs.path as string));
    for (const key of ["caCert", "cert", "key"]) assert.ok(!(key in outputs), `${key} is not an output`);

    const pems = [material.caCert, material.cert, material.key];
    const createResponse = host.wire.slice(wireBefore).find((w) => w.method === "Create")?.response;
    assert.ok(createResponse && createResponse.length > 0);
    assertNoPem(createResponse.toString("latin1"), "the Create response", ...pems);
    // The serialized provider (__provider) quotes "-----BEGIN" in its input checks; nothing else may.
    assert.ok(!JSON.stringify(withoutProvider(outputs)).includes("-----BEGIN"), "an output holds a PEM header");
    assertNoPem(JSON.stringify({ inputs: asPersisted(checked), outputs: asPersisted(outputs) }), "the persisted state", ...pems);
    assertNoPem(host.output(), "the host's log", ...pems);
    // The check above can fail: the Check response does carry the key (inputs travel back to the engine in memory).
    const checkResponse = host.wire.slice(wireBefore).find((w) => w.method === "Check")?.response;
    assert.ok(checkResponse?.toString("latin1").includes(pemBodyLines(material.key)[0]));
  });

  it("TLS etcd with a client cert from another CA: a readable error without PEM, and no file", async () => {
    const dir = snapshotDir();
    const strangers = await createPki(tempDir("other-ca-"));
    scratch.push(strangers.dir);
    const stranger = await strangers.issue("stranger", { commonName: "stranger", usage: "client" });
    const material = { caCert: pem(tls.tls!.caCertPath), cert: pem(stranger.certPath), key: pem(stranger.keyPath) };
    const registration = await registrationOf(() => new EtcdSnapshot("untrusted", { endpoints: [tls.endpoint], directory: dir, trigger: "t", ...material }));
    const urn = urnOf(registration.type, registration.name);
    const { inputs } = await host.check(urn, {}, registration.inputs);
    const error = await host.create(urn, inputs).then(() => undefined, (err: Error) => err);
    assert.ok(error, "Create must fail");
    assert.match(error.message, new RegExp(`cannot reach etcd at ${tls.endpoint.replace(/[.]/g, "\\.")}`));
    assertNoPem(error.message, "the error", material.cert, material.key);
    assert.deepStrictEqual(fs.readdirSync(dir), []);
  });

  it("Diff: only trigger, endpoints or directory take a new snapshot; new TLS material alone changes nothing", async () => {
    const dir = snapshotDir();
    const registration = await registrationOf(() => new EtcdSnapshot("diff", { endpoints: [tls.endpoint], directory: dir, trigger: "t1", ...tlsArgs(tls) }));
    const { urn, checked, id, outputs } = await checkAndCreate(registration);

    const pki = await createPki(path.dirname(tls.tls!.caCertPath));
    const rotated = await pki.issue("etcd-client-rotated", { commonName: "etcd-client", usage: "client" });
    const rotatedInputs = { ...checked, cert: pem(rotated.certPath), key: pem(rotated.keyPath) };
    assert.notStrictEqual(rotatedInputs.key, tlsArgs(tls).key);
    assert.deepStrictEqual(await host.diff(urn, id, outputs, rotatedInputs), { changes: "none", replaces: [], deleteBeforeReplace: false });
    assert.deepStrictEqual(await host.diff(urn, id, outputs, checked), { changes: "none", replaces: [], deleteBeforeReplace: false });
    assert.deepStrictEqual((await host.diff(urn, id, outputs, { ...checked, trigger: "t2" })).replaces, ["trigger"]);
    assert.deepStrictEqual((await host.diff(urn, id, outputs, { ...checked, directory: `${dir}-2` })).replaces, ["directory"]);
    assert.deepStrictEqual((await host.diff(urn, id, outputs, { ...checked, endpoints: [tls.endpoint, tls.endpoint] })).replaces, ["endpoints"]);
    assert.deepStrictEqual(await host.diff(urn, id, outputs, { ...checked, version: "2" }), { changes: "some", replaces: [], deleteBeforeReplace: false });
    assert.deepStrictEqual(await host.diff(urn, id, outputs, { ...checked, keepOnDelete: false }), { changes: "some", replaces: [], deleteBeforeReplace: false });
  });

  it("Update records version/keepOnDelete without a new snapshot; Delete keeps the file unless keepOnDelete is false", async () => {
    const dir = snapshotDir();
    const registration = await registrationOf(() => new EtcdSnapshot("lifecycle", { endpoints: [plain.endpoint], directory: dir, trigger: "t1" }));
    const { urn, checked, id, outputs } = await checkAndCreate(registration);
    const file = outputs.path as string;
    const mtime = fs.statSync(file).mtimeMs;

    const updated = await host.update(urn, id, outputs, { ...checked, version: "2", keepOnDelete: false });
    assert.deepStrictEqual(withoutProvider(updated.outputs), { ...withoutProvider(outputs), version: "2", keepOnDelete: false });
    assert.strictEqual(fs.statSync(file).mtimeMs, mtime);
    assert.deepStrictEqual(fs.readdirSync(dir), [path.basename(file)]);

    await host.delete(urn, id, outputs);
    assert.ok(fs.existsSync(file), "keepOnDelete defaults to true: the file stays");
    await host.delete(urn, id, updated.outputs);
    assert.ok(!fs.existsSync(file), "keepOnDelete false removes the file");
  });

  it("preview: Check and Diff accept unknown inputs and never connect to etcd", async () => {
    const proxy = await proxyTo(tls);
    const endpoint = `https://${proxy.address}`;
    const dir = snapshotDir();
    const registration = await registrationOf(() => new EtcdSnapshot("preview", { endpoints: [endpoint], directory: dir, trigger: "t1", ...tlsArgs(tls) }));
    const urn = urnOf(registration.type, registration.name);

    const previewNews = { ...registration.inputs, trigger: UNKNOWN, caCert: UNKNOWN, cert: UNKNOWN, key: UNKNOWN, endpoints: [UNKNOWN] };
    const check = await host.check(urn, {}, previewNews);
    assert.deepStrictEqual(check.failures, []);
    const { inputs } = await host.check(urn, {}, registration.inputs);
    const created = await host.create(urn, inputs);
    const connectionsAfterCreate = proxy.connections();
    assert.ok(connectionsAfterCreate > 0, "the proxy counts the connections a Create makes");

    const recheck = await host.check(urn, inputs, previewNews);
    assert.deepStrictEqual(recheck.failures, []);
    const diff = await host.diff(urn, created.id, created.outputs, recheck.inputs);
    assert.strictEqual(diff.changes, "some");
    assert.deepStrictEqual(diff.replaces, ["endpoints", "trigger"]);
    const tlsOnly = await host.diff(urn, created.id, created.outputs, { ...inputs, caCert: UNKNOWN, key: UNKNOWN });
    assert.strictEqual(tlsOnly.changes, "none");
    assert.strictEqual(proxy.connections(), connectionsAfterCreate, "Check and Diff opened no connection");
    assert.deepStrictEqual(fs.readdirSync(dir), [path.basename(created.id)], "Check and Diff wrote nothing");
  });

  it("a stream cut mid-way by the network fails Create and leaves no file that looks complete", async () => {
    for (const etcd of [plain, tls]) {
      const proxy = await proxyTo(etcd);
      const scheme = etcd.tls ? "https" : "http";
      const dir = snapshotDir();
      const registration = await registrationOf(() => new EtcdSnapshot("cut", { endpoints: [`${scheme}://${proxy.address}`], directory: dir, trigger: "t", ...(etcd.tls ? tlsArgs(etcd) : {}) }));
      const urn = urnOf(registration.type, registration.name);
      const { inputs, failures } = await host.check(urn, {}, registration.inputs);
      assert.deepStrictEqual(failures, []);
      proxy.cutAfter(600_000);
      const error = await host.create(urn, inputs).then(() => undefined, (err: Error) => err);
      assert.ok(error, `${scheme}: Create must fail on a cut stream`);
      assert.match(error.message, /failed, no file written/);
      assert.ok(proxy.bytesFromServer() >= 600_000, "the cut happened inside the snapshot stream");
      assert.deepStrictEqual(fs.readdirSync(dir), [], `${scheme}: no snapshot, no temp file`);
    }
  });

  it("Check refuses bad inputs with reasons that name the key and never echo key material", async () => {
    const registration = await registrationOf(() => new EtcdSnapshot("bad", {
      endpoints: ["http://127.0.0.1:1", "https://127.0.0.1:2"],
      directory: "",
      trigger: "t",
      caCert: pem(tls.tls!.keyPath),
      cert: pem(tls.tls!.certPath),
      key: pem(tls.tls!.certPath),
    }));
    const { failures } = await host.check(urnOf(registration.type, registration.name), {}, registration.inputs);
    const byKey = Object.fromEntries(failures.map((f) => [f.property, f.reason]));
    assert.match(byKey.endpoints, /mix http:\/\/ and https:\/\//);
    assert.match(byKey.directory, /directory must be a non-empty string/);
    assert.match(byKey.caCert, /caCert must be a PEM certificate/);
    assert.match(byKey.key, /key must be a PEM private key/);
    assertNoPem(JSON.stringify(failures), "the check failures", pem(tls.tls!.keyPath), pem(tls.tls!.certPath));
  });
});
