import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { UserError } from "../../../lib/config/errors";
import { DependencyGraph } from "../../../lib/gate/dependencyGraph";
import { parseFindingsDocument } from "../../../lib/gate/findingsDocument";
import { GATE_COMMENT_MARKER, renderGateMarkdown } from "../../../lib/gate/gateMarkdown";
import { judgePreview } from "../../../lib/gate/judgePreview";
import { nodeNameIn } from "../../../lib/gate/nodeOrder";
import { isDynamicType, ownershipOf } from "../../../lib/gate/ownership";
import { parsePlanDocument } from "../../../lib/gate/planDocument";
import { PreviewDigest, PreviewStep, parsePreviewDigest } from "../../../lib/gate/previewDigest";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";
import { serviceMovesIn } from "../../../lib/gate/serviceMoves";
import { parseUrn } from "../../../lib/gate/urn";
import { Plan } from "../../../lib/plan/planModel";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "preview");
const read = (file: string) => readFileSync(path.join(FIXTURES, file), "utf8");
const preview = (file: string): PreviewDigest => parsePreviewDigest(read(file), file);
const plan = (): Plan => parsePlanDocument(read("plan.json"), "plan.json");
const codes = (reasons: { code: string }[]) => reasons.map((r) => r.code).sort();
const byName = (digest: PreviewDigest, name: string): PreviewStep => {
  const step = digest.steps.find((s) => parseUrn(s.urn)?.name === name);
  assert.ok(step, `fixture has a step named ${name}`);
  return step;
};

describe("gate: preview JSON documents", () => {
  it("reads the documented PreviewDigest: steps with op/urn/states, diagnostics, changeSummary, duration in ns", () => {
    const digest = preview("pass.json");
    assert.equal(digest.steps[0].op, "same");
    assert.equal(digest.steps[0].newState?.type, "pulumi:pulumi:Stack");
    assert.equal(digest.duration, 4_873_000_000);
    assert.equal(digest.changeSummary.create, digest.steps.filter((s) => s.op === "create").length);
    assert.deepEqual([...new Set(digest.diagnostics.map((d) => d.severity))].sort(), ["info", "warning"]);
  });

  it("refuses the streaming event log with one line naming the variable to unset", () => {
    assert.throws(() => preview("streaming-events.jsonl"), (err: unknown) => {
      assert.ok(err instanceof UserError);
      assert.match(err.message, /PULUMI_ENABLE_STREAMING_JSON_PREVIEW/);
      assert.equal(err.message.split("\n").length, 1);
      return true;
    });
  });

  it("refuses text that is not a preview document, naming the file and the field", () => {
    assert.throws(() => parsePreviewDigest("Previewing update (prod)\n", "preview.txt"), /preview\.txt: not JSON .*pulumi preview --json/);
    assert.throws(() => parsePreviewDigest("[]", "p.json"), /p\.json: not a preview document/);
    assert.throws(() => parsePreviewDigest("{}", "p.json"), /holds no steps, diagnostics or changeSummary/);
    assert.throws(() => parsePreviewDigest(JSON.stringify({ steps: [{ op: "create", urn: "web" }] }), "p.json"), /steps\[0\]\.urn "web" is not a Pulumi URN/);
    assert.throws(() => parsePreviewDigest(JSON.stringify({ steps: [{ urn: "urn:pulumi:a::b::t::n" }] }), "p.json"), /steps\[0\]\.op is missing/);
    assert.throws(() => parsePreviewDigest(read("plan.json"), "plan.json"), /holds no steps/);
  });

  it("refuses a plan file that is not a plan, and a preflight report of the wrong command", () => {
    assert.throws(() => parsePlanDocument(read("pass.json"), "pass.json"), /pass\.json: not a plan \(no serviceCidr, podCidr, services, nodes, phases, estimate\); write it with: cidr-migration plan/);
    assert.throws(() => parseFindingsDocument(read("verify-after-up.json"), "v.json", "preflight"), /this is a verify report, expected preflight/);
    assert.throws(() => parseFindingsDocument(JSON.stringify({ findings: [{ code: "X", severity: "fatal", object: "o", message: "m" }] }), "f.json", "preflight"), /findings\[0\] needs .* severity of blocker, warning or info/);
  });

  it("recomputes the preflight summary from the findings, so an edited summary cannot hide a blocker", () => {
    const doctored = { ...JSON.parse(read("preflight-blocker.json")), exitCode: 0, summary: { blocker: 0, warning: 0, info: 0 } };
    const report = parseFindingsDocument(JSON.stringify(doctored), "preflight.json", "preflight");
    assert.deepEqual(report.summary, { blocker: 1, warning: 1, info: 1 });
    assert.equal(report.exitCode, 1);
  });
});

