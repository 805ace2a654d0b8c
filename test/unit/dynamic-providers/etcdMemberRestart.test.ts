import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { etcdMemberRestartProvider, EtcdMemberRestartOutputs } from "../../../dynamic-providers/etcdMemberRestart";
import { UserError } from "../../../lib/config/errors";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";
import { sha256HexOf } from "../../../lib/remote/scripts/writeManifest";

const connection = { host: "10.0.0.3", port: 22, user: "root", privateKey: "KEY", dialErrorLimit: 5, perDialTimeoutSeconds: 15 };
const manifest = { path: "/etc/kubernetes/manifests/etcd.yaml", current: "at 10.0.0.3", next: "at 10.0.1.3" };
const inputs = (extra: Record<string, unknown> = {}) => ({
  connection, endpoints: ["https://10.0.0.1:2379", "https://10.0.0.3:2379"], member: "cp-3", from: "10.0.0.3", to: "10.0.1.3", runId: "run-1",
  manifest, backupDir: "/var/lib/cidr-migration/backup/run-1", heldDir: "/etc/kubernetes/cidr-migration-held/run-1",
  healthUrl: "http://127.0.0.1:2381/readyz", timeoutSeconds: 300, ...extra,
});
const olds: EtcdMemberRestartOutputs = { member: "cp-3", from: "10.0.0.3", to: "10.0.1.3", runId: "run-1", manifestSha256: sha256HexOf(manifest.next), action: "restarted", memberId: "42", log: "" };

describe("EtcdMemberRestart provider (no dialling)", () => {
  it("the same inputs change nothing; a new edit, run, address or an edit not yet known run it again", async () => {
    assert.deepEqual(await etcdMemberRestartProvider.diff!("id", olds, inputs()), { changes: false, replaces: [], deleteBeforeReplace: true });
    assert.deepEqual((await etcdMemberRestartProvider.diff!("id", olds, inputs({ manifest: { ...manifest, next: "other" } }))).replaces, ["manifestSha256"]);
    assert.deepEqual((await etcdMemberRestartProvider.diff!("id", olds, inputs({ runId: "run-2", to: "10.0.2.3" }))).replaces, ["to", "runId"]);
    assert.deepEqual((await etcdMemberRestartProvider.diff!("id", olds, inputs({ manifest: UNKNOWN_VALUE }))).changes, true);
  });

  it("refuses, before anything on the node or in etcd, an edit whose manifest names no --advertise-client-urls to wait for", async () => {
    const etcdYaml = fs.readFileSync(path.join(__dirname, "..", "..", "fixtures", "manifests", "v1.29-single-cp-etcd.yaml"), "utf8").split("\n").filter((line) => !line.includes("--advertise-client-urls")).join("\n");
    const without = { ...manifest, current: etcdYaml, next: etcdYaml };
    await assert.rejects(etcdMemberRestartProvider.create!(inputs({ endpoints: ["https://127.0.0.1:1"], manifest: without })), (e: Error) => e instanceof UserError && /etcd\.yaml on cp-3 has no --advertise-client-urls .* nothing was changed/.test(e.message));
  });

  it("check needs an etcd endpoint off the restarting node, and names each missing field", async () => {
    const { failures } = await etcdMemberRestartProvider.check!({}, inputs({ endpoints: ["https://10.0.0.3:2379", "https://10.0.1.3:2379"], member: "", connection: { ...connection, host: "" } }));
    assert.deepEqual(failures!.map((f) => f.property).sort(), ["connection", "endpoints", "member"]);
    assert.match(failures!.find((f) => f.property === "endpoints")!.reason, /another node than 10\.0\.0\.3, whose etcd restarts/);
    assert.deepEqual((await etcdMemberRestartProvider.check!({}, inputs())).failures, []);
  });
});
