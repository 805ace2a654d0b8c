import { strict as assert } from "assert";
import { Etcd3 } from "etcd3";
import { UserError } from "../../../lib/config/errors";
import { checkPeerMove, moveEtcdPeer, movedUrl } from "../../../lib/controlPlane/etcdPeerMove";

/** A client whose member list is `members` and which records updates: the refusals need no cluster. */
function clientWith(members: Array<{ name: string; peerURLs: string[]; clientURLs?: string[] }>) {
  const updates: unknown[] = [];
  const client = {
    cluster: {
      memberList: async () => ({ members: members.map((m, i) => ({ ID: String(i + 1), clientURLs: [`https://${m.name}:2379`], ...m })) }),
      memberUpdate: async (req: unknown) => void updates.push(req),
    },
  } as unknown as Etcd3;
  return { client, updates };
}

describe("lib/controlPlane etcdPeerMove (issue 16)", () => {
  it("moves only the host of a URL, IPv6 in brackets; other URLs stay", () => {
    assert.equal(movedUrl("https://192.168.10.11:2380", "192.168.10.11", "192.168.20.11"), "https://192.168.20.11:2380");
    assert.equal(movedUrl("https://[fd00:1::11]:2380", "fd00:1::11", "fd00:2::11"), "https://[fd00:2::11]:2380");
    assert.equal(movedUrl("https://192.168.10.110:2380", "192.168.10.11", "192.168.20.11"), "https://192.168.10.110:2380");
  });

  it("refuses without quorum to spare, or with a member not started, before any change", async () => {
    const two = clientWith([{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }]);
    await assert.rejects(moveEtcdPeer(two.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }), (e: Error) => e instanceof UserError && /has 2 member\(s\): restarting cp-2 on its new address would leave no majority/.test(e.message));
    const unstarted = clientWith([
      { name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }, { name: "", peerURLs: ["https://10.0.0.3:2380"], clientURLs: [] },
    ]);
    await assert.rejects(moveEtcdPeer(unstarted.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }), /https:\/\/10\.0\.0\.3:2380 have not started/);
    assert.deepEqual([...two.updates, ...unstarted.updates], []);
  });

  it("checks without changing anything: the member there, on its old peer URL or (a re-run) its new one", async () => {
    const three = clientWith([{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }, { name: "cp-3", peerURLs: ["https://10.0.1.3:2380"] }]);
    assert.equal((await checkPeerMove(three.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" })).name, "cp-2");
    assert.equal((await checkPeerMove(three.client, { member: "cp-3", from: "10.0.0.3", to: "10.0.1.3" })).name, "cp-3", "moved already");
    await assert.rejects(checkPeerMove(three.client, { member: "cp-4", from: "10.0.0.4", to: "10.0.1.4" }), /etcd has no member named cp-4 \(members: cp-1, cp-2, cp-3\)/);
    await assert.rejects(checkPeerMove(three.client, { member: "cp-1", from: "10.0.0.9", to: "10.0.1.9" }), /etcd member cp-1 has peer URLs https:\/\/10\.0\.0\.1:2380, none on 10\.0\.0\.9/);
    assert.deepEqual(three.updates, []);
    assert.equal((await moveEtcdPeer(three.client, { member: "cp-3", from: "10.0.0.3", to: "10.0.1.3" })).action, "already");
    assert.equal((await moveEtcdPeer(three.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" })).action, "updated");
    assert.deepEqual(three.updates, [{ ID: "2", peerURLs: ["https://10.0.1.2:2380"] }]);
  });
});
