import assert from "node:assert/strict";
import {
  AddressMapper,
  CidrError,
  CidrErrorReason,
  addressOffset,
  allocateNodeSubnets,
  cidrContains,
  cidrSize,
  cidrsOverlap,
  dnsServiceIP,
  familyOf,
  isCidr,
  isIpAddress,
  kubernetesServiceIP,
  normalizeCidr,
  normalizeIp,
  nthAddress,
  nthSubnet,
  parseCidr,
  subnetCount,
} from "../../../lib/net/cidr";

/** Asserts `fn` throws a one-line CidrError with `reason` whose message contains every fragment. */
function assertCidrError(fn: () => unknown, reason: CidrErrorReason, ...fragments: string[]): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof CidrError, `expected CidrError, got ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    assert.ok(!error.message.includes("\n"), `message is not one line: ${error.message}`);
    for (const fragment of fragments) assert.ok(error.message.includes(fragment), `"${error.message}" lacks "${fragment}"`);
    return true;
  });
}

/** Deterministic pseudo-random sequence (LCG) so large tests are reproducible. */
function* lcg(seed: number): Generator<number> {
  let state = seed >>> 0;
  for (;;) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    yield state;
  }
}

describe("lib/net/cidr", () => {
  describe("parseCidr", () => {
    it("parses an IPv4 Service range into bigint network and size", () => {
      assert.deepEqual(parseCidr("10.96.0.0/12"), {
        cidr: "10.96.0.0/12",
        family: "IPv4",
        prefix: 12,
        bits: 32,
        network: 0x0a600000n,
        size: 1048576n,
      });
    });

    it("handles the IPv4 edges /0 and /32", () => {
      const all = parseCidr("0.0.0.0/0");
      assert.equal(all.size, 2n ** 32n);
      assert.equal(all.network, 0n);
      const one = parseCidr("10.0.0.1/32");
      assert.equal(one.size, 1n);
      assert.equal(one.cidr, "10.0.0.1/32");
    });

    it("handles the IPv6 edges ::/0, /128 and fd00::/108", () => {
      assert.deepEqual(parseCidr("::/0"), { cidr: "::/0", family: "IPv6", prefix: 0, bits: 128, network: 0n, size: 2n ** 128n });
      assert.equal(parseCidr("::1/128").size, 1n);
      assert.equal(parseCidr("fd00::/108").size, 2n ** 20n);
      assert.equal(parseCidr("fd00::/108").network, 0xfd00n << 112n);
    });

    it("normalizes IPv6 to compressed lowercase", () => {
      assert.equal(parseCidr("FD00:10:96::/112").cidr, "fd00:10:96::/112");
      assert.equal(parseCidr("fd00:0010:0096:0000:0000:0000:0000:0000/112").cidr, "fd00:10:96::/112");
      assert.equal(parseCidr("FD00:0:0:1::/64").cidr, "fd00:0:0:1::/64");
      assert.equal(parseCidr("1:0:0:2:0:0:0:0/64").cidr, "1:0:0:2::/64");
    });

    it("rejects host bits and names the network that was meant", () => {
      assertCidrError(() => parseCidr("10.96.0.1/12"), "host-bits", "10.96.0.1/12", "did you mean 10.96.0.0/12?");
      assertCidrError(() => parseCidr("10.244.1.0/16"), "host-bits", "did you mean 10.244.0.0/16?");
      assertCidrError(() => parseCidr("10.0.0.1/0"), "host-bits", "did you mean 0.0.0.0/0?");
      assertCidrError(() => parseCidr("FD00:10:96::1/112"), "host-bits", "did you mean fd00:10:96::/112?");
      assertCidrError(() => parseCidr("::1/0"), "host-bits", "did you mean ::/0?");
    });

    it("rejects a missing /prefix length", () => {
      assertCidrError(() => parseCidr("10.96.0.0"), "unparsable", '"10.96.0.0"', "prefix length is missing");
      assertCidrError(() => parseCidr("fd00::"), "unparsable", "prefix length is missing");
    });

    it("rejects prefixes that are out of range or not plain decimal", () => {
      assertCidrError(() => parseCidr("10.96.0.0/33"), "unparsable", '"10.96.0.0/33"', "0 to 32");
      assertCidrError(() => parseCidr("fd00::/129"), "unparsable", "0 to 128");
      for (const text of ["10.96.0.0/", "10.96.0.0/012", "10.96.0.0/-1", "10.96.0.0/ 12", "10.96.0.0/1e1", "10.96.0.0/12/3", "10.96.0.0/0x10"]) {
        assertCidrError(() => parseCidr(text), "unparsable", JSON.stringify(text));
      }
    });

    it("rejects text that is not an address", () => {
      for (const text of ["abc/12", "1.2.3/24", "256.0.0.0/8", "010.96.0.0/12", " 10.96.0.0/12", "10.96.0.0/12 ", "fd00::g/64", "fd00::%eth0/64", "1:::2/64"]) {
        assertCidrError(() => parseCidr(text), "unparsable", JSON.stringify(text));
      }
      assertCidrError(() => parseCidr(""), "unparsable", '""', "10.96.0.0/12");
    });

    it("CidrError is an Error with a name and a reason", () => {
      const error = new CidrError("boom", "out-of-range");
      assert.ok(error instanceof Error);
      assert.equal(error.name, "CidrError");
      assert.equal(error.reason, "out-of-range");
      assert.equal(error.message, "boom");
    });
  });

  describe("normalizeCidr, isIpAddress, normalizeIp, familyOf", () => {
    it("normalizeCidr returns the normalized text and still rejects bad input", () => {
      assert.equal(normalizeCidr("10.96.0.0/12"), "10.96.0.0/12");
      assert.equal(normalizeCidr("FD00:10:96:0::/112"), "fd00:10:96::/112");
      assertCidrError(() => normalizeCidr("10.96.0.1/12"), "host-bits", "10.96.0.0/12");
    });

    it("isIpAddress accepts plain addresses only", () => {
      for (const ip of ["10.96.0.1", "0.0.0.0", "255.255.255.255", "::", "::1", "FD00::A", "::ffff:10.0.0.1"]) assert.equal(isIpAddress(ip), true, ip);
      for (const text of ["10.96.0.1/32", "", "abc", "10.0.0.256", "01.2.3.4", "1.2.3", "fe80::1%eth0", "1:::2", " 10.0.0.1"]) {
        assert.equal(isIpAddress(text), false, text);
      }
    });

    it("normalizeIp compresses and lowercases IPv6 and leaves IPv4 as is", () => {
      assert.equal(normalizeIp("10.96.0.10"), "10.96.0.10");
      assert.equal(normalizeIp("FD00:0000:0000::000A"), "fd00::a");
      assert.equal(normalizeIp("1:0:0:2:0:0:0:3"), "1:0:0:2::3");
      assert.equal(normalizeIp("1:2:3:4:5:6:7::"), "1:2:3:4:5:6:7:0");
      assertCidrError(() => normalizeIp("10.96.0.0/12"), "unparsable", '"10.96.0.0/12"');
      assertCidrError(() => normalizeIp("nope"), "unparsable", '"nope"');
    });

    it("familyOf tells IPv4 from IPv6 for addresses and CIDRs", () => {
      assert.equal(familyOf("10.96.0.1"), "IPv4");
      assert.equal(familyOf("10.96.0.0/12"), "IPv4");
      assert.equal(familyOf("fd00::1"), "IPv6");
      assert.equal(familyOf("fd00:10:96::/112"), "IPv6");
      assertCidrError(() => familyOf("abc"), "unparsable");
    });
  });

  describe("isCidr", () => {
    it("accepts ranges of both families and refuses addresses, host bits, garbage and non-strings without throwing", () => {
      assert.equal(isCidr("10.100.0.0/16"), true);
      assert.equal(isCidr("fd00:100::/108"), true);
      assert.equal(isCidr("10.100.0.0"), false);
      assert.equal(isCidr("10.100.0.1/16"), false);
      assert.equal(isCidr("garbage"), false);
      assert.equal(isCidr(undefined), false);
      assert.equal(isCidr(42), false);
    });
    it("carries the address checks the Service and node steps rely on", () => {
      assert.equal(isIpAddress("10.96.0.1"), true);
      assert.equal(isIpAddress("fd00::1"), true);
      assert.equal(isIpAddress("10.96.0.256"), false);
      assert.equal(isIpAddress("10.96.0.0/12"), false);
      assert.equal(cidrContains("10.100.0.0/16", "10.100.255.254"), true);
      assert.equal(cidrContains("10.100.0.0/16", "10.101.0.1"), false);
      assert.equal(cidrContains("fd00:100::/108", "fd00:100::a"), true);
      assert.equal(cidrContains("10.244.0.0/16", "10.244.3.0/26"), true);
      assert.equal(cidrContains("10.100.0.0/16", "fd00::1"), false);
      assert.equal(normalizeCidr("fd00:0:0::/64"), "fd00::/64");
      assert.throws(() => normalizeCidr("10.48.3.1/24"), /has host bits set: did you mean 10\.48\.3\.0\/24\?/);
    });
  });

  describe("cidrContains and cidrsOverlap", () => {
    it("contains itself, smaller ranges and its own addresses, including both ends", () => {
      assert.equal(cidrContains("10.96.0.0/12", "10.96.0.0/12"), true);
      assert.equal(cidrContains("10.96.0.0/12", "10.100.0.0/16"), true);
      assert.equal(cidrContains("10.96.0.0/12", "10.96.0.0"), true);
      assert.equal(cidrContains("10.96.0.0/12", "10.111.255.255"), true);
      assert.equal(cidrContains("10.96.0.0/12", "10.112.0.0"), false);
      assert.equal(cidrContains("10.96.0.0/12", "10.95.255.255"), false);
      assert.equal(cidrContains("10.96.0.0/12", "10.0.0.0/8"), false);
      assert.equal(cidrContains("0.0.0.0/0", "203.0.113.7"), true);
    });

    it("works for IPv6 and is false across families", () => {
      assert.equal(cidrContains("fd00:10:96::/112", "FD00:10:96::FFFF"), true);
      assert.equal(cidrContains("fd00:10:96::/112", "fd00:10:96::1:0"), false);
      assert.equal(cidrContains("::/0", "fd00::1"), true);
      assert.equal(cidrContains("::/0", "10.0.0.1"), false);
      assert.equal(cidrContains("0.0.0.0/0", "::1"), false);
      assert.equal(cidrContains("0.0.0.0/0", "::/0"), false);
    });

    it("validates its inputs", () => {
      assertCidrError(() => cidrContains("10.96.0.1/12", "10.96.0.5"), "host-bits", "10.96.0.0/12");
      assertCidrError(() => cidrContains("10.96.0.0/12", "banana"), "unparsable", '"banana"');
    });

    it("overlap is symmetric, false for adjacent ranges and across families", () => {
      const pairs: Array<[string, string, boolean]> = [
        ["10.96.0.0/12", "10.100.0.0/16", true],
        ["10.0.0.0/24", "10.0.1.0/24", false],
        ["10.0.0.0/23", "10.0.1.0/24", true],
        ["10.96.0.0/12", "10.112.0.0/12", false],
        ["10.96.0.0/12", "10.111.255.255", true],
        ["0.0.0.0/0", "192.168.0.0/16", true],
        ["fd00::/108", "fd00::f:0/112", true],
        ["fd00::/108", "fd00::10:0/112", false],
        ["::/0", "10.0.0.0/8", false],
        ["10.0.0.0/8", "::ffff:10.0.0.0/104", false],
      ];
      for (const [a, b, expected] of pairs) {
        assert.equal(cidrsOverlap(a, b), expected, `${a} vs ${b}`);
        assert.equal(cidrsOverlap(b, a), expected, `${b} vs ${a}`);
      }
    });
  });

  describe("cidrSize, nthAddress, addressOffset", () => {
    it("sizes are bigint, up to 2^128", () => {
      assert.equal(cidrSize("10.96.0.0/12"), 1048576n);
      assert.equal(cidrSize("10.0.0.1/32"), 1n);
      assert.equal(cidrSize("0.0.0.0/0"), 4294967296n);
      assert.equal(cidrSize("fd00::/108"), 1048576n);
      assert.equal(cidrSize("::/0"), 340282366920938463463374607431768211456n);
      assert.equal(typeof cidrSize("::1/128"), "bigint");
    });

    it("nthAddress counts from the network address and takes numbers or bigints", () => {
      assert.equal(nthAddress("10.96.0.0/12", 0), "10.96.0.0");
      assert.equal(nthAddress("10.96.0.0/12", 10), "10.96.0.10");
      assert.equal(nthAddress("10.96.0.0/12", 256n), "10.96.1.0");
      assert.equal(nthAddress("10.96.0.0/12", 1048575n), "10.111.255.255");
      assert.equal(nthAddress("0.0.0.0/0", 2n ** 32n - 1n), "255.255.255.255");
      assert.equal(nthAddress("fd00:10:96::/112", 65535), "fd00:10:96::ffff");
      assert.equal(nthAddress("::/0", 2n ** 128n - 1n), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
      assert.equal(nthAddress("::/0", 2n ** 64n), "0:0:0:1::");
    });

    it("nthAddress rejects offsets outside the range", () => {
      assertCidrError(() => nthAddress("10.96.0.0/12", 1048576n), "out-of-range", "10.96.0.0/12", "1048576 addresses");
      assertCidrError(() => nthAddress("10.96.0.0/12", -1), "out-of-range", "-1");
      assertCidrError(() => nthAddress("10.0.0.1/32", 1), "out-of-range", "10.0.0.1/32");
      assertCidrError(() => nthAddress("::1/128", 1n), "out-of-range", "::1/128");
      assertCidrError(() => nthAddress("10.96.0.0/12", 1.5), "out-of-range", "1.5");
    });

    it("addressOffset is the inverse of nthAddress and rejects outside addresses", () => {
      assert.equal(addressOffset("10.96.0.0/12", "10.96.0.10"), 10n);
      assert.equal(addressOffset("10.96.0.0/12", "10.111.255.255"), 1048575n);
      assert.equal(addressOffset("fd00:10:96::/112", "FD00:10:96::A"), 10n);
      for (const n of [0n, 1n, 77n, 65535n]) assert.equal(addressOffset("fd00::/64", nthAddress("fd00::/64", n)), n);
      assertCidrError(() => addressOffset("10.96.0.0/12", "10.112.0.1"), "out-of-range", "10.112.0.1", "10.96.0.0/12");
      assertCidrError(() => addressOffset("10.96.0.0/12", "10.95.255.255"), "out-of-range", "10.95.255.255");
      assertCidrError(() => addressOffset("10.96.0.0/12", "fd00::1"), "out-of-range", "fd00::1");
    });
  });

  describe("kubernetesServiceIP and dnsServiceIP", () => {
    it("are offsets 1 and 10 of the Service range", () => {
      assert.equal(kubernetesServiceIP("10.96.0.0/12"), "10.96.0.1");
      assert.equal(dnsServiceIP("10.96.0.0/12"), "10.96.0.10");
      assert.equal(kubernetesServiceIP("172.20.0.0/16"), "172.20.0.1");
      assert.equal(dnsServiceIP("172.20.0.0/16"), "172.20.0.10");
      assert.equal(kubernetesServiceIP("fd00:10:96::/112"), "fd00:10:96::1");
      assert.equal(dnsServiceIP("fd00:10:96::/112"), "fd00:10:96::a");
      assert.equal(dnsServiceIP("FD00::/108"), "fd00::a");
      assert.equal(dnsServiceIP("10.0.0.0/28"), "10.0.0.10");
    });

    it("refuse ranges too small to hold them (never the IPv4 broadcast address)", () => {
      assertCidrError(() => kubernetesServiceIP("10.0.0.1/32"), "out-of-range", "10.0.0.1/32", "kubernetes Service IP");
      assertCidrError(() => kubernetesServiceIP("10.0.0.0/31"), "out-of-range", "10.0.0.0/31");
      assertCidrError(() => dnsServiceIP("10.0.0.0/29"), "out-of-range", "10.0.0.0/29", "cluster DNS");
      assertCidrError(() => dnsServiceIP("fd00::/125"), "out-of-range", "fd00::/125");
      assert.equal(kubernetesServiceIP("fd00::/127"), "fd00::1");
      assertCidrError(() => kubernetesServiceIP("10.96.0.1/12"), "host-bits", "10.96.0.0/12");
    });
  });

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
