import * as assert from "node:assert/strict";
import { HANDED_OFF_LABEL, handoffPatch, matchesSelector } from "../../../lib/nodeMove/apiSteps/dnsHandoff";

describe("the DNS hand-off of a drain (dnsHandoff.ts)", () => {
  const pod = { metadata: { name: "coredns-1", namespace: "kube-system", uid: "u-1", labels: { "k8s-app": "kube-dns", "pod-template-hash": "abc" } } };

  it("picks the pods of the DNS Service's selector only; an empty selector picks none", () => {
    assert.equal(matchesSelector(pod, { "k8s-app": "kube-dns" }), true);
    assert.equal(matchesSelector(pod, { "k8s-app": "kube-dns", tier: "dns" }), false);
    assert.equal(matchesSelector(pod, { "k8s-app": "other" }), false);
    assert.equal(matchesSelector(pod, {}), false);
    assert.equal(matchesSelector({ metadata: {} }, { "k8s-app": "kube-dns" }), false);
  });

  it("removes every label of the selector, marks the pod, leaves its other labels, and applies to that pod's uid only", () => {
    assert.deepEqual(handoffPatch(pod, { "k8s-app": "kube-dns" }), { metadata: { uid: "u-1", labels: { "k8s-app": null, [HANDED_OFF_LABEL]: "true" } } });
  });
});
