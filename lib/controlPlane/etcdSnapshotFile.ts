import { createHash, Hash, randomBytes } from "crypto";
import * as fs from "fs";
import * as path from "path";

/**
 * An etcd v3 snapshot file, as the Maintenance.Snapshot stream sends it and `etcdctl snapshot save` writes it:
 * a bbolt database followed by a 32-byte sha256 of that database. `etcdctl snapshot restore` refuses a file
 * whose trailer does not match, so we check the same thing (plus the bbolt header) before calling a file good.
 */

export const SHA256_TRAILER_BYTES = 32;

// bbolt's first page is a meta page: a 16-byte page header (id u64, flags u16, count u16, overflow u32),
// then the meta (magic u32, version u32, pageSize u32, ...), all little-endian.
const BOLT_META_PAGE_FLAG = 0x04;
const BOLT_MAGIC = 0xed0cdaed;
const BOLT_VERSION = 2;
const BOLT_HEADER_BYTES = 28;

export interface SnapshotDigest {
  /** Bytes in the whole file, trailer included. */
  sizeBytes: number;
  /** sha256 (hex) of the database part, i.e. what the trailer must hold. */
  sha256: string;
}

export type SnapshotVerdict = ({ ok: true } & SnapshotDigest) | { ok: false; problem: string; sizeBytes: number };

/**
 * Hashes a snapshot as it streams past without knowing where it ends: the last 32 bytes seen so far are held
 * back, because they are the trailer (not hashed) if the stream stops there.
 */
export class SnapshotHasher {
  private readonly hash: Hash;
  private held: Buffer;
  private head: Buffer;
  private total: number;

  // Assigned here, not as field initializers: Pulumi's closure serializer (the dynamic provider runs this code
  // from its serialized text) keeps the constructor body but drops ES2022 class field initializers.
  constructor() {
    this.hash = createHash("sha256");
    this.held = Buffer.alloc(0);
    this.head = Buffer.alloc(0);
    this.total = 0;
  }

  update(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    if (this.head.length < BOLT_HEADER_BYTES) {
      this.head = Buffer.concat([this.head, Buffer.from(chunk.subarray(0, BOLT_HEADER_BYTES - this.head.length))]);
    }
    if (chunk.length >= SHA256_TRAILER_BYTES) {
      if (this.held.length > 0) this.hash.update(this.held);
      this.hash.update(chunk.subarray(0, chunk.length - SHA256_TRAILER_BYTES));
      // Copy: the caller may reuse the chunk's memory.
      this.held = Buffer.from(chunk.subarray(chunk.length - SHA256_TRAILER_BYTES));
      return;
    }
    const joined = Buffer.concat([this.held, chunk]);
    const spill = joined.length - SHA256_TRAILER_BYTES;
    if (spill > 0) this.hash.update(joined.subarray(0, spill));
    this.held = spill > 0 ? joined.subarray(spill) : joined;
  }

  /** The verdict for everything seen; call once, at the end of the stream. */
  finish(): SnapshotVerdict {
    const sizeBytes = this.total;
    const dbBytes = sizeBytes - SHA256_TRAILER_BYTES;
    if (dbBytes < BOLT_HEADER_BYTES) {
      return { ok: false, sizeBytes, problem: `is ${sizeBytes} bytes, too short to be an etcd snapshot` };
    }
    const formatProblem = boltHeaderProblem(this.head, dbBytes, sizeBytes);
    if (formatProblem) return { ok: false, sizeBytes, problem: formatProblem };
    const actual = this.hash.digest("hex");
    const expected = this.held.toString("hex");
    if (actual !== expected) {
      return { ok: false, sizeBytes, problem: "has a sha256 trailer that does not match its contents (it is truncated or corrupted); take a new snapshot" };
    }
    return { ok: true, sizeBytes, sha256: actual };
  }
}

