import assert from "node:assert/strict";
import { allocateNodeSubnets, nthSubnet, subnetCount } from "../../../lib/net/nodeSubnets";
import { cidrsOverlap } from "../../../lib/net/cidr";
import { assertCidrError } from "../../support/cidrAssertions";

describe("lib/net/nodeSubnets", () => {
  describe("subnetCount and nthSubnet", () => {
    it("count node subnets as bigint", () => {
      assert.equal(subnetCount("10.244.0.0/16", 24), 256n);
      assert.equal(subnetCount("10.244.0.0/16", 16), 1n);
      assert.equal(subnetCount("10.244.0.0/16", 32), 65536n);
      assert.equal(subnetCount("fd00:10:244::/56", 64), 256n);
      assert.equal(subnetCount("::/0", 128), 2n ** 128n);
    });

    it("reject mask sizes that do not fit the pod range", () => {
      assertCidrError(() => subnetCount("10.244.0.0/16", 15), "out-of-range", "10.244.0.0/16", "16 to 32");
      assertCidrError(() => subnetCount("10.244.0.0/16", 33), "out-of-range", "33");
      assertCidrError(() => subnetCount("10.244.0.0/16", 24.5), "out-of-range", "24.5");
      assertCidrError(() => subnetCount("fd00::/48", 129), "out-of-range", "48 to 128");
    });

    it("nthSubnet walks the range in order and rejects indexes past the end", () => {
      assert.equal(nthSubnet("10.244.0.0/16", 24, 0), "10.244.0.0/24");
      assert.equal(nthSubnet("10.244.0.0/16", 24, 1n), "10.244.1.0/24");
      assert.equal(nthSubnet("10.244.0.0/16", 24, 255), "10.244.255.0/24");
      assert.equal(nthSubnet("10.244.0.0/16", 26, 5), "10.244.1.64/26");
      assert.equal(nthSubnet("fd00:10:244::/56", 64, 1), "fd00:10:244:1::/64");
      assert.equal(nthSubnet("fd00:10:244::/56", 64, 255), "fd00:10:244:ff::/64");
      assertCidrError(() => nthSubnet("10.244.0.0/16", 24, 256), "out-of-range", "256 subnets of /24");
      assertCidrError(() => nthSubnet("10.244.0.0/16", 24, -1n), "out-of-range", "-1");
    });
  });


  describe("allocateNodeSubnets", () => {
    it("gives nodes the lowest subnets in input order", () => {
      const subnets = allocateNodeSubnets("10.244.0.0/16", 24, ["cp-1", "worker-b", "worker-a"]);
      assert.deepEqual([...subnets], [
        ["cp-1", "10.244.0.0/24"],
        ["worker-b", "10.244.1.0/24"],
        ["worker-a", "10.244.2.0/24"],
      ]);
      assert.equal(allocateNodeSubnets("10.244.0.0/16", 24, []).size, 0);
    });

    it("skips every subnet overlapping a taken CIDR and ignores taken CIDRs elsewhere", () => {
      const taken = ["10.244.1.0/24", "10.244.5.0/24", "10.244.4.0/23", "10.244.1.0/24", "10.244.7.128/25", "192.168.0.0/16", "fd00::/64"];
      const subnets = allocateNodeSubnets("10.244.0.0/16", 24, ["n1", "n2", "n3", "n4", "n5", "n6"], taken);
      assert.deepEqual([...subnets.values()], ["10.244.0.0/24", "10.244.2.0/24", "10.244.3.0/24", "10.244.6.0/24", "10.244.8.0/24", "10.244.9.0/24"]);
    });

    it("treats a taken CIDR that contains the whole range as taking every subnet", () => {
      assert.deepEqual([...allocateNodeSubnets("10.244.0.0/16", 17, ["a"], ["10.244.0.0/17"]).values()], ["10.244.128.0/17"]);
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/16", 24, ["a"], ["10.0.0.0/8"]), "out-of-range", "256 subnets", "256 already taken", "1 node needs");
    });

    it("fills the range exactly, then says how many subnets it holds and how many were needed", () => {
      const four = allocateNodeSubnets("10.244.0.0/22", 24, ["a", "b", "c", "d"]);
      assert.equal(four.get("d"), "10.244.3.0/24");
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/22", 24, ["a", "b", "c", "d", "e"]), "out-of-range", "10.244.0.0/22", "4 subnets of /24", "5 nodes");
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/22", 24, ["a", "b", "c", "d"], ["10.244.2.0/24"]), "out-of-range", "4 subnets", "1 already taken", "4 nodes");
      // Duplicate and adjacent taken CIDRs count once each.
      const taken = ["10.244.2.0/24", "10.244.2.0/24", "10.244.3.0/24"];
      assert.deepEqual([...allocateNodeSubnets("10.244.0.0/22", 24, ["a", "b"], taken).values()], ["10.244.0.0/24", "10.244.1.0/24"]);
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/22", 24, ["a", "b", "c"], taken), "out-of-range", "2 already taken", "3 nodes");
    });

    it("allocates IPv6 node subnets", () => {
      const subnets = allocateNodeSubnets("fd00:10:244::/56", 64, ["a", "b"], ["FD00:10:244::/64"]);
      assert.deepEqual([...subnets.values()], ["fd00:10:244:1::/64", "fd00:10:244:2::/64"]);
    });

    it("rejects duplicate node names, bad masks and bad taken CIDRs", () => {
      assert.throws(() => allocateNodeSubnets("10.244.0.0/16", 24, ["a", "b", "a"]), /node name "a" appears twice/);
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/16", 8, ["a"]), "out-of-range", "node mask size 8");
      assertCidrError(() => allocateNodeSubnets("10.244.0.0/16", 24, ["a"], ["10.244.1.1/24"]), "host-bits", "10.244.1.0/24");
    });

    it("is deterministic for 50,000 nodes and never reuses or overlaps a taken subnet", () => {
      const names = Array.from({ length: 50_000 }, (_, i) => `node-${String(i).padStart(5, "0")}`);
      const taken = ["10.0.5.0/24", "10.1.0.0/16", "10.2.3.0/25", "10.0.0.0/24"];
      const first = allocateNodeSubnets("10.0.0.0/8", 24, names, taken);
      const second = allocateNodeSubnets("10.0.0.0/8", 24, names, taken);
      assert.deepEqual([...first], [...second]);
      assert.deepEqual([...first.keys()], names);
      const subnets = [...first.values()];
      assert.equal(new Set(subnets).size, names.length);
      for (const subnet of subnets) for (const t of taken) assert.equal(cidrsOverlap(subnet, t), false, `${subnet} overlaps ${t}`);
      assert.equal(first.get("node-00000"), "10.0.1.0/24");
      assert.equal(first.get("node-00004"), "10.0.6.0/24");
      // 10.0.0.0/16 holds 256 subnets, 2 of them taken; then 10.1.0.0/16 is skipped entirely and 10.2.3.0/25 blocks one.
      assert.equal(first.get("node-00253"), "10.0.255.0/24");
      assert.equal(first.get("node-00254"), "10.2.0.0/24");
      assert.equal(first.get("node-00256"), "10.2.2.0/24");
      assert.equal(first.get("node-00257"), "10.2.4.0/24");
    });
  });
});
