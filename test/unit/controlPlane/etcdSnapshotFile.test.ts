import * as assert from "assert";
import { createHash, randomBytes } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { SnapshotHasher, verifySnapshotFile, writeSnapshotAtomically } from "../../../lib/controlPlane/etcdSnapshotFile";

// A real snapshot: `etcdctl snapshot save` from etcd 3.4.23 (see test/fixtures/SOURCES.md).
const FIXTURE = path.join(__dirname, "..", "..", "fixtures", "etcd-snapshot", "etcd-3.4.23-five-keys.db");
const fixture = fs.readFileSync(FIXTURE);
/** Computed here independently: sha256 of everything but the last 32 bytes. */
const fixtureDbSha256 = createHash("sha256").update(fixture.subarray(0, fixture.length - 32)).digest("hex");

function hashInPieces(data: Buffer, sizes: number[]): ReturnType<SnapshotHasher["finish"]> {
  const hasher = new SnapshotHasher();
  let offset = 0;
  let i = 0;
  while (offset < data.length) {
    const size = sizes[i++ % sizes.length];
    hasher.update(data.subarray(offset, offset + size));
    offset += size;
  }
  return hasher.finish();
}

async function* chunksOf(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size);
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "snapfile-unit-"));
}

describe("etcd snapshot file: sha256 trailer and bbolt format", () => {
  it("accepts a real etcdctl snapshot and reports the database sha256 that its trailer holds", async () => {
    const verdict = await verifySnapshotFile(FIXTURE);
    assert.deepStrictEqual(verdict, { ok: true, sizeBytes: fixture.length, sha256: fixtureDbSha256 });
    assert.strictEqual(fixture.subarray(fixture.length - 32).toString("hex"), fixtureDbSha256);
  });

  it("gives the same verdict however the stream is cut into chunks", () => {
    const splits = [[1], [7], [31], [32], [33], [4096], [5, 1, 40, 3, 32, 2000], [fixture.length]];
    for (const sizes of splits) {
      assert.deepStrictEqual(hashInPieces(fixture, sizes), { ok: true, sizeBytes: fixture.length, sha256: fixtureDbSha256 }, `chunk sizes ${sizes}`);
    }
  });

  it("refuses a file cut short by one byte (not whole pages plus trailer)", () => {
    const verdict = hashInPieces(fixture.subarray(0, fixture.length - 1), [1000]);
    assert.strictEqual(verdict.ok, false);
    assert.match(!verdict.ok ? verdict.problem : "", /is 20511 bytes, not 4096-byte pages plus a 32-byte sha256 trailer/);
  });

  it("refuses a file cut at a page boundary whose last 32 bytes are not the hash", () => {
    // Dropping exactly one page keeps the length legal; only the hash can tell.
    const cut = Buffer.concat([fixture.subarray(0, fixture.length - 32 - 4096), fixture.subarray(fixture.length - 32)]);
    const verdict = hashInPieces(cut, [333]);
    assert.strictEqual(verdict.ok, false);
    assert.match(!verdict.ok ? verdict.problem : "", /sha256 trailer that does not match its contents \(it is truncated or corrupted\)/);
  });

  it("refuses a raw bbolt copy without trailer and says so", () => {
    const verdict = hashInPieces(fixture.subarray(0, fixture.length - 32), [4096]);
    assert.strictEqual(verdict.ok, false);
    assert.match(!verdict.ok ? verdict.problem : "", /ends on a bbolt page boundary without the 32-byte sha256 trailer \(a raw member\/snap\/db copy/);
  });

  it("refuses a snapshot with one flipped byte in the middle", () => {
    const flipped = Buffer.from(fixture);
    flipped[9000] ^= 0x01;
    const verdict = hashInPieces(flipped, [4096]);
    assert.strictEqual(verdict.ok, false);
    assert.match(!verdict.ok ? verdict.problem : "", /does not match its contents/);
  });

  it("refuses data that is not bbolt even when its sha256 trailer is right", () => {
    const body = randomBytes(8192);
    const data = Buffer.concat([body, createHash("sha256").update(body).digest()]);
    const verdict = hashInPieces(data, [100]);
    assert.deepStrictEqual(verdict, { ok: false, sizeBytes: data.length, problem: "does not start with a bbolt database header, so it is not an etcd snapshot" });
  });

  it("refuses an empty or tiny file", () => {
    assert.deepStrictEqual(hashInPieces(Buffer.alloc(0), [1]), { ok: false, sizeBytes: 0, problem: "is 0 bytes, too short to be an etcd snapshot" });
    assert.strictEqual(hashInPieces(fixture.subarray(0, 50), [1]).ok, false);
  });
});

describe("etcd snapshot file: atomic write", () => {
  it("writes a verified stream byte for byte and leaves no temporary file", async () => {
    const dir = tempDir();
    const target = path.join(dir, "snap.db");
    const digest = await writeSnapshotAtomically(chunksOf(fixture, 1000), target);
    assert.deepStrictEqual(digest, { sizeBytes: fixture.length, sha256: fixtureDbSha256 });
    assert.ok(fs.readFileSync(target).equals(fixture));
    assert.deepStrictEqual(fs.readdirSync(dir), ["snap.db"]);
    assert.strictEqual(fs.statSync(target).mode & 0o777, 0o600);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a stream that ends early (cleanly) is an error and leaves the directory empty", async () => {
    const dir = tempDir();
    const target = path.join(dir, "snap.db");
    await assert.rejects(
      writeSnapshotAtomically(chunksOf(fixture.subarray(0, 12000), 1000), target),
      /the snapshot stream is 12000 bytes, not 4096-byte pages plus a 32-byte sha256 trailer/,
    );
    await assert.rejects(
      writeSnapshotAtomically(chunksOf(fixture.subarray(0, 12288), 1000), target),
      /the snapshot stream ends on a bbolt page boundary without the 32-byte sha256 trailer/,
    );
    assert.deepStrictEqual(fs.readdirSync(dir), []);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a stream that fails mid-way is an error and leaves the directory empty", async () => {
    const dir = tempDir();
    async function* brokenStream(): AsyncGenerator<Buffer> {
      yield fixture.subarray(0, 8192);
      throw new Error("14 UNAVAILABLE: Connection dropped");
    }
    await assert.rejects(writeSnapshotAtomically(brokenStream(), path.join(dir, "snap.db")), /Connection dropped/);
    assert.deepStrictEqual(fs.readdirSync(dir), []);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("never overwrites an existing snapshot", async () => {
    const dir = tempDir();
    const target = path.join(dir, "snap.db");
    fs.writeFileSync(target, "older snapshot");
    await assert.rejects(writeSnapshotAtomically(chunksOf(fixture, 4096), target), /EEXIST/);
    assert.strictEqual(fs.readFileSync(target, "utf8"), "older snapshot");
    assert.deepStrictEqual(fs.readdirSync(dir), ["snap.db"]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
