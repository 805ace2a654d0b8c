import * as assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { ControlPlane } from "../../../components/controlPlane";
import { REMOTE_SCRIPT_TYPE } from "../../../lib/gate/policyRules";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";
import { MockGraph, captureGraph } from "../../support/pulumiMocks";

/**
 * The pack as the Pulumi CLI runs it: @pulumi/pulumi's run-policy-pack loads policy/ (TypeScript, type-checked,
 * with policy/tsconfig.json), PolicyPack starts the analyzer's gRPC server on 127.0.0.1, and the test speaks the
 * engine's side of the Analyzer protocol to it: GetAnalyzerInfo, Configure, Analyze (one resource) and
 * AnalyzeStack (the real ControlPlane's resources, captured under the SDK's mocks, sent in wire form with
 * secrets as secret values and preview's unknowns as the engine's sentinel). The server process is killed after.
 */

/* eslint-disable @typescript-eslint/no-require-imports */
const REPO = path.resolve(__dirname, "..", "..", "..");
const protoDir = path.dirname(require.resolve("@pulumi/pulumi/proto/analyzer_grpc_pb"));
const fromProto = (id: string) => require(require.resolve(id, { paths: [protoDir] }));
const grpc = fromProto("@grpc/grpc-js");
const analyzerRpc = require("@pulumi/pulumi/proto/analyzer_grpc_pb");
const analyzerPb = require("@pulumi/pulumi/proto/analyzer_pb");
const { Struct } = fromProto("google-protobuf/google/protobuf/struct_pb.js");
const { Empty } = fromProto("google-protobuf/google/protobuf/empty_pb.js");
/* eslint-enable @typescript-eslint/no-require-imports */

