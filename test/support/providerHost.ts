// Drives a dynamic provider the way `pulumi up` does, without the Pulumi CLI (which these machines cannot have):
// the SDK's own dynamic-provider host process, spoken to over its ResourceProvider gRPC interface, with the
// `__provider` property produced by the SDK's own serialization, and secrets/unknowns handled as the engine does.
//
// Values are plain JS objects. A secret is `secret(value)` (the engine's wire form: the
// 4dabf18193072939515e22adb298388d signature key); an unknown (preview) value is UNKNOWN.
import * as grpc from "@grpc/grpc-js";
import * as pulumi from "@pulumi/pulumi";
import * as providerGrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as providerProto from "@pulumi/pulumi/proto/provider_pb";
import * as rpc from "@pulumi/pulumi/runtime/rpc";
import { ChildProcess, spawn } from "child_process";
import * as path from "path";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

export const SIG_KEY = rpc.specialSigKey;
export const SECRET_SIG = rpc.specialSecretSig;
export const UNKNOWN = rpc.unknownValue;
export const PROVIDER_KEY = "__provider";

const REPO_ROOT = path.resolve(__dirname, "..", "..");
const HOST_SCRIPT = path.join(REPO_ROOT, "node_modules", "@pulumi", "pulumi", "cmd", "dynamic-provider", "index.js");

export type Props = Record<string, unknown>;
export interface SecretValue { [SIG_KEY]: typeof SECRET_SIG; value: unknown }

/** The engine's wire form of a secret (the same object the SDK's internal rpc.serializeSecretValue builds). */
export function secret(value: unknown): SecretValue {
  return { [SIG_KEY]: SECRET_SIG, value: value === undefined ? null : value } as SecretValue;
}

export function isSecret(value: unknown): value is SecretValue {
  return typeof value === "object" && value !== null && (value as Record<string, unknown>)[SIG_KEY] === SECRET_SIG;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What a provider that does not accept secrets receives: the engine unwraps every secret before sending. */
export function stripSecrets(value: unknown): unknown {
  if (isSecret(value)) return stripSecrets(value.value);
  if (Array.isArray(value)) return value.map(stripSecrets);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, stripSecrets(v)]));
  return value;
}

/** The engine re-marks a provider's results: whatever was secret in what it sent stays secret in what comes back. */
export function annotateSecrets(outs: unknown, ins: unknown): unknown {
  if (isSecret(ins)) return isSecret(outs) ? outs : secret(outs);
  if (Array.isArray(outs) && Array.isArray(ins)) return outs.map((o, i) => annotateSecrets(o, ins[i]));
  if (isPlainObject(outs) && isPlainObject(ins) && !isSecret(outs)) {
    return Object.fromEntries(Object.entries(outs).map(([k, v]) => [k, k in ins ? annotateSecrets(v, ins[k]) : v]));
  }
  return outs;
}

/** Props as the engine writes them to the state file: each secret's value is replaced by ciphertext. */
export function asPersisted(value: unknown): unknown {
  if (isSecret(value)) return { [SIG_KEY]: SECRET_SIG, ciphertext: "<encrypted by the stack's secrets provider>" };
  if (Array.isArray(value)) return value.map(asPersisted);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asPersisted(v)]));
  return value;
}

function withoutUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : withoutUndefined(v)));
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, withoutUndefined(v)]));
  }
  return value;
}

function toStruct(props: Props): Struct {
  return Struct.fromJavaScript(withoutUndefined(props) as Record<string, never>);
}

/**
 * The `__provider` string exactly as pulumi.dynamic.Resource computes it: the same SDK call
 * (serializeFunction(() => provider, { allowSecrets: true }), see @pulumi/pulumi/dynamic/index.js).
 */
export async function serializeDynamicProvider(provider: pulumi.dynamic.ResourceProvider): Promise<string> {
  const serialized = await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true });
  return serialized.text;
}

export interface Registration {
  type: string;
  name: string;
  /** The RegisterResource request's object, as the SDK put it on the wire (secrets in wire form, __provider included). */
  inputs: Props;
  additionalSecretOutputs: string[];
}

