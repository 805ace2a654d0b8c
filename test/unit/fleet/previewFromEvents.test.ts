/**
 * A preview run through the Automation API becomes the `pulumi preview --json` document (lib/fleet/previewFromEvents),
 * from the real engine's events and saved plan (test/fixtures/fleet), so the gate judges it as it judges CI's.
 */
import { strict as assert } from "assert";
import { previewFromEvents, stackOutputsFromEvents } from "../../../lib/fleet/previewFromEvents";
import { parsePreviewDigest } from "../../../lib/gate/previewDigest";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";
import { PREVIEW_EVENTS as EVENTS, PREVIEW_PLAN as PLAN } from "../../support/fleetPreviewFixture";
const urn = (name: string, type: string) => `urn:pulumi:fleet-a::cidr-migration::${type}::${name}`;

describe("fleet: a preview from engine events", () => {
  const digest = previewFromEvents(EVENTS, PLAN);

  it("one step per resource event, in order, with op, states and the saved plan's dependencies", () => {
    assert.deepEqual(digest.steps.map((s) => [s.op, s.urn.split("::").pop()]), [
      ["create", "cidr-migration-fleet-a"],
      ["create", "preflight"],
      ["create", "etcd-snapshot"],
      ["create", "control-plane"],
      ["create", "control-plane-cp-1-backup"],
      ["create", "control-plane-cp-1-kcm-read"],
      ["create", "control-plane-cp-1-kcm-write"],
    ]);
    const read = digest.steps[5];
    const remoteScript = "cidr-migration:controlPlane:ControlPlane$pulumi-nodejs:dynamic/cidr-migration:RemoteScript";
    assert.equal(read.newState!.type, "pulumi-nodejs:dynamic/cidr-migration:RemoteScript");
    assert.deepEqual(read.newState!.dependencies, [urn("control-plane-cp-1-backup", remoteScript)]);
    assert.equal(read.newState!.parent, urn("control-plane", "cidr-migration:controlPlane:ControlPlane"));
    assert.equal(read.oldState, undefined);
    assert.equal(read.detailedDiff, null);
    // The write step's script is not known until the read has run: the engine's unknown sentinel stays.
    assert.equal(digest.steps[6].newState!.inputs!.script, UNKNOWN_VALUE);
  });

  it("keeps the info diagnostics, not the debug ones, and the engine's change summary", () => {
    assert.ok(digest.diagnostics.length > 0);
    assert.ok(digest.diagnostics.every((d) => d.severity !== "debug"));
    assert.match(digest.diagnostics.map((d) => d.message).join(""), /node rollout: 4 node\(s\) in 3 wave\(s\)/);
    assert.deepEqual(digest.changeSummary, { create: 72 });
  });

  it("is a document the gate's parser accepts as it accepts `pulumi preview --json`", () => {
    const parsed = parsePreviewDigest(JSON.stringify(digest), "fleet.json");
    assert.equal(parsed.steps.length, 7);
  });

  it("reads the stack outputs the preview registered", () => {
    const outputs = stackOutputsFromEvents(EVENTS);
    assert.equal(outputs.servicesMoving, 12);
    assert.equal(outputs.nodesMoving, 4);
    assert.deepEqual((outputs.estimate as { manualRunbookMinutes: unknown }).manualRunbookMinutes, { min: 150, max: 162 });
    assert.equal(outputs.verifyWarnings, UNKNOWN_VALUE, "not known until up");
  });

  it("a resource the saved plan lacks gets no dependencies rather than someone else's", () => {
    const lone = previewFromEvents(EVENTS, {});
    assert.ok(lone.steps.every((s) => s.newState!.dependencies!.length === 0));
  });
});
