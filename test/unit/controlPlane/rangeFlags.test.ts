import { strict as assert } from "assert";
import { readFileSync } from "fs";
import * as path from "path";
import { readFlags, setFlags } from "../../../lib/controlPlane/manifestFlags";
import { apiserverRangeFlags, controllerManagerRangeFlags } from "../../../lib/controlPlane/rangeFlags";

const V4 = { serviceCidr: "10.112.0.0/12", podCidr: "10.48.0.0/16", nodeMaskSize: 24 };
const V6 = { serviceCidr: "fd00:10:112::/112", podCidr: "fd00:10:48::/56", nodeMaskSize: 64 };
const KCM = readFileSync(path.join(__dirname, "..", "..", "fixtures", "manifests", "v1.29-single-cp-kube-controller-manager.yaml"), "utf8");

describe("lib/controlPlane rangeFlags: the components' range flags for one family or two (issue 17)", () => {
  it("one family: the flags as a single-stack migration always wrote them", () => {
    assert.deepEqual(apiserverRangeFlags([V4]), { "service-cluster-ip-range": "10.112.0.0/12" });
    assert.deepEqual(controllerManagerRangeFlags([V4], false), {
      "cluster-cidr": "10.48.0.0/16", "service-cluster-ip-range": "10.112.0.0/12", "node-cidr-mask-size": 24, "allocate-node-cidrs": false,
    });
  });

  it("two families: comma-separated pairs in family order, a mask per family, and the single mask removed", () => {
    assert.deepEqual(apiserverRangeFlags([V4, V6]), { "service-cluster-ip-range": "10.112.0.0/12,fd00:10:112::/112" });
    assert.deepEqual(controllerManagerRangeFlags([V6, V4], true), {
      "cluster-cidr": "fd00:10:48::/56,10.48.0.0/16",
      "service-cluster-ip-range": "fd00:10:112::/112,10.112.0.0/12",
      "node-cidr-mask-size": null,
      "node-cidr-mask-size-ipv6": 64,
      "node-cidr-mask-size-ipv4": 24,
      "allocate-node-cidrs": true,
    });
  });

  it("applied to kubeadm's single-stack KCM manifest, it reads back as a dual-stack KCM", () => {
    const { text } = setFlags(KCM, controllerManagerRangeFlags([V4, V6], false));
    const flags = readFlags(text);
    assert.deepEqual(flags.get("cluster-cidr"), ["10.48.0.0/16,fd00:10:48::/56"]);
    assert.equal(flags.get("node-cidr-mask-size"), undefined);
    assert.deepEqual(flags.get("node-cidr-mask-size-ipv4"), ["24"]);
    assert.deepEqual(flags.get("node-cidr-mask-size-ipv6"), ["64"]);
    assert.deepEqual(flags.get("allocate-node-cidrs"), ["false"]);
  });
});
