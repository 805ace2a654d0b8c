import { strict as assert } from "assert";
import { UserError } from "../../../lib/config/errors";
import { ServiceMove } from "../../../lib/plan/planModel";
import { refuseWithoutStandInRoom } from "../../../lib/plan/standInRoom";

const move = (n: number, inPlace: boolean): ServiceMove => ({
  namespace: "default", name: `s${n}`, type: "ClusterIP", oldClusterIP: `10.96.0.${n}`, newClusterIP: `10.112.0.${n}`, action: "recreate", reason: "", keepsOffset: true, ...(inPlace ? { inPlace } : {}),
});

describe("services.moveInPlace: room for the stand-ins in the new range", () => {
  it("passes while the range has a free address per in-place move beside every planned one", () => {
    // a /28 has 16 addresses: less the network, broadcast and first, 13; 6 planned leave 7 for 6 stand-ins
    refuseWithoutStandInRoom([1, 2, 3, 4, 5, 6].map((n) => move(n, true)), ["10.112.0.0/28"]);
    refuseWithoutStandInRoom([1, 2, 3, 4, 5, 6, 7, 8].map((n) => move(n, n <= 5)), ["10.112.0.0/28"]);
  });

  it("refuses before any change, naming the key, the range and what to do", () => {
    assert.throws(() => refuseWithoutStandInRoom([1, 2, 3, 4, 5, 6, 7].map((n) => move(n, true)), ["10.112.0.0/28"]), (e: Error) => e instanceof UserError
      && /^services\.moveInPlace: the new Service range 10\.112\.0\.0\/28 has room for 6 temporary stand-in Service\(s\) beside its 7 planned address\(es\), and 7 Service\(s\) move in place; set cidr-migration:services\.moveInPlace to false .* or plan a larger range\nNothing was changed\.$/.test(e.message));
  });
});
