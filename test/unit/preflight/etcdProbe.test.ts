import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { NOT_A_DIRECTORY, probeSnapshotDirectory } from "../../../lib/preflight/etcdProbe";

// The snapshot-directory probe on the real file system: it proves a file can be created, and leaves nothing behind.
describe("preflight etcd probe: the snapshot directory", () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "preflight-probe-"))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("an existing directory takes a file, and the temp file is gone afterwards", async () => {
    const probe = await probeSnapshotDirectory(dir);
    assert.deepStrictEqual({ ...probe, freeBytes: undefined }, { directory: dir, exists: true, testedDirectory: dir, writable: true, freeBytes: undefined });
    assert.ok(probe.freeBytes! > 0);
    assert.deepStrictEqual(fs.readdirSync(dir), []);
  });

  it("a missing directory is tested in its nearest existing parent (the snapshot creates it)", async () => {
    const missing = path.join(dir, "a", "b");
    const probe = await probeSnapshotDirectory(missing);
    assert.strictEqual(probe.exists, false);
    assert.strictEqual(probe.testedDirectory, dir);
    assert.strictEqual(probe.writable, true);
    assert.ok(!fs.existsSync(path.join(dir, "a")), "nothing is created");
    assert.deepStrictEqual(fs.readdirSync(dir), []);
  });

  it("a file where the directory should be is not writable", async () => {
    const file = path.join(dir, "file");
    fs.writeFileSync(file, "x");
    const probe = await probeSnapshotDirectory(file);
    assert.strictEqual(probe.writable, false);
    assert.strictEqual(probe.error, NOT_A_DIRECTORY);
  });

  it("expands ~ to the home directory, as the snapshot provider does", async () => {
    const probe = await probeSnapshotDirectory("~/.cidr-migration-preflight-test-missing/snapshots");
    assert.strictEqual(probe.testedDirectory, os.homedir());
  });
});