function boltHeaderProblem(head: Buffer, dbBytes: number, sizeBytes: number): string | undefined {
  const flags = head.readUInt16LE(8);
  const magic = head.readUInt32LE(16);
  const version = head.readUInt32LE(20);
  const pageSize = head.readUInt32LE(24);
  if (flags !== BOLT_META_PAGE_FLAG || magic !== BOLT_MAGIC) {
    return "does not start with a bbolt database header, so it is not an etcd snapshot";
  }
  if (version !== BOLT_VERSION) {
    return `has bbolt format version ${version}; etcd snapshots use version ${BOLT_VERSION}`;
  }
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) {
    return `declares a bbolt page size of ${pageSize}, which is not a valid page size (corrupted)`;
  }
  // A bbolt database is a whole number of pages; the stream adds exactly the 32-byte trailer.
  if (sizeBytes % pageSize === 0) {
    return "ends on a bbolt page boundary without the 32-byte sha256 trailer (a raw member/snap/db copy, or cut short between pages)";
  }
  if (dbBytes % pageSize !== 0) {
    return `is ${sizeBytes} bytes, not ${pageSize}-byte pages plus a 32-byte sha256 trailer (truncated or corrupted)`;
  }
  return undefined;
}

/** Streams a file through SnapshotHasher; never loads it whole. */
export async function verifySnapshotFile(filePath: string): Promise<SnapshotVerdict> {
  const hasher = new SnapshotHasher();
  const stream = fs.createReadStream(filePath, { highWaterMark: 1 << 20 });
  for await (const chunk of stream) hasher.update(chunk as Buffer);
  return hasher.finish();
}

export class SnapshotStreamError extends Error {
  constructor(message: string) {
    super(message);
    this.message = message; // see UserError
  }
}

/** Chunks are gathered up to this size per write, so the 32 KiB stream messages don't each cost a syscall. */
const WRITE_BATCH_BYTES = 1 << 20;

/**
 * Writes a snapshot stream to `finalPath` so that a file at that path is always complete and verified:
 * the bytes go to a hidden temporary file in the same directory, which is fsynced and checked and only then
 * hard-linked into place (a link never overwrites: an existing file at finalPath is an error). On any failure,
 * including a stream that ends early or errors, the temporary file is removed.
 */
export async function writeSnapshotAtomically(chunks: AsyncIterable<Uint8Array>, finalPath: string): Promise<SnapshotDigest> {
  const dir = path.dirname(finalPath);
  const tempPath = path.join(dir, `.${path.basename(finalPath)}.partial-${randomBytes(6).toString("hex")}`);
  const hasher = new SnapshotHasher();
  const file = await fs.promises.open(tempPath, "wx", 0o600);
  // One batch is written while the next one is received: the stream never waits for the disk unless it is behind.
  let writing: Promise<void> = Promise.resolve();
  try {
    let batch: Buffer[] = [];
    let batchBytes = 0;
    const flush = async (): Promise<void> => {
      await writing;
      if (batchBytes === 0) return;
      const write = writeAll(file, batch, batchBytes);
      write.catch(() => undefined); // handled when awaited at the next flush; never an unhandled rejection meanwhile
      writing = write;
      batch = [];
      batchBytes = 0;
    };
    for await (const chunk of chunks) {
      hasher.update(chunk);
      batch.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      batchBytes += chunk.byteLength;
      if (batchBytes >= WRITE_BATCH_BYTES) await flush();
    }
    await flush();
    await writing;
    const verdict = hasher.finish();
    if (!verdict.ok) throw new SnapshotStreamError(`the snapshot stream ${verdict.problem}`);
    await file.sync();
    await file.close();
    await fs.promises.link(tempPath, finalPath);
    await fs.promises.rm(tempPath);
    await fsyncDirectory(dir);
    return { sizeBytes: verdict.sizeBytes, sha256: verdict.sha256 };
  } finally {
    await writing.catch(() => undefined);
    await file.close().catch(() => undefined);
    await fs.promises.rm(tempPath, { force: true });
  }
}

/** writev until every byte is written (one syscall, no copy into a joined buffer). */
async function writeAll(file: fs.promises.FileHandle, buffers: Buffer[], total: number): Promise<void> {
  let written = 0;
  while (written < total) {
    const { bytesWritten } = await file.writev(written === 0 ? buffers : remainderOf(buffers, written));
    written += bytesWritten;
  }
}

/** The buffers left after the first `offset` bytes (a short writev). */
function remainderOf(buffers: Buffer[], offset: number): Buffer[] {
  const rest: Buffer[] = [];
  let skip = offset;
  for (const b of buffers) {
    if (skip >= b.length) { skip -= b.length; continue; }
    rest.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return rest;
}

/** Makes a new directory entry (the link, the temp file's removal) durable. */
async function fsyncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
