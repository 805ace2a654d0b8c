import assert from "node:assert/strict";
import { CidrError, addressOffset, cidrContains, cidrSize, cidrsOverlap, dnsServiceIP, familyOf, isCidr, isIpAddress, kubernetesServiceIP, normalizeCidr, normalizeIp, nthAddress, parseCidr } from "../../../lib/net/cidr";
import { assertCidrError } from "../../support/cidrAssertions";

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

});
