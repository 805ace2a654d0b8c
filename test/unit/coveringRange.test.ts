import { strict as assert } from "assert";
import { coveringRange } from "../../lib/net/coveringRange";

describe("coveringRange: the smallest range holding two ranges (flannel's Network while nodes move)", () => {
  it("is the common prefix of two disjoint IPv4 ranges", () => {
    assert.equal(coveringRange("10.244.0.0/16", "10.48.0.0/16"), "10.0.0.0/8");
    assert.equal(coveringRange("10.244.0.0/16", "10.245.0.0/16"), "10.244.0.0/15");
    assert.equal(coveringRange("192.168.0.0/16", "10.0.0.0/8"), "0.0.0.0/0");
  });

  it("is the larger range when one holds the other, in either order", () => {
    assert.equal(coveringRange("10.0.0.0/8", "10.48.0.0/16"), "10.0.0.0/8");
    assert.equal(coveringRange("10.48.0.0/16", "10.0.0.0/8"), "10.0.0.0/8");
    assert.equal(coveringRange("10.48.0.0/16", "10.48.0.0/16"), "10.48.0.0/16");
  });

  it("works for IPv6", () => {
    assert.equal(coveringRange("fd00:10:244::/56", "fd00:10:48::/56"), "fd00:10::/38");
  });

  it("refuses two families", () => {
    assert.throws(() => coveringRange("10.0.0.0/8", "fd00::/8"), /different address families/);
  });
});