describe("gate: URNs and ownership", () => {
  it("splits a URN into stack, project, type chain and a name that may contain ::", () => {
    assert.deepEqual(parseUrn("urn:pulumi:prod::cidr-migration::cidr-migration:controlPlane:ControlPlane$command:remote:Command::cp::odd::name"), {
      stack: "prod",
      project: "cidr-migration",
      typeChain: ["cidr-migration:controlPlane:ControlPlane", "command:remote:Command"],
      type: "command:remote:Command",
      name: "cp::odd::name",
    });
    assert.equal(parseUrn("not-a-urn"), undefined);
  });

  it("counts our components' children and our dynamic resources as the migration's, providers as plumbing", () => {
    const u = (chain: string) => `urn:pulumi:prod::p::${chain}::n`;
    assert.equal(ownershipOf(u("cidr-migration:controlPlane:ControlPlane$command:remote:Command")), "migration");
    assert.equal(ownershipOf(u("cidr-migration:calicoIPPool:CalicoIPPool$kubernetes:crd.projectcalico.org/v1:IPPool")), "migration");
    assert.equal(ownershipOf(u("pulumi-nodejs:dynamic/cidr-migration:EtcdSnapshot")), "migration");
    assert.equal(ownershipOf(u("pulumi-nodejs:dynamic:Resource")), "migration");
    assert.equal(ownershipOf(u("pulumi:providers:kubernetes")), "plumbing");
    assert.equal(ownershipOf(u("pulumi:pulumi:Stack")), "plumbing");
    assert.equal(ownershipOf(u("kubernetes:core/v1:Service")), "outside");
    assert.equal(ownershipOf(u("my-app:web:Frontend$kubernetes:apps/v1:Deployment")), "outside");
    assert.equal(isDynamicType("pulumi-nodejs:dynamic/cidr-migration:NodeDrain"), true);
    assert.equal(isDynamicType("pulumi-nodejs:dynamicx:Resource"), false);
  });

  it("finds a node name between separators and prefers the longest (worker-1 is not worker-10)", () => {
    const names = ["worker-1", "worker-10", "cp-1"];
    assert.equal(nodeNameIn("nodes-worker-10-drain", names), "worker-10");
    assert.equal(nodeNameIn("nodes-worker-1-drain", names), "worker-1");
    assert.equal(nodeNameIn("nodes-worker-1", names), "worker-1");
    assert.equal(nodeNameIn("nodes-xcp-1-drain", names), undefined);
    assert.equal(nodeNameIn("nodes-cp-12-drain", names), undefined);
  });

  it("expands a dependency on a component to everything under it, and on a custom resource to that resource alone", () => {
    const U = (name: string) => `urn:pulumi:s::p::t:m:T::${name}`;
    const step = (name: string, custom: boolean, extra: Record<string, unknown> = {}): PreviewStep => ({ op: "create", urn: U(name), newState: { urn: U(name), type: "t:m:T", custom, ...extra }, detailedDiff: null });
    const graph = new DependencyGraph([
      step("component", false),
      step("child-a", true, { parent: U("component") }),
      step("grandchild", true, { parent: U("child-a") }),
      step("waits-for-component", true, { dependencies: [U("component")] }),
      step("waits-for-child", true, { propertyDependencies: { create: [U("child-a")] } }),
    ]);
    assert.deepEqual([...graph.ancestors(U("waits-for-component"))].sort(), [U("child-a"), U("component")]);
    assert.deepEqual([...graph.ancestors(U("waits-for-child"))], [U("child-a")]);
  });
});

