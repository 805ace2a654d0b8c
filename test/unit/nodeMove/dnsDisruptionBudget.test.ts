import * as assert from "node:assert/strict";
import { budgetsCoveringPods, dnsBudgetBody, dnsBudgetName } from "../../../lib/nodeMove/dnsDisruptionBudget";
import { dnsDisruptionBudgetProvider } from "../../../dynamic-providers/dnsDisruptionBudget";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";

// The pure half of the DNS pods' budget; test/integration/dnsDisruptionBudget.test.ts runs it against a real
// apiserver and KCM's disruption controller.

const DNS_POD: KubeObject = { metadata: { name: "coredns-1", labels: { "k8s-app": "kube-dns", "pod-template-hash": "abc" } } };
const budget = (name: string, selector: unknown, labels: Record<string, string> = {}): KubeObject => ({ metadata: { name, labels }, spec: { selector } });

describe("the DNS pods' disruption budget (nodeRollout.dnsDisruptionBudget)", () => {
  it("is maxUnavailable 1 over exactly the DNS Service's selector, labelled as this tool's", () => {
    const body = dnsBudgetBody({ namespace: "kube-system", name: "kube-dns" }, { "k8s-app": "kube-dns" }, "v1");
    assert.equal(body.apiVersion, "policy/v1");
    assert.equal(body.metadata?.name, "kube-dns-cidr-migration");
    assert.equal(body.metadata?.namespace, "kube-system");
    assert.deepEqual(body.metadata?.labels, { "app.kubernetes.io/managed-by": "cidr-migration.io" });
    assert.deepEqual(body.spec, { maxUnavailable: 1, selector: { matchLabels: { "k8s-app": "kube-dns" } } });
    assert.equal(dnsBudgetName("x".repeat(300)).length, 253);
  });

  it("a user's budget that selects a DNS pod counts, by labels or expressions; ours and unrelated ones do not", () => {
    const covering = budgetsCoveringPods([
      budget("ours", { matchLabels: { "k8s-app": "kube-dns" } }, { "app.kubernetes.io/managed-by": "cidr-migration.io" }),
      budget("other-app", { matchLabels: { app: "web" } }),
      budget("by-expression", { matchExpressions: [{ key: "k8s-app", operator: "In", values: ["kube-dns", "node-local-dns"] }] }),
      budget("by-labels", { matchLabels: { "k8s-app": "kube-dns" } }),
    ], [DNS_POD], "v1");
    assert.deepEqual(covering.map((b) => b.metadata?.name), ["by-expression", "by-labels"]);
  });

  it("an empty selector covers every pod in policy/v1 and none in policy/v1beta1", () => {
    assert.equal(budgetsCoveringPods([budget("all", {})], [DNS_POD], "v1").length, 1);
    assert.equal(budgetsCoveringPods([budget("all", {})], [DNS_POD], "v1beta1").length, 0);
    assert.equal(budgetsCoveringPods([budget("all", { matchLabels: { "k8s-app": "kube-dns" } })], [], "v1").length, 0, "no DNS pod: nothing to cover");
  });

  it("the provider's check names the budget for the preview and refuses a bad step; a new run's trigger is a change", async () => {
    const news = { kubeconfig: "apiVersion: v1", step: "open", namespace: "kube-system", name: "kube-dns", trigger: "run-1", version: "1" };
    const checked = await dnsDisruptionBudgetProvider.check!({}, news);
    assert.deepEqual(checked.failures, []);
    assert.equal((checked.inputs as Record<string, unknown>).budget, "kube-system/kube-dns-cidr-migration");
    const bad = await dnsDisruptionBudgetProvider.check!({}, { ...news, step: "sometimes" });
    assert.match(bad.failures![0].reason, /step must be "open" or "close"; got "sometimes"/);
    const olds = { step: "open" as const, namespace: "kube-system", name: "kube-dns", trigger: "run-1", version: "1", budget: "kube-system/kube-dns-cidr-migration", actions: [] };
    assert.equal((await dnsDisruptionBudgetProvider.diff!("id", olds, { ...news }))?.changes, false);
    assert.equal((await dnsDisruptionBudgetProvider.diff!("id", olds, { ...news, trigger: "run-2" }))?.changes, true);
  });
});
