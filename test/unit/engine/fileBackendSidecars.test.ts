// engine/fileBackendSidecars: a file backend left unreadable by a killed `pulumi up` (an empty
// <stack>.json.attrs) is mended by removing that sidecar only; the stack files and readable sidecars stay.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { currentBackendUrl, fileBackendDir, removeTruncatedSidecars } from "../../../engine/fileBackendSidecars";

describe("engine/fileBackendSidecars", () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "sidecars-")); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function write(relative: string, content: string): string {
    const file = path.join(dir, ".pulumi", "stacks", relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
    return file;
  }

  it("removes an empty or unreadable .attrs sidecar and nothing else", () => {
    const stack = write("cidr-migration/prod.json", "{\"version\":3}\n");
    const empty = write("cidr-migration/prod.json.attrs", "");
    const cut = write("cidr-migration/dev.json.attrs", "{\"user.content_type\":");
    const good = write("cidr-migration/stage.json.attrs", "{\"user.content_type\":\"application/octet-stream\"}\n");
    const backup = write("cidr-migration/prod.json.bak", "");
    assert.deepEqual(removeTruncatedSidecars(`file://${dir}`).sort(), [cut, empty].sort());
    assert.equal(fs.readFileSync(stack, "utf8"), "{\"version\":3}\n");
    assert.ok(fs.existsSync(good) && fs.existsSync(backup), "readable sidecars and other files stay");
    assert.deepEqual(removeTruncatedSidecars(`file://${dir}`), [], "a second pass finds nothing");
  });

  it("leaves any other backend alone", () => {
    write("p/prod.json.attrs", "");
    assert.deepEqual(removeTruncatedSidecars("https://api.pulumi.com"), []);
    assert.deepEqual(removeTruncatedSidecars(undefined), []);
    assert.deepEqual(removeTruncatedSidecars(`file://${path.join(dir, "nothing-here")}`), []);
  });

  it("finds the backend from PULUMI_BACKEND_URL, else from pulumi login's credentials; file://~ is the home directory", () => {
    assert.equal(currentBackendUrl({ PULUMI_BACKEND_URL: "file:///srv/state" }), "file:///srv/state");
    fs.writeFileSync(path.join(dir, "credentials.json"), JSON.stringify({ current: "file://~/states" }));
    assert.equal(currentBackendUrl({ PULUMI_HOME: dir }), "file://~/states");
    assert.equal(currentBackendUrl({ PULUMI_HOME: path.join(dir, "none") }), undefined);
    assert.equal(fileBackendDir("file://~/states"), path.join(os.homedir(), "states"));
    assert.equal(fileBackendDir("file:///srv/state?no_tmp_dir=true"), "/srv/state");
    assert.equal(fileBackendDir("s3://bucket"), undefined);
  });
});
