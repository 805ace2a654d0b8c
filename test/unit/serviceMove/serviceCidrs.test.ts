import * as assert from "assert";
import { planServiceCidrSwitch, temporaryServiceCidrName } from "../../../lib/serviceMove/serviceCidrs";

describe("ServiceCIDR switch plan (pure)", () => {
  it("a move: the temporary ServiceCIDR holds the new range; the default goes from old to new", () => {
    assert.deepStrictEqual(planServiceCidrSwitch("10.96.0.0/12", "10.112.0.0/12"), {
      temporary: { name: "cidr-migration-10-112-0-0-12", cidrs: ["10.112.0.0/12"] },
      default: { name: "kubernetes", from: ["10.96.0.0/12"], to: ["10.112.0.0/12"] },
      expansion: false,
    });
  });

  it("an expansion is told apart: the new range contains the old", () => {
    assert.equal(planServiceCidrSwitch("10.96.0.0/16", "10.96.0.0/15").expansion, true);
  });

  it("a dual-stack pair: the temporary ServiceCIDR holds both new ranges, the default goes from the old pair to the new (issue 17)", () => {
    assert.deepStrictEqual(planServiceCidrSwitch("10.96.0.0/12,fd00:10:96::/112", "10.112.0.0/12,fd00:10:112::/112"), {
      temporary: { name: "cidr-migration-10-112-0-0-12", cidrs: ["10.112.0.0/12", "fd00:10:112::/112"] },
      default: { name: "kubernetes", from: ["10.96.0.0/12", "fd00:10:96::/112"], to: ["10.112.0.0/12", "fd00:10:112::/112"] },
      expansion: false,
    });
    // one family moving, the other kept, is no expansion; adding a family is one (no Service moves)
    assert.equal(planServiceCidrSwitch("10.96.0.0/12,fd00:10:96::/112", "10.96.0.0/12,fd00:10:112::/112").expansion, false);
    assert.equal(planServiceCidrSwitch("10.96.0.0/12", "10.96.0.0/12,fd00:10:112::/112").expansion, true);
  });

  it("names are DNS-1123 for IPv6 too", () => {
    const name = temporaryServiceCidrName("FD00:10:96::/108");
    assert.equal(name, "cidr-migration-fd00-10-96---108");
    assert.match(name, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});
