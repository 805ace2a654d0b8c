import { AlarmAction, AlarmType, Etcd3, IOptions } from "etcd3";
import { etcdClientOptions } from "../config/etcdClientOptions";
import { randomBytes } from "crypto";
import * as fs from "fs";
import * as path from "path";
import { expandHome } from "../config/paths";
import { keysOf } from "../etcdRewrite/rewritePlan";
import { DEFAULT_ETCD_PREFIX } from "../etcdRewrite/rewriteTargets";

/**
 * Reads what the etcd preflight check judges: each endpoint's status and alarms (through etcd3), whether the
 * snapshot directory takes a file (a temp file is created there and removed), and for services.strategy
 * etcd-rewrite one stored Service and one stored Node. The only I/O of the etcd family; lib/preflight/etcd.ts and
 * etcdRewriteStorage.ts turn the result into findings.
 */

export interface EtcdCredentials {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

export type EndpointStatus =
  | { endpoint: string; ok: true; version: string; dbSizeBytes: number; memberId: string; leader: string; alarms: string[] }
  | { endpoint: string; ok: false; error: string };

/** The probe's error when the configured path is a file or something else that is no directory. */
export const NOT_A_DIRECTORY = "not a directory";

export interface SnapshotDirectoryProbe {
  /** As configured (cidr-migration:snapshot.directory). */
  directory: string;
  exists: boolean;
  /** The directory the temp file went into: the configured one, or its nearest existing parent when it is missing. */
  testedDirectory: string;
  writable: boolean;
  error?: string;
  freeBytes?: number;
}

export interface SampledKey {
  key: string;
  value: Buffer;
}

/** The first Service and the first Node value under the keys the etcd rewrite reads (lib/etcdRewrite/rewritePlan.ts). */
export interface RewriteKeySample {
  servicePrefix: string;
  nodePrefix: string;
  /** Undefined when nothing is stored under the prefix (or the read failed). */
  service?: SampledKey;
  node?: SampledKey;
  /** Why the read failed, when it did. */
  error?: string;
}

export interface EtcdProbe {
  endpoints: string[];
  /** Why the health check did not run (no usable credentials); the snapshot directory is still probed. */
  skippedReason?: string;
  statuses: EndpointStatus[];
  snapshotDirectory: SnapshotDirectoryProbe;
  /** Read when asked (services.strategy etcd-rewrite) and some endpoint answered its status request. */
  rewriteSample?: RewriteKeySample;
}

export interface EtcdProbeOptions {
  endpoints: string[];
  credentials?: EtcdCredentials;
  skippedReason?: string;
  snapshotDirectory: string;
  /** Per endpoint (default 5 s). */
  timeoutMs?: number;
  /** Also read one Service and one Node value (services.strategy etcd-rewrite judges their stored format). */
  sampleRewriteKeys?: boolean;
}

export async function probeEtcd(opts: EtcdProbeOptions): Promise<EtcdProbe> {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const health = async (): Promise<Pick<EtcdProbe, "statuses" | "rewriteSample">> => {
    if (opts.skippedReason) return { statuses: [] };
    const statuses = await Promise.all(opts.endpoints.map((e) => endpointStatus(e, opts.credentials, timeoutMs)));
    // endpoints that do not answer are ETCD_UNREACHABLE already; the sample is read from those that do
    const answering = statuses.filter((s) => s.ok).map((s) => s.endpoint);
    if (!opts.sampleRewriteKeys || answering.length === 0) return { statuses };
    return { statuses, rewriteSample: await readRewriteSample(answering, opts.credentials, timeoutMs) };
  };
  const [{ statuses, rewriteSample }, snapshotDirectory] = await Promise.all([health(), probeSnapshotDirectory(opts.snapshotDirectory)]);
  return { endpoints: opts.endpoints, skippedReason: opts.skippedReason, statuses, snapshotDirectory, ...(rewriteSample ? { rewriteSample } : {}) };
}

function clientOptions(endpoint: string, credentials: EtcdCredentials | undefined, timeoutMs: number): IOptions {
  return etcdClientOptions([endpoint], { caCert: credentials?.ca, cert: credentials?.cert, key: credentials?.key }, { dialTimeout: timeoutMs });
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to ${what} within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The first line of an etcd client error, without what grpc-js appends that says nothing: an empty
 * "Resolution note: " (its name resolver had no note) and a doubled "Error: " prefix.
 */
export function grpcErrorText(err: unknown): string {
  return String((err as Error)?.message ?? err)
    .split("\n")[0]
    .replace(/\.?\s*Resolution note:\s*$/, "")
    .replace(/Last error: Error: /, "Last error: ")
    .trim();
}

/** One client per endpoint: etcd3 would otherwise pick any healthy host and hide the one that is down. */
async function endpointStatus(endpoint: string, credentials: EtcdCredentials | undefined, timeoutMs: number): Promise<EndpointStatus> {
  const client = new Etcd3(clientOptions(endpoint, credentials, timeoutMs));
  try {
    const deadline = () => ({ deadline: Date.now() + timeoutMs });
    const status = await withTimeout(client.maintenance.status(deadline()), timeoutMs, "status");
    const alarms = await withTimeout(client.maintenance.alarm({ action: AlarmAction.Get, memberID: "0", alarm: AlarmType.None }, deadline()), timeoutMs, "alarm list");
    return {
      endpoint,
      ok: true,
      version: status.version,
      dbSizeBytes: Number(status.dbSize),
      memberId: String(status.header.member_id),
      leader: String(status.leader),
      alarms: (alarms.alarms ?? []).map((a) => `${String(a.alarm)} on member ${a.memberID}`),
    };
  } catch (err) {
    return { endpoint, ok: false, error: grpcErrorText(err) };
  } finally {
    client.close();
  }
}

/** The first key under a prefix and its value; undefined when none is stored there. */
export type FirstKeyReader = (prefix: string) => Promise<SampledKey | undefined>;

/**
 * One Service and one Node, read where the rewrite reads them. One of each is a sample, not proof: the rewrite
 * itself refuses any value it cannot handle before its first write (rewritePlan.ts); this only says so earlier.
 */
export async function sampleRewriteKeys(read: FirstKeyReader, prefix = DEFAULT_ETCD_PREFIX): Promise<RewriteKeySample> {
  const keys = keysOf(prefix);
  const sample: RewriteKeySample = { servicePrefix: keys.services, nodePrefix: keys.nodes };
  try {
    const [service, node] = await Promise.all([read(keys.services), read(keys.nodes)]);
    return { ...sample, service, node };
  } catch (err) {
    return { ...sample, error: grpcErrorText(err) };
  }
}

/** A range read with limit 1 per prefix: one value each, however many objects the cluster holds. */
async function readRewriteSample(endpoints: string[], credentials: EtcdCredentials | undefined, timeoutMs: number): Promise<RewriteKeySample> {
  const client = new Etcd3(etcdClientOptions(endpoints, { caCert: credentials?.ca, cert: credentials?.cert, key: credentials?.key }, { dialTimeout: timeoutMs }));
  try {
    return await sampleRewriteKeys(async (prefix) => {
      const range = await withTimeout(client.getAll().prefix(prefix).limit(1).exec(), timeoutMs, `a read of ${prefix}`);
      const kv = range.kvs[0];
      return kv ? { key: kv.key.toString("utf8"), value: kv.value } : undefined;
    });
  } finally {
    client.close();
  }
}

/** The configured directory, or when it does not exist yet the nearest parent that does (the snapshot creates it). */
function nearestExisting(directory: string): string {
  let dir = path.resolve(directory);
  while (!fs.existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

export async function probeSnapshotDirectory(directory: string): Promise<SnapshotDirectoryProbe> {
  // The snapshot provider expands ~ the same way (index.ts), so both look at the same place.
  const resolved = path.resolve(expandHome(directory));
  const exists = fs.existsSync(resolved);
  const tested = exists ? resolved : nearestExisting(resolved);
  const probe: SnapshotDirectoryProbe = { directory, exists, testedDirectory: tested, writable: false };
  if (exists && !fs.statSync(resolved).isDirectory()) {
    probe.error = NOT_A_DIRECTORY;
    return probe;
  }
  // Proving it takes a file is the only reliable test (permissions, read-only mounts, quotas, ACLs all differ).
  const temp = path.join(tested, `.cidr-migration-preflight-${process.pid}-${randomBytes(4).toString("hex")}`);
  try {
    const handle = await fs.promises.open(temp, "wx", 0o600);
    await handle.close();
    probe.writable = true;
  } catch (err) {
    probe.error = (err as NodeJS.ErrnoException).code ?? String(err);
  } finally {
    await fs.promises.rm(temp, { force: true });
  }
  try {
    const stats = await fs.promises.statfs(tested);
    probe.freeBytes = Number(stats.bavail) * Number(stats.bsize);
  } catch {
    // statfs is informative only
  }
  return probe;
}
