/** A fleet file's config overrides (lib/fleet/configOverrides): on the values, on a copy of the stack file, refused on secrets. */
import { strict as assert } from "assert";
import { parse } from "yaml";
import { applyOverrides, overrideProblems, overridesOf, overrideStackFile } from "../../../lib/fleet/configOverrides";

const STACK_FILE = [
  "encryptionsalt: v1:abc:def",
  "config:",
  "  # the ranges",
  "  cidr-migration:serviceCidr:",
  "    from: 10.96.0.0/12",
  "    to: 10.112.0.0/12",
  "  cidr-migration:services:",
  "    allowLoadBalancerRecreate: true",
  "  cidr-migration:ssh:",
  "    privateKey:",
  "      secure: v1:xyz:AAAA",
  "",
].join("\n");

describe("fleet: config overrides", () => {
  const overrides = overridesOf({ "services.parallelism": 4, "serviceCidr.to": "10.128.0.0/12", cni: "calico", "nodeRollout.maxUnavailable": 2 });

  it("sets each path on a copy of the values, leaving the rest and the original alone", () => {
    const values = { serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" }, services: { allowLoadBalancerRecreate: true }, cni: "auto" };
    const before = structuredClone(values);
    assert.deepEqual(applyOverrides(values, overrides), {
      serviceCidr: { from: "10.96.0.0/12", to: "10.128.0.0/12" },
      services: { allowLoadBalancerRecreate: true, parallelism: 4 },
      cni: "calico",
      nodeRollout: { maxUnavailable: 2 },
    });
    assert.deepEqual(values, before);
  });

  it("writes the same into a copy of the stack file, keeping the salt, the secure values and the comments", () => {
    const text = overrideStackFile(STACK_FILE, overrides);
    assert.match(text, /^encryptionsalt: v1:abc:def$/m);
    assert.match(text, /# the ranges/);
    assert.deepEqual(parse(text).config, {
      "cidr-migration:serviceCidr": { from: "10.96.0.0/12", to: "10.128.0.0/12" },
      "cidr-migration:services": { allowLoadBalancerRecreate: true, parallelism: 4 },
      "cidr-migration:ssh": { privateKey: { secure: "v1:xyz:AAAA" } },
      "cidr-migration:cni": "calico",
      "cidr-migration:nodeRollout": { maxUnavailable: 2 },
    });
    assert.equal(overrideStackFile(STACK_FILE, []), STACK_FILE, "no override: the file as it was");
  });

  it("refuses an override of a secret key and an empty path part, naming the stack and the key", () => {
    assert.deepEqual(overrideProblems("prod", overridesOf({ "ssh.privateKey": "x", "services..parallelism": 2, "services.parallelism": 2 }), new Set(["ssh"])), [
      { key: "stack prod: config.ssh.privateKey", message: "overrides cidr-migration:ssh, which the stack holds as a secret; set secrets in the stack with pulumi config set --secret, never in the fleet file" },
      { key: "stack prod: config.services..parallelism", message: "is not a config path (an empty part between dots); write it as services.parallelism" },
    ]);
  });
});
