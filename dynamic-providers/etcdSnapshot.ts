import * as pulumi from "@pulumi/pulumi";
import { Etcd3, IOptions } from "etcd3";
import { ICallable, ISnapshotResponse, KVClient, MaintenanceClient } from "etcd3/lib/rpc";
import * as fs from "fs";
import * as path from "path";
import { Readable } from "stream";
import { writeSnapshotAtomically } from "../lib/controlPlane/etcdSnapshotFile";
import { AUTO_SNAPSHOT_TOOL, runSnapshotTool } from "../lib/controlPlane/etcdSnapshotTool";
import { etcdctlRestoreArgs } from "../lib/controlPlane/restoreRunbook";
import { etcdClientOptions } from "../lib/config/etcdClientOptions";
import { containsUnknown, sameAsRecorded, secretIfGiven, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * An etcd snapshot taken before anything in the migration changes, and proven to restore.
 *
 * The provider is serialized into the state and run by the engine's dynamic-provider host, so it captures no
 * live object: every method builds its own etcd client from its inputs and closes it. check and diff run during
 * preview and never touch etcd or the disk. The TLS material is an input only; it never enters the outputs.
 */

export const ETCD_SNAPSHOT_PROVIDER_VERSION = "1";

export interface EtcdSnapshotArgs {
  /** Client URLs of the etcd cluster, e.g. ["https://10.0.0.11:2379"]. The snapshot comes from the first healthy one. */
  endpoints: pulumi.Input<pulumi.Input<string>[]>;
  /** PEM CA bundle that signed etcd's serving cert (kubeadm: /etc/kubernetes/pki/etcd/ca.crt). Stored as a secret. */
  caCert?: pulumi.Input<string>;
  /** PEM client certificate (kubeadm: healthcheck-client.crt or apiserver-etcd-client.crt). Stored as a secret. */
  cert?: pulumi.Input<string>;
  /** PEM private key of the client certificate. Stored as a secret. */
  key?: pulumi.Input<string>;
  /** Directory on the machine running `pulumi up` that receives the snapshot file; created if missing. */
  directory: pulumi.Input<string>;
  /** Change it to take a new snapshot. Nothing else (not even new TLS material) takes one. */
  trigger: pulumi.Input<string>;
  /** The provider's behaviour version recorded with the snapshot. Default ETCD_SNAPSHOT_PROVIDER_VERSION. */
  version?: pulumi.Input<string>;
  /** Keep the file when the resource is deleted or replaced (default true): a rollback may still need it. */
  keepOnDelete?: pulumi.Input<boolean>;
  /**
   * The command that proves the snapshot restores: etcdutl (etcd 3.5+; 3.6's etcdctl has no restore) or etcdctl
   * (3.4). Default "auto": etcdutl when on PATH, else etcdctl.
   */
  etcdctl?: pulumi.Input<string>;
}

/** What the engine stores: no TLS material, only facts about the file. */
export interface EtcdSnapshotOutputs {
  endpoints: string[];
  directory: string;
  trigger: string;
  version: string;
  keepOnDelete: boolean;
  etcdctl: string;
  /** Absolute path of the snapshot file. */
  path: string;
  sizeBytes: number;
  /** sha256 (hex) of the database, the value in the file's 32-byte trailer. */
  sha256: string;
  /** etcd revision the snapshot holds. */
  revision: number;
  /** Keys live at that revision, counted by the source cluster. */
  keyCount: number;
  /** ISO time the stream started. */
  takenAt: string;
  /** Milliseconds spent streaming + verifying, and proving the restore (benchmarks read these). */
  streamMillis: number;
  proofMillis: number;
  /** One line saying how the restore was proven. */
  restoreProof: string;
}

interface SnapshotInputs {
  endpoints: string[];
  caCert?: string;
  cert?: string;
  key?: string;
  directory: string;
  trigger: string;
  version: string;
  keepOnDelete: boolean;
  etcdctl: string;
}

/** Changing any of these takes a new snapshot (a replacement); the old file stays unless keepOnDelete is false. */
const SNAPSHOT_IDENTITY = ["endpoints", "directory", "trigger"] as const;
/** Changing these only records the new value. TLS material is deliberately in neither list. */
const IN_PLACE = ["version", "keepOnDelete", "etcdctl"] as const;

/** Any PEM block in a message becomes a marker: etcd, gRPC or OpenSSL errors must not carry key material out. */
function withoutPem(message: string): string {
  return message.replace(/-----BEGIN [^-]+-----[\s\S]*?(-----END [^-]+-----|$)/g, "[PEM redacted]");
}

function describeError(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return withoutPem(text.split("\n")[0]);
}

type SnapshotWire = Wire<SnapshotInputs>;

function checkInputs(news: SnapshotWire): { inputs: SnapshotWire; failures: pulumi.dynamic.CheckFailure[] } {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const fail = (property: string, reason: string): void => { failures.push({ property, reason }); };
  const inputs: SnapshotWire = { ...news };
  const known = (key: keyof SnapshotInputs): boolean => news[key] !== undefined && !containsUnknown(news[key]);

  if (news.endpoints === undefined) {
    fail("endpoints", "endpoints is required: the etcd client URLs, e.g. [\"https://10.0.0.11:2379\"]");
  } else if (known("endpoints")) {
    const endpoints = news.endpoints;
    if (!Array.isArray(endpoints) || endpoints.length === 0 || endpoints.some((e) => typeof e !== "string")) {
      fail("endpoints", `endpoints must be a non-empty list of URLs like "https://10.0.0.11:2379"; got ${JSON.stringify(endpoints)}`);
    } else {
      for (const endpoint of endpoints as string[]) {
        if (!/^https?:\/\/[^/\s]+:\d+\/?$/.test(endpoint)) {
          fail("endpoints", `endpoint "${endpoint}" must look like https://HOST:PORT (or http:// for an etcd without TLS)`);
        }
      }
    }
  }
  for (const key of ["directory", "trigger"] as const) {
    if (news[key] === undefined) fail(key, `${key} is required`);
    else if (known(key) && (typeof news[key] !== "string" || (news[key] as string).trim() === "")) {
      fail(key, `${key} must be a non-empty string; got ${JSON.stringify(news[key])}`);
    }
  }
  const pemChecks: Array<[keyof SnapshotInputs, RegExp, string]> = [
    ["caCert", /-----BEGIN CERTIFICATE-----/, "a PEM certificate (-----BEGIN CERTIFICATE-----)"],
    ["cert", /-----BEGIN CERTIFICATE-----/, "a PEM certificate (-----BEGIN CERTIFICATE-----)"],
    ["key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/, "a PEM private key (-----BEGIN ... PRIVATE KEY-----)"],
  ];
  for (const [key, pattern, what] of pemChecks) {
    if (!known(key)) continue;
    const value = news[key];
    // Never echo the value: it may be key material.
    if (typeof value !== "string" || !pattern.test(value)) fail(key, `${key} must be ${what}; the value given (${typeof value === "string" ? `${value.length} characters` : typeof value}) is not`);
  }
  if ((news.cert === undefined) !== (news.key === undefined)) {
    fail(news.cert === undefined ? "cert" : "key", "cert and key go together: give both (a client certificate and its key) or neither");
  }
  if (known("endpoints") && Array.isArray(news.endpoints)) {
    const plain = (news.endpoints as unknown[]).filter((e) => String(e).startsWith("http://"));
    if (plain.length > 0 && plain.length < news.endpoints.length) {
      fail("endpoints", "endpoints mix http:// and https://; the etcd client needs one scheme for all of them");
    } else if (plain.length > 0 && (news.caCert !== undefined || news.cert !== undefined)) {
      fail("endpoints", `TLS material was given but ${plain[0]} uses http://; use https:// endpoints with TLS`);
    }
  }
  if (news.version === undefined) inputs.version = ETCD_SNAPSHOT_PROVIDER_VERSION;
  else if (known("version") && typeof news.version !== "string") fail("version", `version must be a string; got ${JSON.stringify(news.version)}`);
  if (news.keepOnDelete === undefined) inputs.keepOnDelete = true;
  else if (known("keepOnDelete") && typeof news.keepOnDelete !== "boolean") fail("keepOnDelete", `keepOnDelete must be true or false; got ${JSON.stringify(news.keepOnDelete)}`);
  if (news.etcdctl === undefined) inputs.etcdctl = AUTO_SNAPSHOT_TOOL;
  else if (known("etcdctl") && (typeof news.etcdctl !== "string" || news.etcdctl === "")) fail("etcdctl", `etcdctl must be a command name or path; got ${JSON.stringify(news.etcdctl)}`);
  return { inputs, failures };
}

function diffInputs(olds: EtcdSnapshotOutputs, news: SnapshotWire): pulumi.dynamic.DiffResult {
  const changed = (key: (typeof SNAPSHOT_IDENTITY)[number] | (typeof IN_PLACE)[number]): boolean => containsUnknown(news[key]) || !sameAsRecorded(news[key], olds[key]);
  const replaces = SNAPSHOT_IDENTITY.filter(changed);
  const updates = IN_PLACE.filter(changed);
  if (replaces.length > 0) return { changes: true, replaces: [...replaces], deleteBeforeReplace: false };
  return { changes: updates.length > 0 };
}

function clientOptions(inputs: SnapshotInputs): IOptions {
  return etcdClientOptions(inputs.endpoints, inputs, {
    dialTimeout: 10_000,
    // grpc-js's default 64 KiB HTTP/2 window lets only two 32 KiB snapshot messages fly per round trip; Go's
    // client (etcdctl) grows its window. With 16 MiB the stream runs at etcdctl's speed (bench/snapshot.bench.ts).
    grpcOptions: { "grpc-node.flow_control_window": 16 << 20 },
  });
}

/** etcd3 reaches the Maintenance and raw KV services only through its generated rpc clients, built on the pool. */
function rpcPool(client: Etcd3): ICallable<unknown> {
  return (client as unknown as { pool: ICallable<unknown> }).pool;
}

/** Live keys and the current revision, or the keys live at `revision` (MVCC history) when given. */
async function countKeys(client: Etcd3, revision?: number): Promise<{ count: number; revision: number }> {
  const all = Buffer.from([0]);
  const response = await new KVClient(rpcPool(client)).range({ key: all, range_end: all, count_only: true, revision: revision ?? 0 });
  return { count: Number(response.count), revision: Number(response.header.revision) };
}

/** The Maintenance.Snapshot stream's blobs in order; read with backpressure (grpc's stream is a Node Readable). */
async function* snapshotChunks(client: Etcd3): AsyncGenerator<Uint8Array> {
  const stream: unknown = await new MaintenanceClient(rpcPool(client)).snapshot();
  if (!(stream instanceof Readable)) throw new Error("etcd3 returned a snapshot stream that is not a Node Readable");
  for await (const message of stream as AsyncIterable<ISnapshotResponse>) {
    yield message.blob;
  }
}

function runEtcdctl(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return runSnapshotTool(command, args);
}

/**
 * Proves the file restores, the way an operator would restore it: `etcdctl snapshot status` reads the bbolt
 * database (its revision, its key entries) and `etcdctl snapshot restore` checks the sha256 trailer and builds a
 * member data dir from it (in a scratch dir next to the snapshot, removed afterwards). The revision it holds must
 * be the one the source cluster was at while the stream ran.
 */
async function proveRestorable(etcdctl: string, file: string, revisionWindow: { from: number; to: number }): Promise<{ revision: number; totalKey: number; line: string }> {
  const status = JSON.parse((await runEtcdctl(etcdctl, ["snapshot", "status", file, "-w", "json"])).stdout) as { revision: number; totalKey: number; hash: number };
  const scratch = await fs.promises.mkdtemp(path.join(path.dirname(file), ".restore-proof-"));
  try {
    const dataDir = path.join(scratch, "data");
    await runEtcdctl(etcdctl, etcdctlRestoreArgs({
      snapshotPath: file,
      dataDir,
      name: "restore-proof",
      initialCluster: "restore-proof=http://127.0.0.1:2380",
      initialAdvertisePeerUrls: "http://127.0.0.1:2380",
    }));
    const restoredDb = await fs.promises.stat(path.join(dataDir, "member", "snap", "db")).catch(() => undefined);
    if (!restoredDb || restoredDb.size === 0) throw new Error(`snapshot restore made no member/snap/db from ${file}`);
  } finally {
    await fs.promises.rm(scratch, { recursive: true, force: true });
  }
  // A fresh cluster is at revision 1 with an empty key bucket, which status reports as revision 0.
  const revision = status.revision === 0 && revisionWindow.from === 1 ? 1 : status.revision;
  if (revision < revisionWindow.from || revision > revisionWindow.to) {
    throw new Error(`the snapshot holds revision ${status.revision}, but etcd was between revisions ${revisionWindow.from} and ${revisionWindow.to} while it streamed; it is not a snapshot of this cluster, take a new one`);
  }
  return { revision, totalKey: status.totalKey, line: `snapshot status: revision ${status.revision}, ${status.totalKey} bbolt keys; snapshot restore: ok` };
}

async function takeSnapshot(inputs: SnapshotInputs): Promise<EtcdSnapshotOutputs> {
  const directory = path.resolve(inputs.directory);
  await fs.promises.mkdir(directory, { recursive: true, mode: 0o700 });
  const takenAt = new Date().toISOString();
  const file = path.join(directory, `etcd-snapshot-${takenAt.replace(/[:.]/g, "-")}.db`);
  const client = new Etcd3(clientOptions(inputs));
  try {
    let before: { count: number; revision: number };
    try {
      before = await countKeys(client);
    } catch (err) {
      throw new Error(`cannot reach etcd at ${inputs.endpoints.join(",")}: ${describeError(err)}; check endpoints and the TLS material`);
    }
    const streamStart = Date.now();
    let digest: { sizeBytes: number; sha256: string };
    try {
      digest = await writeSnapshotAtomically(snapshotChunks(client), file);
    } catch (err) {
      throw new Error(`snapshot of ${inputs.endpoints.join(",")} into ${directory} failed, no file written: ${describeError(err)}`);
    }
    const streamMillis = Date.now() - streamStart;
    const after = await countKeys(client);
    const proofStart = Date.now();
    let proof: { revision: number; totalKey: number; line: string };
    try {
      proof = await proveRestorable(inputs.etcdctl, file, { from: before.revision, to: after.revision });
    } catch (err) {
      // Fail closed: an unproven file must not look like a usable snapshot.
      await fs.promises.rm(file, { force: true });
      throw new Error(`snapshot ${file} could not be proven to restore and was removed: ${describeError(err)}`);
    }
    const keyCount = proof.revision === before.revision ? before.count : (await countKeys(client, proof.revision)).count;
    if (proof.totalKey < keyCount) {
      await fs.promises.rm(file, { force: true });
      throw new Error(`snapshot ${file} has ${proof.totalKey} bbolt keys but etcd had ${keyCount} live keys at revision ${proof.revision}; removed, take a new one`);
    }
    return {
      endpoints: inputs.endpoints,
      directory: inputs.directory,
      trigger: inputs.trigger,
      version: inputs.version,
      keepOnDelete: inputs.keepOnDelete,
      etcdctl: inputs.etcdctl,
      path: file,
      sizeBytes: digest.sizeBytes,
      sha256: digest.sha256,
      revision: proof.revision,
      keyCount,
      takenAt,
      streamMillis,
      proofMillis: Date.now() - proofStart,
      restoreProof: proof.line,
    };
  } finally {
    client.close();
  }
}

/** The inputs once check passes on them, defaults applied; or every failure in one error. */
function asInputs(news: SnapshotWire): SnapshotInputs {
  const { failures } = checkInputs(news);
  if (failures.length > 0) throw new Error(failures.map((f) => `${f.property}: ${f.reason}`).join("; "));
  return {
    endpoints: news.endpoints as string[],
    caCert: news.caCert as string | undefined,
    cert: news.cert as string | undefined,
    key: news.key as string | undefined,
    directory: news.directory as string,
    trigger: news.trigger as string,
    version: (news.version as string | undefined) ?? ETCD_SNAPSHOT_PROVIDER_VERSION,
    keepOnDelete: (news.keepOnDelete as boolean | undefined) ?? true,
    etcdctl: (news.etcdctl as string | undefined) ?? AUTO_SNAPSHOT_TOOL,
  };
}

export const etcdSnapshotProvider: TypedProvider<SnapshotInputs, EtcdSnapshotOutputs> = {
  async check(_olds, news) {
    return checkInputs(news);
  },

  async diff(_id, olds, news) {
    return diffInputs(olds, news);
  },

  async create(news) {
    const outs = await takeSnapshot(asInputs(news));
    return { id: outs.path, outs };
  },

  async update(_id, olds, news) {
    // Only version/keepOnDelete/etcdctl reach here (diff replaces on everything else): record them, touch nothing.
    const inputs = asInputs(news);
    return { outs: { ...olds, version: inputs.version, keepOnDelete: inputs.keepOnDelete, etcdctl: inputs.etcdctl } };
  },

  async delete(_id, props) {
    if (props.keepOnDelete === false) await fs.promises.rm(props.path, { force: true });
  },
};

/** Outputs that would be secret if a future provider version echoed them; today they are never in the outputs. */
const TLS_PROPERTIES = ["caCert", "cert", "key"];

export class EtcdSnapshot extends pulumi.dynamic.Resource {
  declare readonly path: pulumi.Output<string>;
  declare readonly sizeBytes: pulumi.Output<number>;
  declare readonly sha256: pulumi.Output<string>;
  declare readonly revision: pulumi.Output<number>;
  declare readonly keyCount: pulumi.Output<number>;
  declare readonly takenAt: pulumi.Output<string>;
  declare readonly restoreProof: pulumi.Output<string>;

  constructor(name: string, args: EtcdSnapshotArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      etcdSnapshotProvider,
      name,
      {
        endpoints: args.endpoints,
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        directory: args.directory,
        trigger: args.trigger,
        version: args.version ?? ETCD_SNAPSHOT_PROVIDER_VERSION,
        keepOnDelete: args.keepOnDelete ?? true,
        etcdctl: args.etcdctl ?? AUTO_SNAPSHOT_TOOL,
        path: undefined,
        sizeBytes: undefined,
        sha256: undefined,
        revision: undefined,
        keyCount: undefined,
        takenAt: undefined,
        restoreProof: undefined,
      },
      withSecretOutputs(opts, TLS_PROPERTIES),
      "cidr-migration",
      "EtcdSnapshot",
    );
  }
}
