import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { Etcd3 } from "etcd3";
import { IRequestOp, KVClient } from "etcd3/lib/rpc";
import { EtcdSnapshot, EtcdSnapshotOutputs } from "../dynamic-providers/etcdSnapshot";
import { registrationOf, startProviderHost, urnOf } from "../test/support/providerHost";
import { startEtcd } from "../test/testbed/etcd";
// the test bed's etcd tools (etcdctl and etcdutl of the paired etcd) first on PATH, for the bench and the provider
import "../test/testbed/binPath";
import { resolveTestBedVersion } from "../test/testbed/kubeVersion";

/**
 * `npm run bench:snapshot`: a real etcd filled with ~200 MB (200k keys of 1 KiB by default), then in the same run,
 * alternating, `etcdctl snapshot save` and our provider's Create through the SDK's dynamic-provider host.
 * Ours is timed as streaming + sha256 check + fsync (what etcdctl save does, plus the check) apart from the
 * restore proof (etcdctl snapshot status + restore), which etcdctl save does not do at all.
 * Prints figures only; the target (ours >= 0.9x etcdctl's MB/s) is for the reader, never asserted.
 * BENCH_SNAPSHOT_KEYS and BENCH_SNAPSHOT_ROUNDS change the size and the number of rounds.
 */

const execFileAsync = promisify(execFile);
const KEYS = Number(process.env.BENCH_SNAPSHOT_KEYS ?? 200_000);
const VALUE_BYTES = 1024;
const ROUNDS = Number(process.env.BENCH_SNAPSHOT_ROUNDS ?? 3);
/** etcd's default --max-txn-ops. */
const OPS_PER_TXN = 128;
const PARALLEL_TXNS = 16;

const mb = (bytes: number): number => bytes / 1e6;
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function fill(client: Etcd3): Promise<void> {
  const kv = new KVClient((client as unknown as { pool: ConstructorParameters<typeof KVClient>[0] }).pool);
  const value = (i: number): Buffer => Buffer.from(`${i}:`.padEnd(VALUE_BYTES, String.fromCharCode(33 + (i % 90))));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < KEYS) {
      const start = next;
      next = Math.min(KEYS, next + OPS_PER_TXN);
      const success: IRequestOp[] = [];
      for (let i = start; i < next; i++) {
        success.push({ request_put: { key: Buffer.from(`/registry/bench/${String(i).padStart(7, "0")}`), value: value(i) } });
      }
      await kv.txn({ compare: [], success, failure: [] });
    }
  };
  await Promise.all(Array.from({ length: PARALLEL_TXNS }, worker));
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "snapshot-bench-"));
  const etcd = await startEtcd({ dir: work, extraArgs: ["--quota-backend-bytes", String(8 * 2 ** 30)] });
  console.log(`etcd ${resolveTestBedVersion().etcd} (the test bed's; CIDR_MIGRATION_KUBE_VERSION picks it), etcdctl of the same etcd`);
  const host = await startProviderHost();
  try {
    const client = new Etcd3({ hosts: etcd.endpoint });
    const t0 = performance.now();
    await fill(client);
    const fillSeconds = (performance.now() - t0) / 1000;
    const count = await client.getAll().count();
    client.close();
    console.log(`etcd on ${etcd.endpoint}: ${count} keys of ${VALUE_BYTES} B written in ${fillSeconds.toFixed(1)} s`);

    const ours: Array<{ bytes: number; streamMs: number; proofMs: number; createMs: number }> = [];
    const theirs: Array<{ bytes: number; ms: number }> = [];
    const runEtcdctl = async (round: number): Promise<void> => {
      const file = path.join(work, `etcdctl-${round}.db`);
      const e0 = performance.now();
      await execFileAsync("etcdctl", ["--endpoints", etcd.endpoint, "snapshot", "save", file], { env: { ...process.env, ETCDCTL_API: "3" } });
      theirs.push({ bytes: fs.statSync(file).size, ms: performance.now() - e0 });
      fs.rmSync(file);
    };
    const runOurs = async (round: number): Promise<void> => {
      const dir = path.join(work, `ours-${round}`);
      const registration = await registrationOf(() => new EtcdSnapshot(`bench-${round}`, { endpoints: [etcd.endpoint], directory: dir, trigger: String(round) }));
      const urn = urnOf(registration.type, registration.name);
      const { inputs } = await host.check(urn, {}, registration.inputs);
      const c0 = performance.now();
      const { outputs } = await host.create(urn, inputs);
      const createMs = performance.now() - c0;
      const out = outputs as unknown as EtcdSnapshotOutputs;
      ours.push({ bytes: out.sizeBytes, streamMs: out.streamMillis, proofMs: out.proofMillis, createMs });
      fs.rmSync(dir, { recursive: true, force: true });
    };
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate who goes first, so neither always meets a warmer or busier machine.
      if (round % 2 === 1) { await runEtcdctl(round); await runOurs(round); } else { await runOurs(round); await runEtcdctl(round); }
      const mine = ours[ours.length - 1];
      const other = theirs[theirs.length - 1];
      console.log(
        `round ${round}: etcdctl snapshot save ${mb(other.bytes).toFixed(1)} MB in ${(other.ms / 1000).toFixed(2)} s;`
        + ` ours stream+verify ${(mine.streamMs / 1000).toFixed(2)} s (${(other.ms / mine.streamMs).toFixed(2)}x),`
        + ` restore proof ${(mine.proofMs / 1000).toFixed(2)} s, whole Create ${(mine.createMs / 1000).toFixed(2)} s`,
      );
    }
    const theirRate = median(theirs.map((t) => mb(t.bytes) / (t.ms / 1000)));
    const ourRate = median(ours.map((o) => mb(o.bytes) / (o.streamMs / 1000)));
    const ourCreateRate = median(ours.map((o) => mb(o.bytes) / (o.createMs / 1000)));
    console.log(`snapshot size: ${mb(ours[0].bytes).toFixed(1)} MB (median of ${ROUNDS} rounds below)`);
    console.log(`etcdctl snapshot save:          ${theirRate.toFixed(0)} MB/s`);
    console.log(`ours, stream + sha256 + fsync:  ${ourRate.toFixed(0)} MB/s  -> ${(ourRate / theirRate).toFixed(2)}x etcdctl (target >= 0.9x)`);
    console.log(`ours, whole Create incl. proof: ${ourCreateRate.toFixed(0)} MB/s  (restore proof median ${(median(ours.map((o) => o.proofMs)) / 1000).toFixed(2)} s)`);
  } catch (err) {
    const log = path.join(work, "etcd.log");
    if (fs.existsSync(log)) console.error(`etcd log (last lines):\n${fs.readFileSync(log, "utf8").trim().split("\n").slice(-8).join("\n")}`);
    throw err;
  } finally {
    await host.stop();
    await etcd.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`bench:snapshot failed: ${(err as Error).message}`);
  process.exitCode = 1;
});
