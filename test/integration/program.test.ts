// index.ts as `pulumi preview` runs it, under the SDK's mocks (for the graph's shape only) against a real, seeded
// control plane (for discovery and the live ConfigMaps the components read): every phase is declared, each waits on
// the one before, the Service moves are the plan's, and no secret is in plaintext anywhere in the graph.
import * as assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { validateConfig } from "../../lib/config/config";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";
import { readStackFile } from "../../lib/config/stackFile";
import { MockGraph, plaintextOf, RegisteredResource } from "../support/pulumiMocks";
import { programGraph } from "../support/programGraph";
import { REPO } from "../support/cli";
import { useTestCluster } from "../testbed/fixture";
import { minorNumber } from "../testbed/kubeVersion";
import { OLD_NODE_CIDR_MASK_SIZE, OLD_POD_CIDR, OLD_SERVICE_CIDR, seedWorkload } from "../testbed/seed";

/** Finding resources and proving waits in a captured graph. */
function graphHelpers(graph: MockGraph) {
  const one = (pattern: RegExp): RegisteredResource => {
    const found = graph.resources.filter((r) => pattern.test(r.type) || pattern.test(r.name));
    assert.equal(found.length, 1, `expected one resource matching ${pattern}, found ${found.map((r) => `${r.type} ${r.name}`).join(", ") || "none"}`);
    return found[0];
  };
  const isComponent = (r: RegisteredResource) => /^cidr-migration:[a-zA-Z]+:[A-Z]/.test(r.type);
  /** The steps a phase runs: itself when it is a custom resource, else every custom resource under it (reads excluded). */
  const stepsOf = (phase: RegisteredResource): RegisteredResource[] => {
    if (!isComponent(phase)) return [phase];
    const under = graph.resources.filter((r) => r.parentUrn === phase.urn);
    return under.flatMap((c) => (isComponent(c) ? stepsOf(c) : c.read ? [] : [c]));
  };
  const byUrn = () => new Map(graph.resources.map((r) => [r.urn, r]));
  /**
   * Whether `later` cannot start before `earlier` finished: a path through dependencies (the engine waits for them)
   * and parent links (a resource cannot register before its parent, which itself waited for its dependencies).
   */
  const waits = (later: RegisteredResource, earlier: RegisteredResource): boolean => {
    const urns = byUrn();
    const seen = new Set<string>();
    const stack = [later];
    while (stack.length) {
      const r = stack.pop()!;
      for (const next of [...r.dependencies, r.parentUrn]) {
        if (!next || seen.has(next)) continue;
        if (next === earlier.urn) return true;
        seen.add(next);
        const resource = urns.get(next);
        if (resource) stack.push(resource);
      }
    }
    return false;
  };
  const phaseWaits = (later: RegisteredResource, earlier: RegisteredResource) => {
    const laterSteps = stepsOf(later);
    const earlierSteps = stepsOf(earlier);
    assert.ok(laterSteps.length > 0 && earlierSteps.length > 0, `${later.name} or ${earlier.name} declares no step`);
    for (const l of laterSteps) {
      for (const e of earlierSteps) assert.ok(waits(l, e), `${l.type} ${l.name} (${later.name}) does not wait on ${e.type} ${e.name} (${earlier.name})`);
    }
  };
  return { one, stepsOf, waits, phaseWaits };
}

