import { strict as assert } from "assert";
import { rangeLists } from "../../../lib/config/rangeLists";

describe("lib/config rangeLists: a run's ranges as the flags and kubeadm list them", () => {
  const v4 = { serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" }, podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 } };

  it("single-stack: the ranges as they are", () => {
    assert.deepEqual(rangeLists(v4), { service: { from: "10.96.0.0/12", to: "10.112.0.0/12" }, pod: { from: "10.244.0.0/16", to: "10.48.0.0/16" } });
  });

  it("dual-stack: comma-separated pairs, primary first; an added family appears in `to` only", () => {
    const moving = rangeLists({ ...v4, secondFamily: { family: "IPv6", role: "move", serviceCidr: { from: "fd00:10:96::/112", to: "fd00:10:112::/112" }, podCidr: { from: "fd00:10:244::/56", to: "fd00:10:48::/56", nodeMaskSize: 64 } } });
    assert.deepEqual(moving.service, { from: "10.96.0.0/12,fd00:10:96::/112", to: "10.112.0.0/12,fd00:10:112::/112" });
    assert.deepEqual(moving.pod, { from: "10.244.0.0/16,fd00:10:244::/56", to: "10.48.0.0/16,fd00:10:48::/56" });
    const adding = rangeLists({ ...v4, secondFamily: { family: "IPv6", role: "add", serviceCidr: { to: "fd00:10:112::/112" }, podCidr: { to: "fd00:10:48::/56", nodeMaskSize: 64 } } });
    assert.deepEqual(adding.service, { from: "10.96.0.0/12", to: "10.112.0.0/12,fd00:10:112::/112" });
  });
});