const KCM = fs.readFileSync(path.join(REPO, "test", "fixtures", "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");
const APISERVER = fs.readFileSync(path.join(REPO, "test", "fixtures", "manifests", "v1.29-single-cp-kube-apiserver.yaml"), "utf8");
const IPPOOL = "kubernetes:crd.projectcalico.org/v1:IPPool";

interface Diagnostic {
  policy: string;
  message: string;
  urn: string;
  level: number;
}

type Call = (request: unknown, callback: (err: Error | null, response: any) => void) => void;

function call(client: Record<string, Call>, method: string, request: unknown): Promise<any> {
  return new Promise((resolve, reject) => client[method].call(client, request, (err, response) => (err ? reject(err) : resolve(response))));
}

const diagnostics = (response: any): Diagnostic[] =>
  response.getDiagnosticsList().map((d: any) => ({ policy: d.getPolicyname(), message: d.getMessage(), urn: d.getUrn(), level: d.getEnforcementlevel() }));

function resourceRequest(type: string, name: string, properties: Record<string, unknown>): unknown {
  const req = new analyzerPb.AnalyzeRequest();
  req.setType(type);
  req.setName(name);
  req.setUrn(`urn:pulumi:prod::cidr-migration::cidr-migration:calicoIPPool:CalicoIPPool$${type}::${name}`);
  req.setProperties(Struct.fromJavaScript(properties));
  req.setOptions(new analyzerPb.AnalyzerResourceOptions());
  return req;
}

/** The captured resources as the engine sends them to AnalyzeStack. */
function stackRequest(graph: MockGraph, edit: (name: string, wire: Record<string, unknown>, deps: string[]) => string[] = (_n, _w, d) => d): unknown {
  const req = new analyzerPb.AnalyzeStackRequest();
  req.setResourcesList(graph.resources.map((r) => {
    const wire = JSON.parse(JSON.stringify(r.rawInputs)) as Record<string, unknown>;
    const deps = edit(r.name, wire, [...r.dependencies]);
    const resource = new analyzerPb.AnalyzerResource();
    resource.setType(r.type);
    resource.setName(r.name);
    resource.setUrn(r.urn);
    resource.setParent(r.parentUrn);
    resource.setProperties(Struct.fromJavaScript(wire));
    resource.setDependenciesList(deps);
    resource.setOptions(new analyzerPb.AnalyzerResourceOptions());
    return resource;
  }));
  return req;
}

function waitForPort(child: ChildProcess, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => reject(new Error(`the policy pack printed no port within ${timeoutMs} ms; stderr: ${err.slice(-2000)}`)), timeoutMs);
    child.stdout!.on("data", (d) => {
      out += d;
      const m = /^(\d+)\s*$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stderr!.on("data", (d) => (err += d));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the policy pack exited with ${code} before serving; stderr: ${err.slice(-2000)}`));
    });
  });
}

describe("policy pack served by run-policy-pack (Analyzer gRPC on 127.0.0.1)", function () {
  this.timeout(180_000);
  let pack: ChildProcess | undefined;
  let client: Record<string, Call> & { close(): void };
  let graph: MockGraph;

  before(async () => {
    const runner = path.join(path.dirname(require.resolve("@pulumi/pulumi/package.json")), "cmd", "run-policy-pack");
    // As the CLI starts it: <engine address> <program>, in the pack's directory.
    pack = spawn(process.execPath, [runner, "127.0.0.1:0", "."], { cwd: path.join(REPO, "policy"), stdio: ["ignore", "pipe", "pipe"] });
    const port = await waitForPort(pack, 150_000);
    client = new analyzerRpc.AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const nodes = [
      { name: "cp-1", host: "10.0.0.11", port: 22, user: "admin", role: "control-plane" as const },
      { name: "cp-2", host: "10.0.0.12", port: 2222, user: "admin", role: "control-plane" as const },
    ];
    graph = await captureGraph(() => new ControlPlane("cp", {
      nodes,
      ssh: { user: "root", privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n" },
      runId: "2024-05-01",
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
    }), {
      outputs: (r) => (r.type !== REMOTE_SCRIPT_TYPE ? {} : r.name.endsWith("-kcm-read") ? { stdout: Buffer.from(KCM).toString("base64") } : r.name.endsWith("-apiserver-read") ? { stdout: Buffer.from(APISERVER).toString("base64") } : { stdout: "" }),
    });
  });

  after(() => {
    client?.close();
    if (pack?.pid && pack.exitCode === null) process.kill(pack.pid, "SIGKILL");
  });

  it("announces the pack and its three policies", async () => {
    const info = await call(client, "getAnalyzerInfo", new Empty());
    assert.equal(info.getName(), "cidr-migration");
    assert.deepEqual(info.getPoliciesList().map((p: any) => p.getName()), ["calico-pool-in-new-pod-range", "control-plane-flags-agree", "manifest-edit-after-backup"]);
    assert.equal(info.getSupportsconfig(), true);
  });

  it("judges an IPPool against the configured new pod range", async () => {
    const configure = new analyzerPb.ConfigureAnalyzerRequest();
    const config = new analyzerPb.PolicyConfig();
    config.setEnforcementlevel(analyzerPb.EnforcementLevel.MANDATORY);
    config.setProperties(Struct.fromJavaScript({ podCidr: "10.48.0.0/16" }));
    configure.getPolicyconfigMap().set("calico-pool-in-new-pod-range", config);
    await call(client, "configure", configure);
    const pool = (cidr: string) => ({ apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name: "cidr-migration-pool" }, spec: { cidr, blockSize: 26, disabled: false } });
    assert.deepEqual(diagnostics(await call(client, "analyze", resourceRequest(IPPOOL, "calico-new", pool("10.48.0.0/16")))), []);
    const [outside] = diagnostics(await call(client, "analyze", resourceRequest(IPPOOL, "calico-new", pool("10.49.0.0/16"))));
    assert.equal(outside.policy, "calico-pool-in-new-pod-range");
    assert.equal(outside.level, analyzerPb.EnforcementLevel.MANDATORY);
    assert.match(outside.message, /spec\.cidr 10\.49\.0\.0\/16 is not inside the new pod range 10\.48\.0\.0\/16/);
    // At preview time a pool's range the engine does not know yet fails closed (mandatory), not as "can't run".
    const [unknown] = diagnostics(await call(client, "analyze", resourceRequest(IPPOOL, "calico-new", pool(UNKNOWN_VALUE))));
    assert.equal(unknown.level, analyzerPb.EnforcementLevel.MANDATORY);
    assert.match(unknown.message, /spec\.cidr is unknown at preview time/);
  });

  it("passes the real ControlPlane's resources, as they arrive after `up` and at preview time (write scripts unknown)", async () => {
    assert.deepEqual(diagnostics(await call(client, "analyzeStack", stackRequest(graph))), []);
    const preview = stackRequest(graph, (name, wire, deps) => {
      if (name.endsWith("-write")) wire.script = UNKNOWN_VALUE;
      return deps;
    });
    assert.deepEqual(diagnostics(await call(client, "analyzeStack", preview)), []);
  });

  it("reports, as mandatory, a manifest write cut from its backup and flags that differ between nodes", async () => {
    const request = stackRequest(graph, (name, wire, deps) => {
      if (name.endsWith("-write")) wire.script = UNKNOWN_VALUE;
      if (name === "cp-cp-2-apiserver-write") wire.triggers = ["2024-05-01", "/etc/kubernetes/manifests/kube-apiserver.yaml", "--service-cluster-ip-range=10.113.0.0/16"];
      return name === "cp-cp-1-kcm-read" ? deps.filter((d) => !d.endsWith("::cp-cp-1-backup")) : deps;
    });
    const found = diagnostics(await call(client, "analyzeStack", request));
    assert.ok(found.every((d) => d.level === analyzerPb.EnforcementLevel.MANDATORY));
    assert.deepEqual(found.map((d) => [d.policy, d.urn.split("::").pop()]), [
      ["control-plane-flags-agree", "cp-cp-2-apiserver-write"],
      ["manifest-edit-after-backup", "cp-cp-1-kcm-write"],
      ["manifest-edit-after-backup", "cp-cp-1-apiserver-write"],
    ]);
    assert.match(found[0].message, /cp-cp-2-apiserver-write sets --service-cluster-ip-range=10\.113\.0\.0\/16 but cp-cp-1-apiserver-write sets --service-cluster-ip-range=10\.112\.0\.0\/12/);
  });
});
