import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { ControlPlane, EnableCidrAllocation } from "../../../components/controlPlane";
import { DnsFinalSwap, DnsTemporaryService } from "../../../components/dnsContinuity";
import { NodeRollout } from "../../../components/nodeRollout";
import { ServiceRecreation } from "../../../dynamic-providers/serviceRecreation";
import { judgePreview } from "../../../lib/gate/judgePreview";
import { parsePlanDocument } from "../../../lib/gate/planDocument";
import { REMOTE_SCRIPT_TYPE } from "../../../lib/gate/policyRules";
import { PreviewDigest, PreviewStep } from "../../../lib/gate/previewDigest";
import { NodeTarget } from "../../../lib/config/migrationConfig";
import { Plan } from "../../../lib/plan/planModel";
import { serviceMovesFromPlan } from "../../../lib/serviceMove/planMoves";
import { MockGraph, captureGraph, isWireSecret } from "../../support/pulumiMocks";

/**
 * The gate on the graph the real components declare for the plan (captured under the SDK's mocks: they stand in
 * for the engine only to give the graph's URNs, inputs and dependencies). The captured resources become the
 * preview document a first `pulumi preview` would print (every step a create, secrets as "[secret]"), so the
 * gate is proven to recognise the components' own Service moves, rollout steps and dependency chains.
 */

const FIXTURES = path.join(__dirname, "..", "..", "fixtures");
const read = (file: string) => fs.readFileSync(path.join(FIXTURES, file), "utf8");
const KCM = read("manifests/v1.29-single-cp-kube-controller-manager.yaml");
const APISERVER = read("manifests/v1.29-single-cp-kube-apiserver.yaml");
const KUBELET_CONFIG = read("testbed/var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml");
const KUBECONFIG = "apiVersion: v1\nkind: Config\n# admin-credentials-here\n";

const NODES: NodeTarget[] = [
  { name: "cp-1", host: "192.168.10.11", port: 22, user: "ubuntu", role: "control-plane" },
  { name: "cp-2", host: "192.168.10.12", port: 22, user: "ubuntu", role: "control-plane" },
  { name: "cp-3", host: "192.168.10.13", port: 22, user: "ubuntu", role: "control-plane" },
  { name: "worker-1", host: "192.168.10.21", port: 22, user: "ubuntu", role: "worker" },
  { name: "worker-2", host: "192.168.10.22", port: 22, user: "ubuntu", role: "worker" },
  { name: "worker-3", host: "192.168.10.23", port: 22, user: "ubuntu", role: "worker" },
];
const SSH = { user: "ubuntu", privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n" };
const RUN_ID = "run-2024-05-01";

const plan = (): Plan => parsePlanDocument(read("preview/plan.json"), "plan.json");

function readOutputs(resource: { type: string; name: string }): Record<string, unknown> {
  if (resource.type !== REMOTE_SCRIPT_TYPE) return {};
  const b64 = (text: string) => ({ stdout: Buffer.from(text).toString("base64"), stderr: "" });
  if (resource.name.endsWith("-kcm-read")) return b64(KCM);
  if (resource.name.endsWith("-apiserver-read")) return b64(APISERVER);
  if (resource.name.endsWith("-kubelet-config-read")) return b64(KUBELET_CONFIG);
  return { stdout: "", stderr: "" };
}

/** The migration's graph from ControlPlane to the final DNS swap, as index.ts wires it. */
function declare(p: Plan): void {
  const cps = NODES.filter((n) => n.role === "control-plane");
  const controlPlane = new ControlPlane("control-plane", { nodes: cps, ssh: SSH, runId: RUN_ID, serviceCidr: p.serviceCidr, podCidr: p.podCidr });
  const moves = serviceMovesFromPlan(p);
  const services = new ServiceRecreation("services", { kubeconfig: KUBECONFIG, moves: moves.moves, kubernetesService: moves.kubernetesService, serviceCidr: p.serviceCidr.to }, { dependsOn: [controlPlane] });
  const dns = { namespace: p.dns.namespace, name: p.dns.name };
  const temporary = new DnsTemporaryService("dns-temporary", { kubeconfig: KUBECONFIG, dns, finalIP: moves.dns!.toIP }, { dependsOn: [services] });
  const nodes = new NodeRollout("nodes", { plan: p, nodes: NODES, ssh: SSH, kubeconfig: KUBECONFIG, rollout: { strategy: "reregister", maxUnavailable: 2, drainTimeoutSeconds: 300, dnsDisruptionBudget: true }, runId: RUN_ID }, { dependsOn: [temporary] });
  const allocation = new EnableCidrAllocation("enable-cidr-allocation", { nodes: cps, ssh: SSH, runId: RUN_ID, podCidr: p.podCidr.to, serviceCidr: p.serviceCidr.to, nodeMaskSize: p.podCidr.nodeMaskSize }, { dependsOn: nodes.done });
  new DnsFinalSwap("dns-final", { kubeconfig: KUBECONFIG, dns, fromIP: moves.dns!.fromIP, toIP: moves.dns!.toIP, temporary }, { dependsOn: [allocation] });
}

/** What the engine prints for a first preview of this graph: one create step per resource, secrets blinded. */
function previewOf(graph: MockGraph): PreviewDigest {
  const blind = (value: unknown): unknown =>
    isWireSecret(value) ? "[secret]" : Array.isArray(value) ? value.map(blind) : typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, blind(v)])) : value;
  const steps: PreviewStep[] = graph.resources.filter((r) => !r.read).map((r) => ({
    op: "create",
    urn: r.urn,
    newState: { urn: r.urn, type: r.type, custom: !r.type.startsWith("cidr-migration:"), inputs: blind(r.rawInputs) as Record<string, unknown>, parent: r.parentUrn || undefined, dependencies: r.dependencies },
    detailedDiff: null,
  }));
  return { steps, diagnostics: [], changeSummary: { create: steps.length } };
}