describe("gate: judging a preview against the plan", () => {
  it("passes the planned migration, with an unrelated in-place update and unchanged resources beside it", () => {
    const digest = preview("pass.json");
    assert.ok(digest.steps.some((s) => s.op === "update" && ownershipOf(s.urn) === "outside"), "fixture holds an outside update");
    const result = judgePreview(digest, plan(), parseFindingsDocument(read("preflight-clean.json"), "preflight-clean.json", "preflight"));
    assert.deepEqual(result.reasons, []);
    assert.equal(result.passed, true);
    assert.equal(result.exitCode, 0);
    assert.deepEqual(codes(result.notes), ["PREVIEW_WARNING"]);
    assert.equal(result.summary.serviceMoves, 8);
    assert.equal(result.summary.rolloutNodes, 6);
  });

  it("fails when a resource outside the migration is deleted or replaced (one reason per replacement, not per physical step)", () => {
    const result = judgePreview(preview("outside-delete-replace.json"), plan());
    assert.equal(result.exitCode, 1);
    assert.deepEqual(result.reasons.map((r) => [r.code, parseUrn(r.object)?.name]), [
      ["OUTSIDE_RESOURCE_DELETED", "shop-web"],
      ["OUTSIDE_RESOURCE_REPLACED", "shop-db"],
    ]);
    assert.match(result.reasons[1].message, /changed: spec\.serviceName/);
  });

  it("says when a deleted outside resource is only forgotten (retainOnDelete) and still fails", () => {
    const digest = preview("outside-delete-replace.json");
    const deleted = digest.steps.find((s) => s.op === "delete")!;
    deleted.oldState!.retainOnDelete = true;
    const [reason] = judgePreview(digest, plan()).reasons;
    assert.equal(reason.code, "OUTSIDE_RESOURCE_DELETED");
    assert.match(reason.message, /retainOnDelete: the object stays, but Pulumi forgets it/);
  });

  it("fails on Service moves the plan does not list, moves to another IP, and a stand-in off the plan", () => {
    const result = judgePreview(preview("service-moves-off-plan.json"), plan());
    assert.deepEqual(result.reasons.map((r) => `${r.code} ${r.object}`), [
      "SERVICE_IP_DIFFERS Service shop/web",
      "SERVICE_MOVE_NOT_IN_PLAN Service shop/db-headless",
      "SERVICE_MOVE_NOT_IN_PLAN Service shop/checkout",
      "STANDIN_NOT_IN_PLAN Service kube-system/kube-dns-cidr-migration-temp",
    ]);
    assert.match(result.reasons[0].message, /at 10\.116\.99\.99, the plan at 10\.116\.12\.7/);
    assert.match(result.reasons[1].message, /the plan leaves it alone \(headless/);
  });

  it("on an update judges only the moves whose entry changed (the provider's own diff)", () => {
    const digest = preview("service-moves-update.json");
    assert.equal(byName(digest, "services-bulk").op, "update");
    const bulkMoves = serviceMovesIn(digest.steps).filter((m) => parseUrn(m.urn)?.name === "services-bulk");
    assert.deepEqual(bulkMoves.map((m) => m.key), ["shop/web"]);
    assert.deepEqual(judgePreview(digest, plan()).reasons.map((r) => `${r.code} ${r.object}`), ["SERVICE_IP_DIFFERS Service shop/web"]);
  });

  it("fails closed when the moves or a planned IP are unknown at preview time", () => {
    const digest = preview("pass.json");
    const bulk = byName(digest, "services-bulk");
    (bulk.newState!.inputs!.moves as Record<string, { toIP: string }>)["shop/web"].toIP = UNKNOWN_VALUE;
    assert.deepEqual(judgePreview(digest, plan()).reasons.map((r) => `${r.code} ${r.object}`), ["SERVICE_IP_UNKNOWN Service shop/web"]);
    bulk.newState!.inputs!.moves = UNKNOWN_VALUE;
    assert.deepEqual(codes(judgePreview(digest, plan()).reasons), ["SERVICE_MOVES_UNKNOWN"]);
  });

  it("services.strategy etcd-rewrite: reads the moves from the EtcdRewrite step's old → new map and judges them the same way", () => {
    const digest = preview("pass.json");
    const reviewed = plan();
    // the rewrite graph declares no ServiceRecreation: one EtcdRewrite lists every move, the kubernetes and DNS Services too
    digest.steps = digest.steps.filter((s) => !/ServiceRecreation$/.test(s.newState?.type ?? ""));
    const services = Object.fromEntries(reviewed.services.filter((sv) => sv.action === "recreate").map((sv) => [`${sv.namespace}/${sv.name}`, `${sv.oldClusterIP} → ${sv.newClusterIP}`]));
    const rewrite: PreviewStep = {
      op: "create",
      urn: "urn:pulumi:prod::cidr-migration::pulumi-nodejs:dynamic/cidr-migration:EtcdRewrite::etcd-rewrite",
      newState: { type: "pulumi-nodejs:dynamic/cidr-migration:EtcdRewrite", inputs: { services, nodes: {}, trigger: "t" } },
    } as unknown as PreviewStep;
    digest.steps.push(rewrite);
    const moves = serviceMovesIn(digest.steps);
    assert.equal(moves.length, Object.keys(services).length);
    assert.equal(moves.find((m) => m.key === "default/kubernetes")?.kind, "kubernetes");
    assert.deepEqual(judgePreview(digest, reviewed).reasons, []);
    services["shop/web"] = "10.96.12.7 → 10.116.99.99";
    assert.deepEqual(judgePreview(digest, reviewed).reasons.map((r) => `${r.code} ${r.object}`), ["SERVICE_IP_DIFFERS Service shop/web"]);
    rewrite.newState!.inputs!.services = UNKNOWN_VALUE;
    assert.deepEqual(codes(judgePreview(digest, reviewed).reasons), ["SERVICE_MOVES_UNKNOWN"]);
  });

  it("a dual-stack Service (issue 17): its second ClusterIP moves as the plan says, or the gate fails", () => {
    const digest = preview("pass.json");
    const reviewed = plan();
    const web = reviewed.services.find((sv) => sv.namespace === "shop" && sv.name === "web")!;
    web.oldClusterIPs = [web.oldClusterIP!, "fd00:10:96::7"];
    web.newClusterIPs = [web.newClusterIP!, "fd00:10:112::7"];
    const moves = byName(digest, "services-bulk").newState!.inputs!.moves as Record<string, Record<string, unknown>>;
    const judged = () => judgePreview(digest, reviewed).reasons.map((r) => `${r.code} ${r.object}: ${r.message}`);
    assert.match(judged().join("\n"), /SERVICE_IP_DIFFERS Service shop\/web: the preview moves only its first ClusterIP, and the plan moves its second too \(fd00:10:96::7 -> fd00:10:112::7\)/);
    moves["shop/web"].otherFamily = { fromIP: "fd00:10:96::7", toIP: "fd00:10:112::7" };
    assert.deepEqual(judged(), []);
    moves["shop/web"].otherFamily = { fromIP: "fd00:10:96::7", toIP: "fd00:10:112::99" };
    assert.match(judged().join("\n"), /SERVICE_IP_DIFFERS Service shop\/web: the preview re-creates its second ClusterIP at fd00:10:112::99, the plan at fd00:10:112::7/);
    moves["shop/web"].otherFamily = { fromIP: "fd00:10:96::7", toIP: UNKNOWN_VALUE };
    assert.match(judged().join("\n"), /SERVICE_IP_UNKNOWN Service shop\/web: its second ClusterIP is unknown at preview time/);
    web.newClusterIPs = web.oldClusterIPs;
    moves["shop/web"].otherFamily = { fromIP: "fd00:10:96::7", toIP: "fd00:10:112::7" };
    assert.match(judged().join("\n"), /SERVICE_IP_DIFFERS Service shop\/web: the preview also moves its second ClusterIP to fd00:10:112::7, but the plan keeps fd00:10:96::7/);
  });

  it("fails when a move starts from another IP than the plan's (the plan is stale)", () => {
    const digest = preview("pass.json");
    (byName(digest, "services-bulk").newState!.inputs!.moves as Record<string, { fromIP: string }>)["shop/legacy"].fromIP = "10.96.0.21";
    const [reason] = judgePreview(digest, plan()).reasons;
    assert.equal(reason.code, "SERVICE_IP_DIFFERS");
    assert.match(reason.message, /from 10\.96\.0\.21, the plan from 10\.96\.0\.20; the plan is stale/);
  });

  it("fails when the node order differs from the plan's batches, and when a node's subnet differs", () => {
    const result = judgePreview(preview("node-order-off-plan.json"), plan());
    assert.deepEqual(result.reasons.map((r) => `${r.code} ${r.object}`), [
      "NODE_SUBNET_DIFFERS Node cp-2",
      "NODE_ORDER_DIFFERS Node cp-1",
      "NODE_ORDER_DIFFERS Node cp-2",
      "NODE_ORDER_DIFFERS Node cp-3",
      "NODE_ORDER_DIFFERS Node worker-2",
      "NODE_ORDER_DIFFERS Node worker-3",
    ]);
    assert.match(result.reasons[1].message, /planned in batch 1, but its rollout waits for worker-2 \(batch 4\), worker-3 \(batch 4\)/);
    assert.match(result.reasons[4].message, /does not wait for cp-3 \(batch 3\); they could be drained at the same time/);
  });

  it("fails when a node that the plan keeps is rolled, and notes (not fails) a batch run one node after another", () => {
    const serialPlan = plan();
    serialPlan.nodes = serialPlan.nodes.map((n) => (n.name === "worker-3" ? { ...n, action: "unchanged", batch: -1 } : n));
    assert.deepEqual(judgePreview(preview("pass.json"), serialPlan).reasons.map((r) => `${r.code} ${r.object}`), ["NODE_MOVE_NOT_IN_PLAN Node worker-3"]);

    // worker-3's drain also waits for worker-2's rejoin: same batch, serialized.
    const digest = preview("pass.json");
    byName(digest, "nodes-worker-3-drain").newState!.dependencies!.push(byName(digest, "nodes-worker-2-rejoin").urn);
    const result = judgePreview(digest, plan());
    assert.deepEqual(result.reasons, []);
    assert.deepEqual(result.notes.filter((n) => n.code === "NODE_BATCH_SERIALIZED").map((n) => n.object), ["Node worker-3"]);
  });

  it("fails closed when a node's planned podCIDR is unknown at preview time", () => {
    const digest = preview("pass.json");
    byName(digest, "nodes-worker-1-rejoin").newState!.inputs!.plannedPodCIDR = UNKNOWN_VALUE;
    assert.deepEqual(judgePreview(digest, plan()).reasons.map((r) => r.code), ["NODE_SUBNET_UNKNOWN"]);
  });

  it("does not mistake the control plane's per-node steps (names with cp-1..3) for the node rollout", () => {
    const digest = preview("pass.json");
    // Without the rollout, every planned node is only noted as absent: enable-cidr-allocation-cp-1-* is not a rollout step.
    digest.steps = digest.steps.filter((s) => !parseUrn(s.urn)!.typeChain.includes("cidr-migration:nodeRollout:NodeRollout"));
    const result = judgePreview(digest, plan());
    assert.deepEqual(result.reasons, []);
    assert.match(result.notes.find((n) => n.code === "PLANNED_NODE_MOVES_NOT_IN_PREVIEW")!.message, /6 planned node move\(s\)/);
  });

  it("fails when preflight reported blockers, naming each one", () => {
    const preflight = parseFindingsDocument(read("preflight-blocker.json"), "preflight-blocker.json", "preflight");
    const result = judgePreview(preview("pass.json"), plan(), preflight);
    assert.deepEqual(result.reasons.map((r) => `${r.code} ${r.object}`), ["PREFLIGHT_BLOCKER ConfigMap monitoring/prometheus-config"]);
    assert.match(result.reasons[0].message, /HARDCODED_SERVICE_IP at data\["prometheus\.yml"\] line 12: names the old ClusterIP/);
    assert.deepEqual(result.summary.preflight, { blocker: 1, warning: 1, info: 1 });
  });

  it("fails when the preview itself reported errors, one reason per error diagnostic", () => {
    const result = judgePreview(preview("preview-errors.json"), plan());
    assert.deepEqual(codes(result.reasons), ["PREVIEW_ERROR", "PREVIEW_ERROR"]);
    assert.match(result.reasons[0].message, /node cp-2 is listed twice/);
    assert.ok(!result.reasons[1].message.includes("\n"), "a multi-line message becomes one line");
  });

  it("fails on state the engine calls maybe corrupt and on an op it does not know", () => {
    const digest = preview("pass.json");
    digest.maybeCorrupt = true;
    byName(digest, "shop-settings").op = "teleport";
    assert.deepEqual(codes(judgePreview(digest, plan()).reasons), ["PREVIEW_STATE_MAYBE_CORRUPT", "UNKNOWN_STEP_OP"]);
  });
});

describe("gate: markdown for the pull request", () => {
  it("starts with the comment marker and a verdict, one table row per reason, and escapes table syntax", () => {
    const digest = preview("preview-errors.json");
    digest.diagnostics.push({ urn: "", message: "error: a | b <script>\nsecond line", severity: "error" });
    const result = judgePreview(digest, plan());
    const markdown = renderGateMarkdown(result);
    const lines = markdown.split("\n");
    assert.equal(lines[0], GATE_COMMENT_MARKER);
    assert.equal(lines[1], "## cidr-migration gate: FAIL (3 reasons)");
    const failTable = markdown.slice(markdown.indexOf("### Why it fails"), markdown.indexOf("### Notes"));
    assert.equal(failTable.split("\n").filter((l) => l.startsWith("| `PREVIEW_ERROR`")).length, 3);
    assert.ok(markdown.includes("a \\| b &lt;script&gt; second line"));
    assert.ok(markdown.includes("| `PREVIEW_ERROR` | control-plane (cidr-migration:controlPlane:ControlPlane) |"));
    assert.ok(markdown.trimEnd().endsWith("Exit code 1."));
  });

  it("says PASS and has no failure table when the gate passes", () => {
    const markdown = renderGateMarkdown(judgePreview(preview("pass.json"), plan()));
    assert.ok(markdown.includes("## cidr-migration gate: PASS"));
    assert.ok(!markdown.includes("### Why it fails"));
    assert.ok(markdown.includes("- Service moves in the preview: 8; nodes in the rollout: 6."));
  });
});
