// A control-plane node's kubeadm-rejoin (nodeRollout.strategy kubeadm-rejoin) starts with its etcd member checked on
// a real three-member etcd of the test-bed version: every other member must answer, since the reset that follows
// removes this one; when it leads, leadership goes to another member first. A writer writes through m1 and m2 the
// whole time: no write is refused or lost. With m2 stopped, the check for m3 refuses and changes nothing.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { Etcd3 } from "etcd3";
import { UserError } from "../../lib/config/errors";
import { answersWithin } from "../../lib/controlPlane/etcdMemberReplace";
import { checkEtcdRejoin, leaveEtcd } from "../../lib/controlPlane/etcdRejoinCheck";
import { waitUntil } from "../testbed/processes";
import { assertNothingLost, makeLeader, startWriter, useEtcdTrio } from "../support/etcdTrio";

describe("etcd check before a control-plane node's kubeadm-rejoin, on a real three-member cluster", function () {
  this.timeout(120_000);
  const useTrio = useEtcdTrio("cidr-migration-rejoin-check");

  it("passes while every other member answers and hands m3's leadership on; refuses, changing nothing, while m2 is down", async () => {
    const trio = useTrio();
    const [m1, m2, m3] = trio.members;
    const clientFor = (urls: string[]) => new Etcd3({ hosts: urls, dialTimeout: 2000 });
    const client = clientFor([trio.clientUrl(m1), trio.clientUrl(m2)]);
    const answers = answersWithin(clientFor, 2000, 500);
    const writer = startWriter(client);
    try {
      await writer.goesOn("before the check");
      const m3Id = (await client.cluster.memberList({})).members.find((m) => m.name === "m3")!.ID;
      await makeLeader(trio, m3);
      const checked = await checkEtcdRejoin(client, "m3", "127.0.0.1", answers, clientFor);
      assert.equal(checked.memberId, m3Id);
      assert.ok(checked.newLeader === "m1" || checked.newLeader === "m2", `leadership went to ${checked.newLeader}`);
      const { leader } = await client.maintenance.status();
      assert.notEqual(leader, m3Id, "m3 leads no more");
      await writer.goesOn("after the check");
    } finally {
      await writer.stop();
    }
    try {
      await assertNothingLost(trio, writer, "127.0.0.1");

      // a member that does not answer: resetting m3 as well would leave no majority
      await m2.proc!.stop();
      const onlyM1 = clientFor([trio.clientUrl(m1)]);
      try {
        const membersBefore = (await onlyM1.cluster.memberList({})).members.map((m) => m.ID).sort();
        await assert.rejects(checkEtcdRejoin(onlyM1, "m3", "127.0.0.1", answers, clientFor),
          (e: Error) => e instanceof UserError && /etcd member m2 does not answer at http:\/\/127\.0\.0\.1:\d+: with m3 reset as well, etcd would lose its majority; .*nothing was changed$/.test(e.message));
        assert.deepEqual((await onlyM1.cluster.memberList({})).members.map((m) => m.ID).sort(), membersBefore, "no member changed");
      } finally {
        onlyM1.close();
      }
      trio.start(m2, trio.initialCluster());
      await waitUntil(() => trio.healthy(m2), { timeoutMs: 30_000, what: "m2 serving again" });

      // the member must be the node's: named after it, its peer URL on the node's address
      await assert.rejects(checkEtcdRejoin(client, "cp-9", "127.0.0.1", answers, clientFor), (e: Error) => e instanceof UserError && /no member named cp-9 \(members: m1, m2, m3\)/.test(e.message));
      await assert.rejects(checkEtcdRejoin(client, "m3", "10.0.0.3", answers, clientFor), (e: Error) => e instanceof UserError && /none on the node's address 10\.0\.0\.3/.test(e.message));
    } finally {
      client.close();
    }
  });
});

describe("a control-plane node's etcd member leaving for its kubeadm-rejoin, on a real three-member cluster", function () {
  this.timeout(120_000);
  // m3 is "the node" at 127.0.0.3, a loopback address of its own
  const useTrio = useEtcdTrio("cidr-migration-rejoin-leave", ["127.0.0.1", "127.0.0.2", "127.0.0.3"]);

  it("refuses while another member is down; removes the node's member (leadership handed on first), and a member a half-done join added; no write refused or lost", async () => {
    const trio = useTrio();
    const [m1, m2, m3] = trio.members;
    const clientFor = (urls: string[]) => new Etcd3({ hosts: urls, dialTimeout: 2000 });
    const answers = answersWithin(clientFor, 2000, 500);
    const ids = async (client: Etcd3) => (await client.cluster.memberList({})).members.map((m) => m.name || m.ID).sort();

    await m2.proc!.stop();
    const onlyM1 = clientFor([trio.clientUrl(m1)]);
    try {
      await assert.rejects(leaveEtcd(onlyM1, "127.0.0.3", answers, clientFor),
        (e: Error) => e instanceof UserError && /etcd member m2 does not answer at .*: removing the member on 127\.0\.0\.3 would leave etcd without a majority; .*nothing was changed$/.test(e.message));
      assert.deepEqual(await ids(onlyM1), ["m1", "m2", "m3"], "nothing removed");
    } finally {
      onlyM1.close();
    }
    trio.start(m2, trio.initialCluster());
    await waitUntil(() => trio.healthy(m2), { timeoutMs: 30_000, what: "m2 serving again" });

    const client = clientFor([trio.clientUrl(m1), trio.clientUrl(m2)]);
    const writer = startWriter(client);
    try {
      await writer.goesOn("before the leave");
      const m3Id = (await client.cluster.memberList({})).members.find((m) => m.name === "m3")!.ID;
      await makeLeader(trio, m3);
      assert.deepEqual(await leaveEtcd(client, "127.0.0.3", answers, clientFor), [m3Id]);
      assert.deepEqual(await ids(client), ["m1", "m2"]);
      await writer.goesOn("after the leave");
      assert.deepEqual(await leaveEtcd(client, "127.0.0.3", answers, clientFor), [], "nothing left on the node: nothing to do");

      // the node joins again as kubeadm does it: a member added at its peer URL, started empty
      await m3.proc!.stop();
      fs.rmSync(path.join(trio.dir, "m3"), { recursive: true, force: true });
      const added = (await client.cluster.memberAdd({ peerURLs: [trio.peerUrl(m3)] })).member;
      trio.start(m3, trio.initialCluster(), "existing");
      await waitUntil(() => trio.healthy(m3), { timeoutMs: 30_000, what: "m3 serving again, empty at first" });
      await writer.goesOn("after the join");
      // a re-try after that join failed half-way: its member goes the same way
      assert.deepEqual(await leaveEtcd(client, "127.0.0.3", answers, clientFor), [added.ID]);
      assert.deepEqual(await ids(client), ["m1", "m2"]);
      await writer.goesOn("after the second leave");
    } finally {
      await writer.stop();
    }
    try {
      assert.deepEqual(writer.failed, [], "quorum held: no write was refused");
      const stored = await client.getAll().prefix("writer/").keys();
      assert.deepEqual(writer.acknowledged.filter((k) => !stored.includes(k)), [], "no acknowledged write is missing");
    } finally {
      client.close();
    }
  });
});