describe("gate on the components' own graph", () => {
  let graph: MockGraph;
  before(async () => {
    graph = await captureGraph(() => declare(plan()), { outputs: readOutputs });
  });

  it("passes the graph declared from the same plan", () => {
    const result = judgePreview(previewOf(graph), plan());
    assert.deepEqual(result.reasons, []);
    assert.equal(result.summary.rolloutNodes, 6);
    // The five bulk moves, the kubernetes Service, the DNS stand-in and the DNS swap.
    assert.equal(result.summary.serviceMoves, 5 + 1 + 1 + 1);
    assert.deepEqual(result.notes.map((n) => n.code), ["PREFLIGHT_NOT_GIVEN"]);
  });

  it("fails when the reviewed plan had another node order than the one the program rolls", () => {
    const reviewed = plan();
    // The reviewed plan sent worker-2 first and the canary worker-1 with the last batch.
    reviewed.nodes = reviewed.nodes.map((n) => (n.name === "worker-2" ? { ...n, batch: 0, canary: true } : n.name === "worker-1" ? { ...n, batch: 4, canary: false } : n));
    const reasons = judgePreview(previewOf(graph), reviewed).reasons;
    assert.deepEqual([...new Set(reasons.map((r) => r.code))], ["NODE_ORDER_DIFFERS"]);
    assert.ok(reasons.some((r) => r.object === "Node worker-2" && /waits for .*worker-1 \(batch 4\)/.test(r.message)), JSON.stringify(reasons));
  });

  it("fails when the reviewed plan had other Service IPs or node subnets than the program's", () => {
    const reviewed = plan();
    reviewed.services = reviewed.services.map((s) => (s.name === "prometheus" ? { ...s, newClusterIP: "10.113.0.99" } : s));
    reviewed.dns = { ...reviewed.dns, newClusterIP: "10.112.0.53" };
    reviewed.services = reviewed.services.map((s) => (s.name === "kube-dns" ? { ...s, newClusterIP: "10.112.0.53" } : s));
    reviewed.nodes = reviewed.nodes.map((n) => (n.name === "cp-3" ? { ...n, newPodCIDR: "10.48.9.0/24" } : n));
    assert.deepEqual(judgePreview(previewOf(graph), reviewed).reasons.map((r) => `${r.code} ${r.object}`).sort(), [
      "NODE_SUBNET_DIFFERS Node cp-3",
      "SERVICE_IP_DIFFERS Service kube-system/kube-dns",
      "SERVICE_IP_DIFFERS Service monitoring/prometheus",
      "STANDIN_NOT_IN_PLAN Service kube-system/kube-dns-cidr-migration-temp",
    ]);
  });
});
