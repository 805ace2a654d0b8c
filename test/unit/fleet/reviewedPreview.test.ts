/**
 * Whether a stack's preview is still the reviewed one (lib/fleet/reviewedPreview): a resumed run whose first steps
 * already ran is; an added resource, a changed input, a delete or a missing resource is not. On the real engine's
 * preview of the sandbox (test/fixtures/fleet).
 */
import { strict as assert } from "assert";
import { previewFromEvents } from "../../../lib/fleet/previewFromEvents";
import { changesSinceReview } from "../../../lib/fleet/reviewedPreview";
import { PreviewDigest, PreviewStep } from "../../../lib/gate/previewDigest";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";
import { PREVIEW_EVENTS, PREVIEW_PLAN } from "../../support/fleetPreviewFixture";

const reviewed = previewFromEvents(PREVIEW_EVENTS, PREVIEW_PLAN);
const edit = (fn: (steps: PreviewStep[]) => void): PreviewDigest => {
  const copy = structuredClone(reviewed);
  fn(copy.steps);
  return copy;
};
const byName = (steps: PreviewStep[], name: string) => steps.find((s) => s.urn.endsWith(`::${name}`))!;

describe("fleet: is the preview still the reviewed one", () => {
  it("the same preview again: no change", () => {
    assert.deepEqual(changesSinceReview(reviewed, structuredClone(reviewed)), []);
  });

  it("a resumed run: the steps that ran are `same` now, and values unknown at review are known: no change", () => {
    const resumed = edit((steps) => {
      for (const name of ["preflight", "etcd-snapshot"]) byName(steps, name).op = "same";
      byName(steps, "control-plane-cp-1-kcm-write").newState!.inputs!.script = "#!/bin/sh\n# now known";
    });
    assert.equal(byName(reviewed.steps, "control-plane-cp-1-kcm-write").newState!.inputs!.script, UNKNOWN_VALUE);
    assert.deepEqual(changesSinceReview(reviewed, resumed), []);
  });

  it("an input that was known and now differs is named with its path", () => {
    const changed = edit((steps) => {
      (byName(steps, "preflight").newState!.inputs as Record<string, unknown>).trigger = "another-run";
    });
    assert.deepEqual(changesSinceReview(reviewed, changed), ["preflight: input trigger differs"]);
  });

  it("a new resource, a missing one, a delete not reviewed, and another type", () => {
    const changed = edit((steps) => {
      const extra = structuredClone(byName(steps, "etcd-snapshot"));
      extra.urn = extra.urn.replace("::etcd-snapshot", "::etcd-snapshot-2");
      extra.newState!.urn = extra.urn;
      steps.push(extra);
      steps.splice(steps.indexOf(byName(steps, "control-plane-cp-1-backup")), 1);
      byName(steps, "control-plane-cp-1-kcm-read").op = "delete";
      byName(steps, "control-plane").newState!.type = "cidr-migration:controlPlane:Other";
    });
    assert.deepEqual(changesSinceReview(reviewed, changed).sort(), [
      "control-plane-cp-1-backup: no longer in the preview",
      "control-plane-cp-1-kcm-read: would now be deleted",
      "control-plane: type cidr-migration:controlPlane:ControlPlane → cidr-migration:controlPlane:Other",
      "etcd-snapshot-2 (pulumi-nodejs:dynamic/cidr-migration:EtcdSnapshot): a new resource",
    ]);
  });

  it("lists at most eight changes, then a count", () => {
    const changed = edit((steps) => {
      for (let i = 0; i < 11; i++) {
        const extra = structuredClone(steps[1]);
        extra.urn = `${extra.urn}-${i}`;
        steps.push(extra);
      }
    });
    const lines = changesSinceReview(reviewed, changed);
    assert.equal(lines.length, 9);
    assert.equal(lines[8], "... and 3 more");
  });
});
