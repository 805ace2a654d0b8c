// A control-plane node's etcd member follows its node to a new address (issue 16), on a real three-member etcd
// of the test-bed version: member m3's peer URL is updated in place, m3 restarts listening on its new address
// (127.0.0.3, a loopback address of its own) after handing its leadership on, and a writer writes through m1 and
// m2 the whole time. Every write it was told succeeded is there afterwards, and quorum never went (no write failed).
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Etcd3 } from "etcd3";
import { UserError } from "../../lib/config/errors";
import { handOffLeadership, moveEtcdPeer } from "../../lib/controlPlane/etcdPeerMove";
import { ETCD_BINARY, freePort } from "../testbed/etcd";
import { ManagedProcess, startProcess, waitUntil } from "../testbed/processes";

interface Member { name: string; host: string; peer: number; client: number; proc?: ManagedProcess }

describe("etcd peer move on a real three-member cluster (issue 16)", function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-etcd3-"));
  const members: Member[] = [];
  const peerUrl = (m: Member) => `http://${m.host}:${m.peer}`;
  const clientUrl = (m: Member) => `http://127.0.0.1:${m.client}`;

  function start(m: Member, initialCluster: string): void {
    m.proc = startProcess(ETCD_BINARY, [
      `--name=${m.name}`,
      `--data-dir=${path.join(dir, m.name)}`,
      `--listen-peer-urls=${peerUrl(m)}`,
      `--initial-advertise-peer-urls=${peerUrl(m)}`,
      `--listen-client-urls=${clientUrl(m)}`,
      `--advertise-client-urls=${clientUrl(m)}`,
      `--initial-cluster=${initialCluster}`,
      "--initial-cluster-state=new",
      "--initial-cluster-token=cidr-migration-peer-move",
    ], path.join(dir, `${m.name}.log`));
  }

  const healthy = async (m: Member) => {
    const client = new Etcd3({ hosts: clientUrl(m), dialTimeout: 1000 });
    try {
      await client.put(`health/${m.name}`).value("ok");
      return true;
    } catch {
      return false;
    } finally {
      client.close();
    }
  };

  before(async () => {
    for (const name of ["m1", "m2", "m3"]) members.push({ name, host: "127.0.0.1", peer: await freePort(), client: await freePort() });
    const initialCluster = members.map((m) => `${m.name}=${peerUrl(m)}`).join(",");
    for (const m of members) start(m, initialCluster);
    for (const m of members) await waitUntil(() => healthy(m), { timeoutMs: 30_000, what: `etcd member ${m.name} serving` });
  });
  after(async () => {
    for (const m of members) await m.proc?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("updates m3's peer URL in place, m3 restarts on its new address, and no write is lost or refused throughout", async () => {
    const [m1, m2, m3] = members;
    const client = new Etcd3({ hosts: [clientUrl(m1), clientUrl(m2)] });
    const acknowledged: string[] = [];
    const failed: string[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const key = `writer/${String(i).padStart(6, "0")}`;
        try {
          await client.put(key).value(String(i));
          acknowledged.push(key);
        } catch (err) {
          failed.push(`${key}: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    // every phase of the move must let writes through: each waits for a few more acknowledged writes (a lost quorum
    // would stall them, and the wait would fail naming the phase)
    const writesGoOn = async (phase: string) => {
      const seen = acknowledged.length;
      await waitUntil(async () => acknowledged.length >= seen + 3, { timeoutMs: 30_000, what: `writes acknowledged ${phase}` });
    };
    try {
      await writesGoOn("before the move");
      const before = (await client.cluster.memberList({})).members.find((m) => m.name === "m3")!;
      // m3 is made to lead first, so that the hand-off is exercised every run; then it hands leadership on
      const viaM3 = new Etcd3({ hosts: clientUrl(m3) });
      const leaderNow = (await viaM3.maintenance.status()).leader;
      if (leaderNow !== before.ID) {
        const leader = (await viaM3.cluster.memberList({})).members.find((m) => m.ID === leaderNow)!;
        const viaLeader = new Etcd3({ hosts: leader.clientURLs });
        await viaLeader.maintenance.moveLeader({ targetID: before.ID });
        viaLeader.close();
      }
      viaM3.close();
      const successor = await handOffLeadership(client, "m3", (urls) => new Etcd3({ hosts: urls }));
      assert.ok(successor === "m1" || successor === "m2", `leadership went to ${successor}`);
      assert.equal(await handOffLeadership(client, "m3", (urls) => new Etcd3({ hosts: urls })), undefined, "m3 leads no more");
      await writesGoOn("after the hand-off");

      const moved = await moveEtcdPeer(client, { member: "m3", from: "127.0.0.1", to: "127.0.0.3" });
      assert.equal(moved.action, "updated");
      assert.equal(moved.memberId, before.ID, "the member keeps its ID");
      assert.deepEqual(moved.after, [`http://127.0.0.3:${m3.peer}`]);
      await writesGoOn("after the peer URL update");

      // the node's restart on its new address (kubeadm: the static pod with the edited manifest)
      await m3.proc!.stop();
      await writesGoOn("while m3 is down");
      m3.host = "127.0.0.3";
      start(m3, members.map((m) => `${m.name}=${peerUrl(m)}`).join(","));
      await waitUntil(() => healthy(m3), { timeoutMs: 30_000, what: "m3 serving again on 127.0.0.3" });
      await writesGoOn("after m3 is back");
    } finally {
      writing = false;
      await writer;
    }
    try {
      assert.deepEqual(failed, [], "quorum held: no write was refused");
      // every write the cluster acknowledged is there, read through the moved member
      const m3Client = new Etcd3({ hosts: clientUrl(m3) });
      try {
        const stored = await m3Client.getAll().prefix("writer/").keys();
        assert.deepEqual(acknowledged.filter((k) => !stored.includes(k)), [], "no acknowledged write is missing");
        const listed = (await m3Client.cluster.memberList({})).members.map((m) => [m.name, m.peerURLs]);
        assert.deepEqual(listed.sort(), [["m1", [peerUrl(m1)]], ["m2", [peerUrl(m2)]], ["m3", [`http://127.0.0.3:${m3.peer}`]]]);
      } finally {
        m3Client.close();
      }
      // a second run finds it moved and changes nothing
      assert.equal((await moveEtcdPeer(client, { member: "m3", from: "127.0.0.1", to: "127.0.0.3" })).action, "already");
      // a member that is not there, or not on the old address, is refused before any change
      await assert.rejects(moveEtcdPeer(client, { member: "cp-9", from: "127.0.0.1", to: "127.0.0.9" }), (e: Error) => e instanceof UserError && /no member named cp-9 \(members: m1, m2, m3\)/.test(e.message));
      await assert.rejects(moveEtcdPeer(client, { member: "m2", from: "10.0.0.2", to: "127.0.0.9" }), (e: Error) => e instanceof UserError && /none on 10\.0\.0\.2; check nodeAddresses\[\]\.from/.test(e.message));
    } finally {
      client.close();
    }
  });
});