/**
 * Runs a resource's constructor in the real SDK runtime (with its mock monitor standing in for the engine) and
 * returns what it registers: the inputs exactly as `pulumi up` would send them, `__provider` included.
 */
export async function registrationOf(construct: () => pulumi.Resource): Promise<Registration> {
  await pulumi.runtime.setMocks({
    newResource: (args) => ({ id: `${args.name}-id`, state: {} }),
    call: () => ({}),
  }, "cidr-migration", "test", false);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const settings = require("@pulumi/pulumi/runtime/settings") as { getMonitor(): { registerResource: (req: unknown, cb: unknown) => unknown } };
  const monitor = settings.getMonitor();
  const original = monitor.registerResource.bind(monitor);
  const registered = new Promise<Registration>((resolve) => {
    monitor.registerResource = (req: unknown, cb: unknown) => {
      const request = req as { getType(): string; getName(): string; getObject(): Struct | undefined; getAdditionalsecretoutputsList(): string[] };
      resolve({
        type: request.getType(),
        name: request.getName(),
        inputs: (request.getObject()?.toJavaScript() ?? {}) as Props,
        additionalSecretOutputs: request.getAdditionalsecretoutputsList(),
      });
      return original(req, cb);
    };
  });
  construct();
  return registered;
}

export function urnOf(type: string, name: string, stack = "test", project = "cidr-migration"): string {
  return `urn:pulumi:${stack}::${project}::${type}::${name}`;
}

export type DiffChanges = "none" | "some" | "unknown";

export interface WireExchange {
  method: string;
  request: Buffer;
  /** The serialized response message, as it crossed the wire (absent on error). */
  response?: Buffer;
  error?: string;
}

export interface CallOptions {
  /** The resource option of the same name: the engine marks these outputs secret. */
  additionalSecretOutputs?: string[];
}

