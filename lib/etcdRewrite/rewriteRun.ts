import { randomUUID } from "crypto";
import { Etcd3, Range } from "etcd3";
import { faultPoint } from "../serviceMove/faultHook";
import { appendJournal, journalLineFor, readAndRepairJournal } from "./rewriteJournal";
import { EtcdEntry, EtcdTxn, keysOf, planRewrite, RewritePlan, RewriteTargets } from "./rewritePlan";

/**
 * Runs the rewrite against etcd while every apiserver is stopped: read the keys it owns, plan (refusing before any
 * write), then journal and commit the transactions in batches. A transaction whose compare fails means someone
 * else wrote the key: the run stops there, naming it, and a re-run plans afresh from what etcd then holds.
 */

export const DEFAULT_REWRITE_CONCURRENCY = 64;
/** Transactions journaled with one fsync, then sent together. */
const BATCH = 512;

export interface RewriteRunOptions {
  targets: RewriteTargets;
  journalPath: string;
  concurrency?: number;
  now?: Date;
  /** Called between planning and the first write (the fault tests write a conflicting value here). */
  afterPlan?: (plan: RewritePlan) => Promise<void>;
}

export interface RewriteRunReport {
  written: number;
  alreadyMoved: number;
  /** Lines found in the journal from an earlier run, and bytes of a cut-off last line dropped from it. */
  journal: { earlierLines: number; truncatedBytes: number };
  /** Seconds spent reading etcd and committing transactions. */
  readSeconds: number;
  writeSeconds: number;
}

export class RewriteRefused extends Error {
  constructor(readonly refusals: string[]) {
    super(`the etcd rewrite was refused before any write:\n- ${refusals.join("\n- ")}`);
    this.name = "RewriteRefused";
  }
}

export class RewriteConflict extends Error {
  constructor(readonly object: string, readonly keys: string[]) {
    super(`the etcd transaction for ${object} was not applied: ${keys.join(", ")} changed since the rewrite read ${keys.length === 1 ? "it" : "them"} (someone else wrote to etcd while the apiservers were down); re-run to plan again from what etcd holds now`);
    this.name = "RewriteConflict";
  }
}

/** Keys per range request: a page of large objects stays well under gRPC's 4 MiB message limit. */
const READ_PAGE = 500;

function entryOf(kv: { key: Buffer; value: Buffer; mod_revision: string }): EtcdEntry {
  return { key: kv.key.toString("utf8"), value: kv.value, modRevision: String(kv.mod_revision) };
}

/** Every key under `prefix` at `revision`, page by page (10,000 Services in one answer exceed gRPC's message limit). */
async function readPrefix(client: Etcd3, prefix: string, revision: string, pageSize: number): Promise<EtcdEntry[]> {
  const end = Range.prefix(prefix).end;
  const entries: EtcdEntry[] = [];
  let start: Buffer = Buffer.from(prefix);
  for (;;) {
    const page = await client.getAll().inRange(new Range(start, end)).revision(revision).limit(pageSize).exec();
    entries.push(...page.kvs.map(entryOf));
    if (!page.more || page.kvs.length === 0) return entries;
    // the next page starts right after the last key read
    start = Buffer.concat([page.kvs[page.kvs.length - 1].key, Buffer.from([0])]);
  }
}

/** Every key the rewrite owns, read at one revision (the newest, or `atRevision`), so the plan sees one moment. */
export async function readRewriteScope(client: Etcd3, prefix: string, atRevision?: number | string, pageSize = READ_PAGE): Promise<EtcdEntry[]> {
  const keys = keysOf(prefix);
  // the first read fixes the revision (unless one is given) that every other read uses
  const bitmap = await (atRevision === undefined ? client.get(keys.serviceIpRange) : client.get(keys.serviceIpRange).revision(atRevision)).exec();
  const revision = String(atRevision ?? bitmap.header.revision);
  const lists = await Promise.all([keys.services, keys.nodes, keys.ipAddresses, keys.serviceCidrs].map((p) => readPrefix(client, p, revision, pageSize)));
  return [...lists.flat(), ...bitmap.kvs.map(entryOf)];
}

async function commit(client: Etcd3, txn: EtcdTxn): Promise<void> {
  const [first, ...rest] = txn.compare;
  let builder = client.if(first.key, "Mod", "==", first.modRevision);
  for (const c of rest) builder = builder.and(c.key, "Mod", "==", c.modRevision);
  const ops = [...txn.put.map((p) => client.put(p.key).value(p.value)), ...txn.delete.map((key) => client.delete().key(key))];
  const result = await builder.then(...ops).commit();
  if (!result.succeeded) throw new RewriteConflict(txn.object, txn.compare.map((c) => c.key));
}

export async function planFromEtcd(client: Etcd3, targets: RewriteTargets, now = new Date()): Promise<{ entries: EtcdEntry[]; plan: RewritePlan }> {
  const entries = await readRewriteScope(client, targets.prefix);
  return { entries, plan: planRewrite(entries, targets, { newUid: randomUUID, now }) };
}

export async function runRewrite(client: Etcd3, options: RewriteRunOptions): Promise<RewriteRunReport> {
  const journal = readAndRepairJournal(options.journalPath);
  const readStart = process.hrtime.bigint();
  const { entries, plan } = await planFromEtcd(client, options.targets, options.now);
  const readSeconds = Number(process.hrtime.bigint() - readStart) / 1e9;
  if (plan.refusals.length > 0) throw new RewriteRefused(plan.refusals);

  await options.afterPlan?.(plan);
  const valuesBefore = new Map(entries.map((e) => [e.key, e.value]));
  const concurrency = Math.max(1, options.concurrency ?? DEFAULT_REWRITE_CONCURRENCY);
  const writeStart = process.hrtime.bigint();
  let written = 0;
  for (let start = 0; start < plan.txns.length; start += BATCH) {
    const batch = plan.txns.slice(start, start + BATCH);
    appendJournal(options.journalPath, batch.map((txn) => journalLineFor(txn, valuesBefore, new Date())));
    let next = 0;
    let failure: unknown;
    const lane = async () => {
      while (failure === undefined && next < batch.length) {
        const txn = batch[next++];
        const faultKey = txn.compare[0].key;
        faultPoint("rewrite-after-journal", faultKey);
        try {
          await commit(client, txn);
        } catch (err) {
          failure ??= err;
          return;
        }
        faultPoint("rewrite-after-txn", faultKey);
        written++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, batch.length) }, lane));
    if (failure !== undefined) throw failure;
  }
  return {
    written,
    alreadyMoved: plan.alreadyMoved,
    journal: { earlierLines: journal.lines.length, truncatedBytes: journal.truncatedBytes },
    readSeconds,
    writeSeconds: Number(process.hrtime.bigint() - writeStart) / 1e9,
  };
}
