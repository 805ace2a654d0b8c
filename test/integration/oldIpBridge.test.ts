// The old-ClusterIP bridge (services.bridgeOldIps) on the real test bed: preflight's dry run against the apiserver's
// real admission (with and without DenyServiceExternalIPs), the Service moves keeping each old ClusterIP as an
// externalIP, and the end of the bridges through the SDK's dynamic-provider host, after which every Service is its
// original self but for its ClusterIP.
import { strict as assert } from "assert";
import * as fs from "fs";
import { OldIpBridgeRemoval } from "../../dynamic-providers/oldIpBridgeRemoval";
import { probeBridgeAdmission } from "../../lib/preflight/bridgeAdmission";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { BRIDGE_ANNOTATION } from "../../lib/serviceMove/oldIpBridge";
import { userMetadata } from "../../lib/serviceMove/recreateBody";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { registrationOf, startProviderHost, ProviderHost, urnOf } from "../support/providerHost";
import { enterNewServiceRange } from "../support/serviceRangePhase";
import { useTestCluster } from "../testbed/fixture";

const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const NS = "bridge";

/** name → [old ClusterIP, planned ClusterIP, the user's own externalIPs] */
const SERVICES: Record<string, { from: string; to: string; externalIPs?: string[]; type?: string }> = {
  web: { from: "10.96.40.10", to: "10.100.40.10" },
  "listed-external": { from: "10.96.40.11", to: "10.100.40.11", externalIPs: ["192.0.2.50"] },
  "node-port": { from: "10.96.40.12", to: "10.100.40.12", type: "NodePort" },
};

describe("old-ClusterIP bridge (real test bed)", function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  let host: ProviderHost;
  const originals = new Map<string, KubeObject>();

  const service = (name: string) => rest.get(paths.service(NS, name));
  const specOf = (s: KubeObject) => s.spec as { clusterIP: string; clusterIPs: string[]; externalIPs?: string[] } & Record<string, unknown>;

  async function moveAll(bridgeOldIps: boolean) {
    const moves = Object.entries(SERVICES).map(([name, s]) => ({ namespace: NS, name, fromIP: s.from, toIP: s.to, type: s.type ?? "ClusterIP" }));
    return runServiceMoves(cluster().kubeConfig(), { moves }, { parallelism: 2, allowLoadBalancerRecreate: false, bridgeOldIps, serviceCidr: NEW_RANGE });
  }

  before(async () => {
    rest = await kubeRest(cluster().kubeConfig());
    host = await startProviderHost();
    await rest.create("/api/v1/namespaces", { metadata: { name: NS } });
    for (const [name, s] of Object.entries(SERVICES)) {
      await rest.create(paths.services(NS), {
        metadata: { name, labels: { app: name }, annotations: { "example.com/owner": "team-a" } },
        spec: { type: s.type ?? "ClusterIP", clusterIP: s.from, selector: { app: name }, ports: [{ name: "http", port: 80, targetPort: 8080 }], ...(s.externalIPs ? { externalIPs: s.externalIPs } : {}) },
      });
      originals.set(name, await service(name));
    }
  });

  after(async () => {
    await host?.stop();
    rest?.close();
  });

  it("preflight's dry run: admission allows an externalIP here, persisting nothing; DenyServiceExternalIPs refuses it with its reason", async () => {
    const allowed = await probeBridgeAdmission(cluster().kubeConfig(), "10.96.0.1");
    assert.deepEqual(allowed, { ip: "10.96.0.1" });
    assert.equal(await rest.getOptional(paths.service("default", "cidr-migration-bridge-probe")), undefined, "a dry run creates nothing");

    await cluster().restartApiserver({ admissionPlugins: "DenyServiceExternalIPs" });
    try {
      const refused = await probeBridgeAdmission(cluster().kubeConfig(), "10.96.0.1");
      assert.equal(refused.ip, "10.96.0.1");
      assert.match(refused.refused ?? "", /external IPs is denied by admission/);
    } finally {
      await cluster().restartApiserver({ admissionPlugins: "" });
    }
  });

  it("moves each Service to its planned IP with its old ClusterIP kept as an externalIP after the user's own", async () => {
    await enterNewServiceRange(cluster(), OLD_RANGE, NEW_RANGE);
    const report = await moveAll(true);
    assert.deepEqual(report.results.map((r) => [r.name, r.outcome]).sort(), Object.keys(SERVICES).sort().map((n) => [n, "moved"]));
    for (const [name, s] of Object.entries(SERVICES)) {
      const moved = await service(name);
      assert.deepEqual(specOf(moved).clusterIPs, [s.to], name);
      assert.deepEqual(specOf(moved).externalIPs, [...(s.externalIPs ?? []), s.from], name);
      assert.equal(moved.metadata?.annotations?.[BRIDGE_ANNOTATION], s.from, name);
    }
  });

  it("a re-run finds every Service moved and leaves its bridge alone", async () => {
    const versions = await Promise.all(Object.keys(SERVICES).map(async (n) => (await service(n)).metadata?.resourceVersion));
    const report = await moveAll(true);
    assert.deepEqual(report.results.map((r) => r.outcome), Object.keys(SERVICES).map(() => "already-moved"));
    assert.deepEqual(await Promise.all(Object.keys(SERVICES).map(async (n) => (await service(n)).metadata?.resourceVersion)), versions);
  });

  it("the removal (through the provider host) ends every bridge: each Service equals its original but for the ClusterIP; a second run writes nothing", async () => {
    const kubeconfig = fs.readFileSync(cluster().kubeconfigPath, "utf8");
    const registration = await registrationOf(() => new OldIpBridgeRemoval("old-ip-bridges", { kubeconfig, trigger: "run-1" }));
    const urn = urnOf(registration.type, registration.name);
    const checked = await host.check(urn, {}, registration.inputs);
    assert.deepEqual(checked.failures, []);
    const created = await host.create(urn, checked.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs });
    assert.deepEqual([...(created.outputs.removed as string[])].sort(), Object.entries(SERVICES).map(([n, s]) => `${NS}/${n} ${s.from}`).sort());
    assert.equal(created.outputs.kubeconfig, undefined, "no kubeconfig in the state");

    for (const [name, s] of Object.entries(SERVICES)) {
      const original = originals.get(name)!;
      const now = await service(name);
      assert.deepEqual(userMetadata(now.metadata).annotations, userMetadata(original.metadata).annotations, name);
      assert.deepEqual(userMetadata(now.metadata).labels, userMetadata(original.metadata).labels, name);
      const { clusterIP, clusterIPs, ...others } = specOf(now);
      const { clusterIP: oldIp, clusterIPs: oldIps, ...originalOthers } = specOf(original);
      assert.deepEqual([clusterIP, clusterIPs, oldIp, oldIps], [s.to, [s.to], s.from, [s.from]], name);
      assert.deepEqual(others, originalOthers, `${name}: everything but the ClusterIP as it was (externalIPs included)`);
    }

    const versions = await Promise.all(Object.keys(SERVICES).map(async (n) => (await service(n)).metadata?.resourceVersion));
    const again = await host.create(urn, { ...checked.inputs, trigger: "run-2" }, { additionalSecretOutputs: registration.additionalSecretOutputs });
    assert.deepEqual(again.outputs.removed, []);
    assert.deepEqual(await Promise.all(Object.keys(SERVICES).map(async (n) => (await service(n)).metadata?.resourceVersion)), versions);
  });
});