export interface ProviderHost {
  pid: number;
  port: number;
  /** What the host answered to Configure; false for the Node dynamic-provider host. */
  acceptsSecrets: boolean;
  check(urn: string, olds: Props, news: Props): Promise<{ inputs: Props; failures: Array<{ property: string; reason: string }> }>;
  diff(urn: string, id: string, olds: Props, news: Props): Promise<{ changes: DiffChanges; replaces: string[]; deleteBeforeReplace: boolean }>;
  create(urn: string, props: Props, opts?: CallOptions): Promise<{ id: string; outputs: Props }>;
  update(urn: string, id: string, olds: Props, news: Props, opts?: CallOptions): Promise<{ outputs: Props }>;
  delete(urn: string, id: string, props: Props): Promise<void>;
  /** Every request and response so far, serialized, in order. */
  wire: WireExchange[];
  /** The host process's stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

interface Message { serializeBinary(): Uint8Array }
type Unary<Req, Res> = (request: Req, callback: (err: grpc.ServiceError | null, response: Res) => void) => unknown;

function waitForPort(child: ChildProcess, output: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    let buffered = "";
    const onData = (data: Buffer): void => {
      buffered += data.toString();
      const line = buffered.split("\n").find((l) => /^\d+$/.test(l.trim()));
      if (line) {
        child.stdout?.off("data", onData);
        resolve(Number(line.trim()));
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`dynamic-provider host exited (${code}) before printing its port:\n${output()}`)));
  });
}

function applySecretOutputs(outputs: Props, names: string[] | undefined): Props {
  const result = { ...outputs };
  for (const name of names ?? []) {
    if (name in result && !isSecret(result[name])) result[name] = secret(result[name]);
  }
  return result;
}

/**
 * Starts `node node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js 127.0.0.1:0`. Its one argument is the
 * engine address, which it only requires to be present; it binds 127.0.0.1 on a free port and prints the port
 * on stdout. Then it is Configured as the engine does before any resource call.
 */
export async function startProviderHost(opts: { cwd?: string } = {}): Promise<ProviderHost> {
  let output = "";
  const child = spawn(process.execPath, [HOST_SCRIPT, "127.0.0.1:0"], {
    cwd: opts.cwd ?? REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (d: Buffer) => { output += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { output += d.toString(); });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let port: number;
  try {
    port = await waitForPort(child, () => output);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  const client = new providerGrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const wire: WireExchange[] = [];

  function call<Req extends Message, Res extends Message>(method: string, fn: Unary<Req, Res>, request: Req): Promise<Res> {
    const exchange: WireExchange = { method, request: Buffer.from(request.serializeBinary()) };
    wire.push(exchange);
    return new Promise((resolve, reject) => {
      fn.call(client, request, (err, response) => {
        if (err) {
          exchange.error = err.details || err.message;
          reject(new Error(`${method}: ${exchange.error}`));
        } else {
          exchange.response = Buffer.from(response.serializeBinary());
          resolve(response);
        }
      });
    });
  }

  const configure = new providerProto.ConfigureRequest();
  configure.setArgs(toStruct({}));
  configure.setAcceptsecrets(true);
  configure.setAcceptresources(true);
  const configured = await call("Configure", client.configure as Unary<providerProto.ConfigureRequest, providerProto.ConfigureResponse>, configure);
  const acceptsSecrets = configured.getAcceptsecrets();
  /** What actually goes on the wire to this provider. */
  const outbound = (props: Props): Struct => toStruct((acceptsSecrets ? props : stripSecrets(props)) as Props);

  const host: ProviderHost = {
    pid: child.pid as number,
    port,
    acceptsSecrets,
    wire,
    output: () => output,

    async check(urn, olds, news) {
      const request = new providerProto.CheckRequest();
      request.setUrn(urn);
      request.setOlds(outbound(olds));
      request.setNews(outbound(news));
      const response = await call("Check", client.check as Unary<providerProto.CheckRequest, providerProto.CheckResponse>, request);
      return {
        inputs: annotateSecrets(response.getInputs()?.toJavaScript() ?? {}, news) as Props,
        failures: response.getFailuresList().map((f) => ({ property: f.getProperty(), reason: f.getReason() })),
      };
    },

    async diff(urn, id, olds, news) {
      const request = new providerProto.DiffRequest();
      request.setUrn(urn);
      request.setId(id);
      request.setOlds(outbound(olds));
      request.setNews(outbound(news));
      const response = await call("Diff", client.diff as Unary<providerProto.DiffRequest, providerProto.DiffResponse>, request);
      const kinds = providerProto.DiffResponse.DiffChanges;
      const changes = response.getChanges();
      return {
        changes: changes === kinds.DIFF_NONE ? "none" : changes === kinds.DIFF_SOME ? "some" : "unknown",
        replaces: response.getReplacesList(),
        deleteBeforeReplace: response.getDeletebeforereplace(),
      };
    },

    async create(urn, props, callOpts = {}) {
      const request = new providerProto.CreateRequest();
      request.setUrn(urn);
      request.setProperties(outbound(props));
      const response = await call("Create", client.create as Unary<providerProto.CreateRequest, providerProto.CreateResponse>, request);
      const outputs = annotateSecrets(response.getProperties()?.toJavaScript() ?? {}, props) as Props;
      return { id: response.getId(), outputs: applySecretOutputs(outputs, callOpts.additionalSecretOutputs) };
    },

    async update(urn, id, olds, news, callOpts = {}) {
      const request = new providerProto.UpdateRequest();
      request.setUrn(urn);
      request.setId(id);
      request.setOlds(outbound(olds));
      request.setNews(outbound(news));
      const response = await call("Update", client.update as Unary<providerProto.UpdateRequest, providerProto.UpdateResponse>, request);
      const outputs = annotateSecrets(response.getProperties()?.toJavaScript() ?? {}, news) as Props;
      return { outputs: applySecretOutputs(outputs, callOpts.additionalSecretOutputs) };
    },

    async delete(urn, id, props) {
      const request = new providerProto.DeleteRequest();
      request.setUrn(urn);
      request.setId(id);
      request.setProperties(outbound(props));
      await call("Delete", client.delete as Unary<providerProto.DeleteRequest, Message>, request);
    },

    async stop() {
      client.close();
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
  return host;
}