describe("index.ts: the whole graph against a seeded real control plane (mocked engine)", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize: OLD_NODE_CIDR_MASK_SIZE });
  const sshKey = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  let graph: MockGraph;
  let kubeconfigText: string;
  let values: Record<string, unknown>;

  before(async function () {
    const kc = cluster().kubeConfig();
    await seedWorkload(kc);
    kubeconfigText = readFileSync(cluster().kubeconfigPath, "utf8");
    values = {
      ...readStackFile(path.join(REPO, "Pulumi.sandbox.yaml")).values,
      kubeconfig: cluster().kubeconfigPath,
      etcd: { endpoints: [cluster().etcd.endpoint] },
      ssh: { user: "root", privateKey: sshKey },
    };
    graph = await programGraph(kc, values);
  });

  const one = (pattern: RegExp) => graphHelpers(graph).one(pattern);
  const phaseWaits = (later: RegisteredResource, earlier: RegisteredResource) => graphHelpers(graph).phaseWaits(later, earlier);

  it("declares every phase of the runbook", () => {
    for (const pattern of [
      /^preflight$/, /^etcd-snapshot$/, /ControlPlane$/, /ApiserverCerts$/, /^services$/, /DnsTemporaryService$/, /ClusterConfig$/,
      /CalicoIPPool$/, /NodeRollout$/, /EnableCidrAllocation$/, /DnsFinalSwap$/, /KubeProxyConfig$/, /CalicoOldPoolRemoval$/, /^verify$/,
    ]) {
      one(pattern);
    }
  });

  it("orders the phases: preflight → snapshot → control plane → certs → Services → DNS stand-in → cluster config → new pool → nodes → allocation → DNS swap → kube-proxy → old pool → verify", () => {
    const order = [
      one(/^preflight$/), one(/^etcd-snapshot$/), one(/ControlPlane$/), one(/ApiserverCerts$/), one(/^services$/), one(/DnsTemporaryService$/),
      one(/ClusterConfig$/), one(/CalicoIPPool$/), one(/NodeRollout$/), one(/EnableCidrAllocation$/), one(/DnsFinalSwap$/),
      one(/KubeProxyConfig$/), one(/CalicoOldPoolRemoval$/), one(/^verify$/),
    ];
    for (let i = 1; i < order.length; i++) phaseWaits(order[i], order[i - 1]);
  });

  it("switches the default ServiceCIDR where the apiserver serves the API (1.33+): open after the certificates and before the Services, close after the DNS swap and before kube-proxy", () => {
    const steps = graph.resources.filter((r) => /^service-cidr-(open|close)$/.test(r.name));
    if (minorNumber() < 33) {
      assert.deepEqual(steps.map((r) => r.name), [], "the legacy allocator needs no ServiceCIDR step");
      return;
    }
    const open = one(/^service-cidr-open$/);
    const close = one(/^service-cidr-close$/);
    phaseWaits(open, one(/ApiserverCerts$/));
    phaseWaits(one(/^services$/), open);
    phaseWaits(close, one(/DnsFinalSwap$/));
    phaseWaits(one(/KubeProxyConfig$/), close);
    assert.deepEqual([open.inputs.from, open.inputs.to], ["10.96.0.0/12", "10.112.0.0/12"]);
  });

  it("moves exactly the plan's Services, each to its planned IP", async () => {
    const inventory = await discoverInventory(cluster().kubeConfig());
    const plan = buildPlan(validateConfig({ values, secretKeys: new Set(["ssh"]) }, { inventory }), inventory);
    const moves = one(/^services$/).inputs.moves as Record<string, { fromIP: string; toIP: string }>;
    const expected = Object.fromEntries(
      plan.services
        .filter((s) => s.action === "recreate" && s.name !== "kubernetes" && !(s.namespace === plan.dns.namespace && s.name === plan.dns.name))
        .map((s) => [`${s.namespace}/${s.name}`, { fromIP: s.oldClusterIP, toIP: s.newClusterIP }]),
    );
    assert.deepEqual(Object.fromEntries(Object.entries(moves).map(([k, m]) => [k, { fromIP: m.fromIP, toIP: m.toIP }])), expected);
    assert.ok(Object.keys(expected).length >= 8);
    assert.deepEqual(one(/^services$/).inputs.kubernetesService, { fromIP: "10.96.0.1", toIP: "10.112.0.1" });
  });

  it("keeps every secret out of plaintext: SSH key, kubeconfig, in every resource's inputs", () => {
    const keyLine = sshKey.split("\n")[1];
    const kubeconfigLine = kubeconfigText.split("\n").find((l) => l.includes("client-key-data"))!.trim().slice(-40);
    let withKey = 0;
    for (const r of graph.resources) {
      const plain = plaintextOf(r.rawInputs);
      assert.ok(!plain.includes(keyLine), `${r.type} ${r.name} carries the SSH key in plaintext`);
      assert.ok(!plain.includes(kubeconfigLine), `${r.type} ${r.name} carries the kubeconfig in plaintext`);
      if (JSON.stringify(r.inputs).includes(keyLine)) withKey++;
    }
    assert.ok(withKey > 0, "the SSH key reaches the remote commands (as a secret)");
  });

  describe("nodeAddresses alone (no serviceCidr or podCidr): the address run's graph", () => {
    let addressGraph: MockGraph;
    before(async () => {
      const { serviceCidr: _s, podCidr: _p, services: _services, ...rest } = values;
      addressGraph = await programGraph(cluster().kubeConfig(), {
        ...rest,
        nodeAddresses: [{ name: "worker-2", from: "192.168.50.12", to: "192.168.60.12" }],
        hostAddress: { persistence: "none", prefix: 24 },
      });
    });

    it("declares preflight, the snapshot, worker-2's rollout under the DNS budget and verify, in that order, and nothing of a range move", () => {
      const { one, stepsOf, phaseWaits } = graphHelpers(addressGraph);
      const order = [one(/^preflight$/), one(/^etcd-snapshot$/), one(/^dns-budget-open$/), one(/NodeRollout$/), one(/^dns-budget-close$/), one(/^verify$/)];
      for (let i = 1; i < order.length; i++) phaseWaits(order[i], order[i - 1]);
      const ranged = addressGraph.resources.filter((r) => /ControlPlane$|ApiserverCerts$|ServiceRecreation$|ServiceCidrSwitch$|Dns(TemporaryService|FinalSwap)$|ClusterConfig$|CalicoIPPool$|FlannelConfig$|KubeProxyConfig$|EnableCidrAllocation$|OldIpBridgeRemoval$/.test(r.type));
      assert.deepEqual(ranged.map((r) => `${r.type} ${r.name}`), []);
      const rolled = stepsOf(one(/NodeRollout$/)).map((r) => r.name.replace(/^nodes-/, ""));
      assert.deepEqual(rolled.filter((n) => !n.startsWith("worker-2-")), [], "only worker-2 rolls");
      assert.ok(["drain", "deregister", "address-add", "kubelet-node-ip", "kubelet-start", "rejoin", "address-remove-old"].every((s) => rolled.includes(`worker-2-${s}`)), rolled.join(", "));
      assert.ok(!rolled.includes("worker-2-kubelet-config-dns"), "the DNS Service keeps its address: the kubelet's clusterDNS stays");
    });

    it("re-registers worker-2 at its new address in the cluster's own pod range, its subnet from kube-controller-manager", () => {
      const rejoin = graphHelpers(addressGraph).one(/^nodes-worker-2-rejoin$/);
      assert.equal(rejoin.inputs.plannedPodCIDR, OLD_POD_CIDR);
      assert.equal(rejoin.inputs.podCidrFromController, true);
      assert.equal(rejoin.inputs.internalIP, "192.168.60.12");
      assert.equal(graphHelpers(addressGraph).one(/^nodes-worker-2-drain$/).inputs.plannedPodCIDR, OLD_POD_CIDR);
    });
  });
});
