import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { Etcd3, IMember } from "etcd3";
import { UserError } from "../../../lib/config/errors";
import { initialClusterWith, replaceEtcdMember, withExistingClusterFlags } from "../../../lib/controlPlane/etcdMemberReplace";
import { readFlag } from "../../../lib/controlPlane/manifestFlags";

/** A client whose member list is `members` and which records every write: the refusals need no cluster. */
function clientWith(members: Array<{ name: string; peerURLs: string[]; clientURLs?: string[] }>) {
  const writes: unknown[] = [];
  const client = {
    cluster: {
      memberList: async () => ({ members: members.map((m, i) => ({ ID: String(i + 1), clientURLs: [`https://${m.name}:2379`], ...m })) }),
      memberRemove: async (req: unknown) => void writes.push(["remove", req]),
      memberAdd: async (req: unknown) => void writes.push(["add", req]),
    },
    get: () => ({ string: async () => null }),
    put: (key: string) => ({ value: async (v: string) => void writes.push(["put", key, v]) }),
  } as unknown as Etcd3;
  return { client, writes };
}

const silent = async () => false;

describe("lib/controlPlane etcdMemberReplace (issue 16)", () => {
  it("refuses before any write: two members, a member not started, an unknown member, one on neither address, or one that answers", async () => {
    const two = clientWith([{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }]);
    await assert.rejects(replaceEtcdMember(two.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }, silent), (e: Error) => e instanceof UserError && /has 2 member\(s\)/.test(e.message));
    const three = [{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }, { name: "cp-3", peerURLs: ["https://10.0.0.3:2380"] }];
    const unstarted = clientWith([...three.slice(0, 2), { name: "", peerURLs: ["https://10.0.0.9:2380"], clientURLs: [] }, three[2]]);
    await assert.rejects(replaceEtcdMember(unstarted.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }, silent), /10\.0\.0\.9:2380 have not started/);
    const healthy = clientWith(three);
    await assert.rejects(replaceEtcdMember(healthy.client, { member: "cp-9", from: "10.0.0.9", to: "10.0.1.9" }, silent), /no member named cp-9 \(members: cp-1, cp-2, cp-3\) and no record of this tool removing it/);
    await assert.rejects(replaceEtcdMember(healthy.client, { member: "cp-2", from: "10.0.0.7", to: "10.0.1.7" }, silent), /on neither 10\.0\.0\.7 nor 10\.0\.1\.7; check nodeAddresses\[\]\.from/);
    const asked: string[][] = [];
    const answering = async (urls: string[]) => {
      asked.push(urls);
      return true;
    };
    await assert.rejects(replaceEtcdMember(healthy.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }, answering), /cp-2 answers at https:\/\/cp-2:2379: it works/);
    assert.deepEqual(asked, [["https://cp-2:2379"]], "asked at its client URLs");
    assert.deepEqual([...two.writes, ...unstarted.writes, ...healthy.writes], []);
  });

  it("names every member once in --initial-cluster, the replaced one at its new peer URLs, however it is listed now", () => {
    const member = (ID: string, name: string, peer: string): IMember => ({ ID, name, peerURLs: [peer], clientURLs: [], isLearner: false });
    const others = [member("1", "cp-1", "https://10.0.0.1:2380"), member("2", "cp-2", "https://10.0.0.2:2380")];
    const expected = "cp-1=https://10.0.0.1:2380,cp-2=https://10.0.0.2:2380,cp-3=https://10.0.1.3:2380";
    const at = ["https://10.0.1.3:2380"];
    assert.equal(initialClusterWith([...others, member("3", "cp-3", "https://10.0.0.3:2380")], "cp-3", at), expected, "still at its old URL");
    assert.equal(initialClusterWith([...others, member("3", "cp-3", at[0])], "cp-3", at), expected, "updated");
    assert.equal(initialClusterWith([...others, member("9", "", at[0])], "cp-3", at), expected, "added, not started (no name)");
    assert.equal(initialClusterWith(others, "cp-3", at), expected, "removed");
  });

  it("sets the restart's --initial-cluster and joins the existing cluster, on a real kubeadm etcd manifest, nothing else changed", () => {
    const manifest = fs.readFileSync(path.join(__dirname, "..", "..", "fixtures", "manifests", "v1.29-single-cp-etcd.yaml"), "utf8");
    const initialCluster = "cp-1=https://192.37.70.3:2380,controlplane=https://192.37.80.3:2380";
    const edited = withExistingClusterFlags(manifest, initialCluster);
    assert.equal(readFlag(edited, "initial-cluster", { container: "etcd" }), initialCluster);
    assert.equal(readFlag(edited, "initial-cluster-state", { container: "etcd" }), "existing");
    const changed = edited.split("\n").filter((line) => !manifest.split("\n").includes(line));
    assert.deepEqual(changed, [`    - --initial-cluster=${initialCluster}`, "    - --initial-cluster-state=existing"]);
    assert.equal(withExistingClusterFlags(edited, initialCluster), edited, "a second edit changes nothing");
  });
});
