// A control-plane node's etcd member follows its node to a new address (issue 16), on a real three-member etcd
// of the test-bed version: member m3's peer URL is updated in place, m3 restarts listening on its new address
// (127.0.0.3, a loopback address of its own) after handing its leadership on, and a writer writes through m1 and
// m2 the whole time. Every write it was told succeeded is there afterwards, and quorum never went (no write failed).
import { strict as assert } from "assert";
import { Etcd3 } from "etcd3";
import { UserError } from "../../lib/config/errors";
import { handOffLeadership, moveEtcdPeer } from "../../lib/controlPlane/etcdPeerMove";
import { waitUntil } from "../testbed/processes";
import { assertNothingLost, makeLeader, startWriter, useEtcdTrio } from "../support/etcdTrio";

describe("etcd peer move on a real three-member cluster (issue 16)", function () {
  this.timeout(120_000);
  const useTrio = useEtcdTrio("cidr-migration-peer-move");

  it("updates m3's peer URL in place, m3 restarts on its new address, and no write is lost or refused throughout", async () => {
    const trio = useTrio();
    const [m1, m2, m3] = trio.members;
    const client = new Etcd3({ hosts: [trio.clientUrl(m1), trio.clientUrl(m2)] });
    const writer = startWriter(client);
    try {
      await writer.goesOn("before the move");
      const before = (await client.cluster.memberList({})).members.find((m) => m.name === "m3")!;
      await makeLeader(trio, m3);
      const successor = await handOffLeadership(client, "m3", (urls) => new Etcd3({ hosts: urls }));
      assert.ok(successor === "m1" || successor === "m2", `leadership went to ${successor}`);
      assert.equal(await handOffLeadership(client, "m3", (urls) => new Etcd3({ hosts: urls })), undefined, "m3 leads no more");
      await writer.goesOn("after the hand-off");

      const moved = await moveEtcdPeer(client, { member: "m3", from: "127.0.0.1", to: "127.0.0.3" });
      assert.equal(moved.action, "updated");
      assert.equal(moved.memberId, before.ID, "the member keeps its ID");
      assert.deepEqual(moved.after, [`http://127.0.0.3:${m3.peer}`]);
      await writer.goesOn("after the peer URL update");

      // the node's restart on its new address (kubeadm: the static pod with the edited manifest)
      await m3.proc!.stop();
      await writer.goesOn("while m3 is down");
      m3.host = "127.0.0.3";
      trio.start(m3, trio.initialCluster());
      await waitUntil(() => trio.healthy(m3), { timeoutMs: 30_000, what: "m3 serving again on 127.0.0.3" });
      await writer.goesOn("after m3 is back");
    } finally {
      await writer.stop();
    }
    try {
      await assertNothingLost(trio, writer, "127.0.0.3");
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
