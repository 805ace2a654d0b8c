/** The fleet file (lib/fleet/fleetFile.ts): what it accepts, and each refusal naming the stack and the key. */
import { strict as assert } from "assert";
import { ConfigError } from "../../../lib/config/errors";
import { overlappingRanges, parseFleetFile } from "../../../lib/fleet/fleetFile";

const FILE = "/srv/fleet/fleet.yaml";
const refusal = (text: string): string => {
  try {
    parseFleetFile(text, FILE);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `a ConfigError, not ${err}`);
    return err.message;
  }
  assert.fail("accepted");
};

describe("fleet file", () => {
  it("reads stacks with waves, backends and overrides; defaults: the file's directory, one at a time, not routable together", () => {
    const fleet = parseFleetFile([
      "stacks:",
      "  - { name: dev-a, wave: 1, backend: 'file:///srv/state/dev', config: { services.parallelism: 4 } }",
      "  - { name: stage, wave: 2, backend: 's3://state/stage' }",
      "  - { name: prod, wave: 2, backend: 's3://state/prod' }",
    ].join("\n"), FILE);
    assert.deepEqual(fleet, {
      projectDir: "/srv/fleet",
      concurrency: 1,
      routableTogether: false,
      stacks: [
        { name: "dev-a", wave: 1, backend: "file:///srv/state/dev", config: { "services.parallelism": 4 } },
        { name: "stage", wave: 2, backend: "s3://state/stage", config: {} },
        { name: "prod", wave: 2, backend: "s3://state/prod", config: {} },
      ],
    });
  });

  it("refuses a duplicate stack, a wave gap and bad fields, all at once, each naming the stack and the key", () => {
    const message = refusal([
      "project: ../app",
      "concurrency: 0",
      "colour: blue",
      "stacks:",
      "  - { name: dev, wave: 1, backend: 'file:///s' }",
      "  - { name: dev, wave: 1, backend: 'file:///s' }",
      "  - { name: prod, wave: 3, backend: 'ftp://x' }",
      "  - { name: 'bad name', wave: 0, backend: 'file:///s', extra: 1 }",
    ].join("\n"));
    for (const line of [
      "fleet.yaml: colour: unknown key; the keys are project, concurrency, routableTogether, stacks",
      "fleet.yaml: concurrency: is 0, not a whole number of 1 or more",
      "fleet.yaml: stacks[2] (prod).backend: is \"ftp://x\", not a backend URL (file://, s3://, azblob://, gs:// or https://)",
      "fleet.yaml: stacks[3] (bad name).extra: unknown key; a stack has name, wave, backend, config",
      "fleet.yaml: stacks[3].name: is \"bad name\", not a stack name (letters, digits, _ . -)",
      "fleet.yaml: stacks[3] (bad name).wave: is 0, not a wave number of 1 or more",
      "fleet.yaml: stacks[1] (dev): lists stack dev on file:///s again (first at stacks[0]); a stack runs once per fleet",
      "fleet.yaml: stacks: wave 2 has no stack, but wave 3 does; number the waves 1, 2, 3 ... without a gap",
    ]) assert.ok(message.split("\n").includes(line), `missing: ${line}\nin:\n${message}`);
  });

  it("refuses what is not a fleet: not YAML, not a mapping, no stacks", () => {
    assert.match(refusal("stacks: [unclosed"), /^fleet\.yaml: is not YAML/);
    assert.equal(refusal("- a\n- b\n"), "fleet.yaml: must be a mapping with a stacks: list");
    assert.equal(refusal("concurrency: 2\n"), "fleet.yaml: stacks: must list at least one stack as {name, wave, backend}");
  });

  it("clusters routable together may not move to overlapping ranges; otherwise they may", () => {
    const text = (routable: boolean) => `routableTogether: ${routable}\nstacks:\n  - { name: a, wave: 1, backend: 'file:///s' }\n  - { name: b, wave: 1, backend: 'file:///s' }\n`;
    const ranges = new Map([["a", { serviceCidr: "10.112.0.0/12", podCidr: "10.48.0.0/16" }], ["b", { serviceCidr: "10.120.0.0/16", podCidr: "10.49.0.0/16" }]]);
    assert.deepEqual(overlappingRanges(parseFleetFile(text(true), FILE), ranges), [
      { key: "stack b: cidr-migration:serviceCidr.to", message: "10.120.0.0/16 overlaps stack a's serviceCidr.to 10.112.0.0/12, and the fleet file says the clusters must be routable together; give each cluster its own range" },
    ]);
    assert.deepEqual(overlappingRanges(parseFleetFile(text(false), FILE), ranges), []);
    ranges.set("b", { serviceCidr: "10.128.0.0/16", podCidr: "10.49.0.0/16" });
    assert.deepEqual(overlappingRanges(parseFleetFile(text(true), FILE), ranges), []);
  });
});
