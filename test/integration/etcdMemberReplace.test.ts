// The fallback of a control-plane node's etcd move (issue 16): m3's peer URL is updated to its new address
// (127.0.0.3), but its data dir cannot restart it there (its WAL lost: etcd panics, "Was the raft log corrupted,
// truncated, or lost?"), on a real three-member etcd of the test-bed version while a writer writes through m1 and m2. m3 is
// removed and added again at its new address, then started from a clean data dir joining the existing cluster.
// The first run is cut by SIGKILL right after recording its intent, the second right after the remove (the member
// gone, not yet added); the third finds the intent and adds it. A member that answers is never replaced. No write is
// refused or lost, and the runs after it change nothing.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { Etcd3 } from "etcd3";
import { UserError } from "../../lib/config/errors";
import { handOffLeadership, moveEtcdPeer } from "../../lib/controlPlane/etcdPeerMove";
import { answersWithin, MEMBER_REPLACE_PREFIX, memberReplaceUnderway, replaceEtcdMember } from "../../lib/controlPlane/etcdMemberReplace";
import { waitUntil } from "../testbed/processes";
import { childOrTests, RUN_ENV, runFaultChild } from "../support/faultChild";
import { assertNothingLost, makeLeader, startWriter, useEtcdTrio } from "../support/etcdTrio";

interface ChildRun { hosts: string[]; member: string; from: string; to: string }

const answers = answersWithin((urls) => new Etcd3({ hosts: urls, dialTimeout: 1000 }), 3000);

async function child(): Promise<void> {
  const run = JSON.parse(process.env[RUN_ENV]!) as ChildRun;
  const client = new Etcd3({ hosts: run.hosts });
  const result = await replaceEtcdMember(client, { member: run.member, from: run.from, to: run.to }, answers);
  process.stdout.write(JSON.stringify(result));
  client.close();
}

childOrTests(module, child, () => {
  describe("etcd member replace, the fallback of a peer move, on a real three-member cluster (issue 16)", function () {
    this.timeout(180_000);
    const useTrio = useEtcdTrio("cidr-migration-member-replace");

    it("m3 updated but unable to come back on its data: refused while it answers; cut after the intent and after the remove, the re-run adds it at its new address; it joins from a clean data dir and nothing is refused or lost", async () => {
      const trio = useTrio();
      const [m1, m2, m3] = trio.members;
      const hosts = [trio.clientUrl(m1), trio.clientUrl(m2)];
      const client = new Etcd3({ hosts });
      const writer = startWriter(client);
      const move = { member: "m3", from: "127.0.0.1", to: "127.0.0.3" };
      try {
        await writer.goesOn("before the replace");
        const before = (await client.cluster.memberList({})).members.find((m) => m.name === "m3")!;
        await assert.rejects(replaceEtcdMember(client, move, answers), (e: Error) => e instanceof UserError && /m3 answers at .*: it works, .*nothing was changed/.test(e.message));
        assert.equal(await memberReplaceUnderway(client, "m3"), false, "a refused replace records nothing");

        // the peer move as the graph does it: leadership handed on, the peer URL updated, etcd restarted there
        await makeLeader(trio, m3);
        assert.ok(await handOffLeadership(client, "m3", (urls) => new Etcd3({ hosts: urls })), "m3 handed its leadership on");
        await moveEtcdPeer(client, move);
        await m3.proc!.stop();
        fs.rmSync(path.join(trio.dir, "m3", "member", "wal"), { recursive: true });
        m3.host = "127.0.0.3";
        trio.start(m3, trio.initialCluster(), "existing");
        await waitUntil(async () => m3.proc!.exited(), { timeoutMs: 30_000, what: "m3 giving up on a data dir without its WAL" });
        assert.match(fs.readFileSync(m3.proc!.logPath, "utf8"), /Was the raft log corrupted, truncated, or lost\?/, "etcd says why it cannot restart on that data");
        await writer.goesOn("while m3 cannot come back");

        const cutAfterIntent = await runFaultChild(__filename, { hosts, ...move } satisfies ChildRun, "member-replace-after-intent:m3");
        assert.equal(cutAfterIntent.signal, "SIGKILL", `the run must die after recording its intent; it ended with code ${cutAfterIntent.code}: ${cutAfterIntent.output.slice(0, 500)}`);
        assert.deepEqual((await client.cluster.memberList({})).members.map((m) => m.name).sort(), ["m1", "m2", "m3"], "nothing removed yet");
        const cut = await runFaultChild(__filename, { hosts, ...move } satisfies ChildRun, "member-replace-after-remove:m3");
        assert.equal(cut.signal, "SIGKILL", `the run must die after the remove; it ended with code ${cut.code}: ${cut.output.slice(0, 500)}`);
        const afterCut = (await client.cluster.memberList({})).members;
        assert.deepEqual(afterCut.map((m) => m.name).sort(), ["m1", "m2"], "m3 was removed and not yet added");
        assert.ok(await client.get(MEMBER_REPLACE_PREFIX + "m3").string(), "the intent is recorded in etcd");
        await writer.goesOn("with m3 removed");

        const rerun = await replaceEtcdMember(client, move, answers);
        assert.equal(rerun.action, "replaced");
        assert.notEqual(rerun.memberId, before.ID, "a new member");
        assert.deepEqual(rerun.peerURLs, [`http://127.0.0.3:${m3.peer}`]);
        assert.equal(rerun.initialCluster, [`m1=${trio.peerUrl(m1)}`, `m2=${trio.peerUrl(m2)}`, `m3=http://127.0.0.3:${m3.peer}`].join(","));
        const again = await replaceEtcdMember(client, move, answers);
        assert.deepEqual([again.action, again.memberId], ["added-before", rerun.memberId], "a run before m3 starts adds nothing more");
        await writer.goesOn("with m3 added, not started");

        // the node side (lib/remote/scripts/etcdCleanStart): the old data dir moved aside, m3 joins at its new address
        fs.renameSync(path.join(trio.dir, "m3"), path.join(trio.dir, "m3.removed-member"));
        trio.start(m3, rerun.initialCluster, "existing");
        await waitUntil(() => trio.healthy(m3), { timeoutMs: 60_000, what: "m3 serving again as a new member on 127.0.0.3" });
        await writer.goesOn("after m3 joined");

        const done = await replaceEtcdMember(client, move, answers);
        assert.deepEqual([done.action, done.memberId], ["already", rerun.memberId]);
        assert.equal(await memberReplaceUnderway(client, "m3"), false, "the intent is cleared once m3 runs at its new address");
      } finally {
        await writer.stop();
      }
      try {
        await assertNothingLost(trio, writer, "127.0.0.3");
        // a member this tool never removed is refused, not added
        await assert.rejects(replaceEtcdMember(client, { member: "cp-9", from: "127.0.0.1", to: "127.0.0.9" }, answers), (e: Error) => e instanceof UserError && /no member named cp-9 .* and no record of this tool removing it/.test(e.message));
      } finally {
        client.close();
      }
    });
  });
});
