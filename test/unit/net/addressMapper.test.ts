import assert from "node:assert/strict";
import { AddressMapper } from "../../../lib/net/addressMapper";
import { addressOffset, cidrContains, cidrSize, nthAddress } from "../../../lib/net/cidr";
import { assertCidrError, lcg } from "../../support/cidrAssertions";

describe("lib/net/addressMapper", () => {
  describe("AddressMapper", () => {
    it("keeps the offset when it fits and is free", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.112.0.0/12");
      assert.equal(mapper.map("10.96.0.1"), "10.112.0.1");
      assert.equal(mapper.map("10.96.0.10"), "10.112.0.10");
      assert.equal(mapper.map("10.100.3.7"), "10.116.3.7");
      assert.equal(mapper.map("10.111.255.254"), "10.127.255.254");
    });

    it("keeps the offset for IPv6 whatever the text form of the old address", () => {
      const mapper = new AddressMapper("fd00:10:96::/112", "FD00:20:96::/112");
      assert.equal(mapper.map("fd00:10:96::a"), "fd00:20:96::a");
      assert.equal(mapper.map("FD00:0010:0096:0000:0000:0000:0000:00FF"), "fd00:20:96::ff");
      assert.equal(mapper.map("fd00:10:96:0:0:0:0:1234"), "fd00:20:96::1234");
    });

    it("formats mapped IPv6 addresses exactly like the library does (zero runs anywhere, offsets past 32 bits)", () => {
      const cases: Array<[string, string]> = [
        ["fd00:10:96::/96", "1:0:0:2::/96"],
        ["fd00:10:96::/96", "::/80"],
        ["fd00:10:96::/80", "fd00:0:0:1:2::/80"],
        ["fd00:10:96::/75", "fd00::ffe0:0:0:0/75"],
        ["::ffff:0:0/96", "fd00:20::/96"],
        ["fd00:10:96::/112", "1:0:2:3:4:5:6:0/112"],
      ];
      const random = lcg(7);
      for (const [oldCidr, newCidr] of cases) {
        const mapper = new AddressMapper(oldCidr, newCidr);
        const size = cidrSize(newCidr) < cidrSize(oldCidr) ? cidrSize(newCidr) : cidrSize(oldCidr);
        const offsets = new Set<bigint>([1n, 2n, 0xffffn, 0x10000n, 0xffffffffn, 0x100000000n, 0x100010000n, size - 2n]);
        for (let i = 0; i < 200; i++) offsets.add((BigInt(random.next().value as number) * 65537n + 1n) % (size - 2n) + 1n);
        for (const offset of offsets) {
          if (offset <= 0n || offset >= size) continue;
          const oldIp = nthAddress(oldCidr, offset);
          assert.equal(mapper.map(oldIp), nthAddress(newCidr, offset), `${oldIp} -> ${newCidr} offset ${offset}`);
        }
      }
    });

    it("reads IPv4-in-IPv6 text through the library", () => {
      const mapper = new AddressMapper("::ffff:0:0/96", "fd00:20::/96");
      assert.equal(mapper.map("::ffff:10.0.0.1"), "fd00:20::a00:1");
    });

    it("moves an address whose offset is reserved, and never hands out a reserved address", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.112.0.0/12", ["10.112.0.10", "10.112.0.11"]);
      const a = mapper.map("10.96.0.10");
      const b = mapper.map("10.96.0.11");
      assert.equal(a, "10.112.0.1");
      assert.equal(b, "10.112.0.2");
      assert.equal(mapper.map("10.96.0.12"), "10.112.0.12");
    });

    it("resolves two old addresses landing on the same new address (smaller new range)", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.200.0.0/24");
      assert.equal(mapper.map("10.96.0.5"), "10.200.0.5");
      // Offset 261 does not fit a /24: the next free address from the cursor.
      assert.equal(mapper.map("10.96.1.5"), "10.200.0.1");
      // Its own offset 1 is now used, so it moves on; offset 5 was used first by 10.96.0.5.
      assert.equal(mapper.map("10.96.0.1"), "10.200.0.2");
      assert.equal(mapper.map("10.96.2.5"), "10.200.0.3");
      assert.equal(mapper.map("10.96.3.5"), "10.200.0.4");
      assert.equal(mapper.map("10.96.4.5"), "10.200.0.6");
    });

    it("reserve() takes an address of the new range and rejects one outside it", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.112.0.0/12");
      mapper.reserve("10.112.0.1");
      mapper.reserve("10.112.0.1");
      assert.equal(mapper.map("10.96.0.1"), "10.112.0.2");
      assertCidrError(() => mapper.reserve("10.96.0.1"), "out-of-range", "10.96.0.1", "10.112.0.0/12");
      assertCidrError(() => new AddressMapper("10.96.0.0/12", "10.112.0.0/12", ["fd00::1"]), "out-of-range", "fd00::1");
    });

    it("never hands out the network address, nor the IPv4 broadcast address", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.200.0.0/29");
      assert.equal(mapper.map("10.96.0.0"), "10.200.0.1");
      assert.equal(mapper.map("10.96.0.7"), "10.200.0.2");
      const rest = ["10.96.0.3", "10.96.0.4", "10.96.0.5", "10.96.0.6"].map((ip) => mapper.map(ip));
      assert.deepEqual(rest, ["10.200.0.3", "10.200.0.4", "10.200.0.5", "10.200.0.6"]);
    });

    it("uses the last IPv6 address, which is no broadcast address", () => {
      const mapper = new AddressMapper("fd00:10::/112", "fd00:20::/126");
      assert.deepEqual(["fd00:10::100", "fd00:10::3", "fd00:10::0"].map((ip) => mapper.map(ip)), ["fd00:20::1", "fd00:20::3", "fd00:20::2"]);
      assertCidrError(() => mapper.map("fd00:10::1"), "out-of-range", "fd00:20::/126", "full");
    });

    it("throws naming the new range when it is full", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.200.0.0/29");
      for (let i = 1; i <= 6; i++) mapper.map(`10.96.1.${i}`);
      assertCidrError(() => mapper.map("10.96.1.7"), "out-of-range", "10.200.0.0/29", "full", "6 usable", "10.96.1.7");
      assertCidrError(() => new AddressMapper("10.96.0.0/12", "10.200.0.0/31").map("10.96.0.1"), "out-of-range", "10.200.0.0/31", "0 usable");
    });

    it("returns the same new address when the same old address is mapped again", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.200.0.0/29");
      assert.equal(mapper.map("10.96.9.9"), "10.200.0.1");
      assert.equal(mapper.map("10.96.9.9"), "10.200.0.1");
      assert.equal(mapper.map("10.96.8.8"), "10.200.0.2");
    });

    it("rejects old addresses outside the old range and unparsable ones", () => {
      const mapper = new AddressMapper("10.96.0.0/12", "10.112.0.0/12");
      assertCidrError(() => mapper.map("10.112.0.1"), "out-of-range", "10.112.0.1", "old range 10.96.0.0/12");
      assertCidrError(() => mapper.map("fd00::1"), "out-of-range", "fd00::1");
      assertCidrError(() => mapper.map("10.96.0.010"), "unparsable", '"10.96.0.010"');
      const mapper6 = new AddressMapper("fd00:10:96::/112", "fd00:20:96::/112");
      for (const bad of ["fd00:10:96::g", "1:::2", "fd00:10:96::1%eth0", ":1::", "fd00:10:96::1:", "1:2:3:4:5:6:7:8:9", "fd00:10:96:0:0:0:0:1:2", "fd00:10:96:0::0:0:0:1:2", "fd00:10:96:0:0:0:0"]) {
        assertCidrError(() => mapper6.map(bad), "unparsable", JSON.stringify(bad));
      }
      for (const outside of ["fe00:10:96::1", "fd00:11:96::1", "fd00:10:97::1", "fd00:10:96:1::1", "fd00:10:96::1:1"]) {
        assertCidrError(() => mapper6.map(outside), "out-of-range", outside, "old range fd00:10:96::/112");
      }
    });

    it("rejects mixing families and ranges too large to map", () => {
      assertCidrError(() => new AddressMapper("10.96.0.0/12", "fd00::/108"), "out-of-range", "10.96.0.0/12", "fd00::/108");
      assertCidrError(() => new AddressMapper("fd00:10::/108", "fd00::/64"), "out-of-range", "fd00::/64", "too large");
      assertCidrError(() => new AddressMapper("10.96.0.1/12", "10.112.0.0/12"), "host-bits", "10.96.0.0/12");
    });

    it("is deterministic and collision-free over 500,000 addresses into a smaller range", () => {
      const random = lcg(42);
      const oldIps: string[] = [];
      const seen = new Set<number>();
      while (oldIps.length < 500_000) {
        const offset = ((random.next().value as number) % 1048574) + 1;
        if (seen.has(offset)) continue;
        seen.add(offset);
        oldIps.push(`10.${96 + (offset >>> 16)}.${(offset >>> 8) & 255}.${offset & 255}`);
      }
      const reserved = ["10.200.0.1", "10.200.0.10", "10.200.100.100"];
      const first = new AddressMapper("10.96.0.0/12", "10.200.0.0/13", reserved);
      const second = new AddressMapper("10.96.0.0/12", "10.200.0.0/13", reserved);
      const results = oldIps.map((ip) => first.map(ip));
      assert.deepEqual(oldIps.map((ip) => second.map(ip)), results);
      assert.equal(new Set(results).size, results.length, "two old addresses got the same new address");
      for (const ip of reserved) assert.ok(!results.includes(ip), `${ip} is reserved`);
      for (const ip of results.slice(0, 2000)) assert.ok(cidrContains("10.200.0.0/13", ip), ip);
      assert.ok(!results.includes("10.200.0.0") && !results.includes("10.207.255.255"));
      // An offset that fits the /13 (below its broadcast) and is not reserved moves only when an earlier call took it.
      const callByResult = new Map(results.map((ip, i) => [ip, i]));
      let kept = 0;
      for (let i = 0; i < oldIps.length; i += 97) {
        const offset = addressOffset("10.96.0.0/12", oldIps[i]);
        if (offset >= 524287n) continue;
        const sameOffset = nthAddress("10.200.0.0/13", offset);
        if (reserved.includes(sameOffset)) continue;
        const holder = callByResult.get(sameOffset);
        assert.ok(holder !== undefined && holder <= i, `${oldIps[i]} -> ${results[i]} although ${sameOffset} was free`);
        if (holder === i) kept++;
      }
      assert.ok(kept > 0);
    });
  });

});
