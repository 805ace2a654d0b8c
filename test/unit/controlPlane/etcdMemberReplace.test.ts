import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { Etcd3 } from "etcd3";
import { UserError } from "../../../lib/config/errors";
import { replaceEtcdMember, withExistingClusterFlags } from "../../../lib/controlPlane/etcdMemberReplace";
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

describe("lib/controlPlane etcdMemberReplace (issue 16)", () => {
  it("refuses before any write: two members, a member not started, an unknown member, or one not on the old address", async () => {
    const two = clientWith([{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }]);
    await assert.rejects(replaceEtcdMember(two.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }), (e: Error) => e instanceof UserError && /has 2 member\(s\)/.test(e.message));
    const three = [{ name: "cp-1", peerURLs: ["https://10.0.0.1:2380"] }, { name: "cp-2", peerURLs: ["https://10.0.0.2:2380"] }, { name: "cp-3", peerURLs: ["https://10.0.0.3:2380"] }];
    const unstarted = clientWith([...three.slice(0, 2), { name: "", peerURLs: ["https://10.0.0.9:2380"], clientURLs: [] }, three[2]]);
    await assert.rejects(replaceEtcdMember(unstarted.client, { member: "cp-2", from: "10.0.0.2", to: "10.0.1.2" }), /10\.0\.0\.9:2380 have not started/);
    const healthy = clientWith(three);
    await assert.rejects(replaceEtcdMember(healthy.client, { member: "cp-9", from: "10.0.0.9", to: "10.0.1.9" }), /no member named cp-9 \(members: cp-1, cp-2, cp-3\) and no record of this tool removing it/);
    await assert.rejects(replaceEtcdMember(healthy.client, { member: "cp-2", from: "10.0.0.7", to: "10.0.1.2" }), /none on 10\.0\.0\.7; check nodeAddresses\[\]\.from/);
    assert.deepEqual([...two.writes, ...unstarted.writes, ...healthy.writes], []);
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
