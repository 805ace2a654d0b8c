import { strict as assert } from "assert";
import { inRangeList, isRangeList, rangeForFamilyOf } from "../../../lib/net/rangeList";

describe("lib/net rangeList: one range, or a dual-stack pair as the flags list it", () => {
  it("takes one CIDR or one of each family, either first; nothing else", () => {
    for (const ok of ["10.96.0.0/12", "fd00:10:96::/112", "10.96.0.0/12,fd00:10:96::/112", "fd00:10:96::/112,10.96.0.0/12"]) assert.ok(isRangeList(ok), ok);
    for (const bad of ["", "10.96.0.0/12,10.112.0.0/12", "10.96.0.0/12,", "10.96.0.0/12,fd00::/64,fd01::/64", "10.96.0.0", 12]) assert.ok(!isRangeList(bad), String(bad));
  });

  it("an address is tested against its own family's range", () => {
    const list = "10.100.0.0/16,fd00:10:100::/112";
    assert.equal(rangeForFamilyOf(list, "fd00:10:100::5"), "fd00:10:100::/112");
    assert.ok(inRangeList(list, "10.100.3.4"));
    assert.ok(inRangeList(list, "fd00:10:100::5"));
    assert.ok(!inRangeList(list, "fd00:10:101::5"));
    assert.ok(!inRangeList("10.100.0.0/16", "fd00:10:100::5"), "no range of that family");
  });
});
