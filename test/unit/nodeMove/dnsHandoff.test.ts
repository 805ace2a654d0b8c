import * as assert from "node:assert/strict";
import { HANDED_OFF_LABEL, handoffPatch, matchesSelector } from "../../../lib/nodeMove/apiSteps/dnsHandoff";
import { nodeApiStepsProvider } from "../../../dynamic-providers/nodeApiSteps";

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

  it("the drain step refuses a dnsService that does not name a Service, before any change", async () => {
    const drain = { step: "drain", kubeconfig: "apiVersion: v1", node: "worker-1", runId: "run-1", version: "1", plannedPodCIDR: "10.48.1.0/24" };
    const bad = await nodeApiStepsProvider.check!({}, { ...drain, dnsService: "kube-dns" });
    const failure = bad.failures?.find((f) => f.property === "dnsService");
    assert.ok(failure, JSON.stringify(bad.failures));
    assert.match(failure.reason, /must name the DNS Service, e\.g\. \{ namespace: "kube-system", name: "kube-dns" \}/);
    const good = await nodeApiStepsProvider.check!({}, { ...drain, dnsService: { namespace: "kube-system", name: "kube-dns" } });
    assert.equal((good.failures ?? []).some((f) => f.property === "dnsService"), false);
  });
});
