import * as fs from "fs";
import { EtcdTxn } from "./rewritePlan";

/**
 * The rewrite's journal: one JSON line per etcd transaction, made durable (fsync) before the transaction is sent.
 * It holds each touched key's value as it was, so an operator can see, and undo, exactly what was written. A crash
 * while appending leaves a partial last line: that transaction was never sent, so the line is dropped on reading.
 */

export interface JournalLine {
  at: string;
  object: string;
  /** Each key the transaction touches, with its value before (base64; null when it did not exist). */
  before: { key: string; modRevision: string; value: string | null }[];
}

export interface JournalRead {
  lines: JournalLine[];
  /** Bytes of a partial last line that were cut away. */
  truncatedBytes: number;
}

/** Reads the journal and cuts a partial last line off the file, so appending goes on from a clean end. */
export function readAndRepairJournal(path: string): JournalRead {
  if (!fs.existsSync(path)) return { lines: [], truncatedBytes: 0 };
  const text = fs.readFileSync(path, "utf8");
  const complete = text.lastIndexOf("\n") + 1;
  const lines: JournalLine[] = [];
  for (const line of text.slice(0, complete).split("\n")) {
    if (line.trim() !== "") lines.push(JSON.parse(line) as JournalLine);
  }
  const truncatedBytes = Buffer.byteLength(text.slice(complete));
  if (truncatedBytes > 0) fs.truncateSync(path, Buffer.byteLength(text.slice(0, complete)));
  return { lines, truncatedBytes };
}

export function journalLineFor(txn: EtcdTxn, valuesBefore: Map<string, Buffer>, at: Date): JournalLine {
  return {
    at: at.toISOString(),
    object: txn.object,
    before: txn.compare.map((c) => ({ key: c.key, modRevision: c.modRevision, value: valuesBefore.get(c.key)?.toString("base64") ?? null })),
  };
}

/** Appends the lines and fsyncs them: they are on disk before any of their transactions is sent. */
export function appendJournal(path: string, lines: JournalLine[]): void {
  if (lines.length === 0) return;
  const fd = fs.openSync(path, "a", 0o600);
  try {
    fs.writeSync(fd, lines.map((l) => JSON.stringify(l) + "\n").join(""));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
