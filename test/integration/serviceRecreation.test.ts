// Service re-creation on the real test bed (etcd + kube-apiserver + kube-controller-manager of the test-bed version, with the
// endpoints, endpointslice, mirroring and garbage-collector controllers live), driven the way `pulumi up` drives
// it: the plan from live discovery, the ServiceRecreation provider serialized by the SDK and run by the SDK's
// dynamic-provider host. Every shape from the issue is seeded from real dumps on the OLD range, the apiserver is
// moved to the new range, then the Services are moved and every object compared field by field.
import { strict as assert } from "assert";
import * as fs from "fs";
import { DnsFinalSwap, DnsTemporaryService } from "../../components/dnsContinuity";
import { ServiceRecreation } from "../../dynamic-providers/serviceRecreation";
import { discoverInventory } from "../../lib/plan/discovery";
import { MigrationConfig } from "../../lib/config/migrationConfig";
import { buildPlan } from "../../lib/plan/plan";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { serviceMovesFromPlan } from "../../lib/serviceMove/planMoves";
import { captureGraph } from "../support/pulumiMocks";
import { Props, ProviderHost, registrationOf, startProviderHost, UNKNOWN, urnOf } from "../support/providerHost";
import {
  assertNamespaceIntact, eventually, mapIp, MIRRORING_CONTROLLER, namespaceState, NamespaceState, runReadyPod, SeededShapes, selectorlessSlicesSettled,
  seedServiceShapes, simulateCloudServiceController, SLICE_CONTROLLER, sliceAddresses,
} from "../support/serviceShapes";
import { startTcpProxy } from "../support/tcpProxy";
import { enterNewServiceRange, serviceMoveConfig } from "../support/serviceRangePhase";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";

const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const NS = "shapes";
const DNS_POD_IP = "10.244.0.53";
const JOURNAL_SELECTOR = "cidr-migration.io/journal=service-move";

function migrationConfig(allowLoadBalancerRecreate: boolean): MigrationConfig {
  return serviceMoveConfig(OLD_RANGE, NEW_RANGE, allowLoadBalancerRecreate);
}

function withoutProviderAndSecrets(props: Props): string {
  return JSON.stringify(props);
}

describe("Service re-creation (real test bed, SDK dynamic-provider host)", function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  let host: ProviderHost;
  let kubeconfig: string;
  let seed: SeededShapes;
  let seeded: NamespaceState;
  let dnsBefore: KubeObject;
  let stopCloudController: () => Promise<void>;
  let moves: ReturnType<typeof serviceMovesFromPlan>;
  let allBefore: Map<string, string>;

  async function journals(): Promise<KubeObject[]> {
    return rest.list("/api/v1/namespaces/kube-system/secrets", { labelSelector: JOURNAL_SELECTOR });
  }

  /** uid/resourceVersion of every Service in the cluster. */
  async function serviceVersions(): Promise<Map<string, string>> {
    const all = await rest.list("/api/v1/services");
    return new Map(all.map((s) => [`${s.metadata!.namespace}/${s.metadata!.name}`, `${s.metadata!.uid}@${s.metadata!.resourceVersion}`]));
  }

  before(async () => {
    const c = cluster();
    kubeconfig = fs.readFileSync(c.kubeconfigPath, "utf8");
    rest = await kubeRest(c.kubeConfig());
    host = await startProviderHost();
    await registerNode(c.kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
    seed = await seedServiceShapes(rest, NS, { index: 0, oldPrefix: "10.96", readyPodOnNode: "node-1" });
    const [dnsDump] = (await import("yaml")).parseAllDocuments(fs.readFileSync(`${__dirname}/../fixtures/services/kube-dns-svc-dump-pinned-10.96.0.10.yaml`, "utf8")).map((d) => d.toJS());
    for (const key of ["uid", "resourceVersion", "creationTimestamp"]) delete dnsDump.metadata[key];
    delete dnsDump.status;
    await rest.create(paths.services("kube-system"), dnsDump);
    await runReadyPod(rest, "kube-system", "coredns-1", { "k8s-app": "kube-dns" }, "node-1", DNS_POD_IP);
    // the controllers have derived what they derive: Endpoints and slices for web, the mirror of the hand-made Endpoints
    seeded = await eventually(rest, NS, "endpoints for web and the mirrored slice", (s) =>
      JSON.stringify(s.endpoints.get("web")?.subsets ?? []).includes("10.244.100.5")
      && sliceAddresses(s, "web", SLICE_CONTROLLER).includes("10.244.100.5")
      && selectorlessSlicesSettled(s));
    await eventually(rest, "kube-system", "kube-dns slice", (s) => sliceAddresses(s, "kube-dns", SLICE_CONTROLLER).includes(DNS_POD_IP));
    dnsBefore = await rest.get(paths.service("kube-system", "kube-dns"));
    // The plan comes from discovery while the Services are still in the old range, as in `pulumi up`.
    moves = serviceMovesFromPlan(buildPlan(migrationConfig(true), await discoverInventory(c.kubeConfig())));
    // The control-plane phase: the apiserver (and KCM) now serve the new range; existing Services keep their IPs.
    rest.close();
    await enterNewServiceRange(c, OLD_RANGE, NEW_RANGE);
    rest = await kubeRest(c.kubeConfig());
    allBefore = await serviceVersions();
    stopCloudController = simulateCloudServiceController(rest);
  });

  after(async () => {
    await stopCloudController?.();
    await host?.stop();
    rest?.close();
  });

  it("the plan moves every ClusterIP shape (offset kept), the kubernetes Service and DNS apart, headless and ExternalName not at all", () => {
    const expected = Object.fromEntries(Object.entries(seed.moving).map(([name, ip]) => [`${NS}/${name}`, { fromIP: ip, toIP: mapIp(ip, "10.100"), type: name === "lb" ? "LoadBalancer" : name === "nodeport" ? "NodePort" : "ClusterIP" }]));
    assert.deepEqual(moves.moves, expected);
    assert.deepEqual(seed.untouched.sort(), ["external-database", "kube-state-metrics"]);
    assert.deepEqual(moves.kubernetesService, { fromIP: "10.96.0.1", toIP: "10.100.0.1" });
    assert.equal(moves.dns?.toIP, "10.100.0.10");
  });

  it("preview: Check lists each Service's old IP and planned IP, refuses the LoadBalancer without consent, and neither Check nor Diff reaches the cluster", async () => {
    const server = new URL(cluster().server);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    try {
      const viaProxy = kubeconfig.replace(cluster().server, `https://${proxy.address}`);
      const refused = await registrationOf(() => new ServiceRecreation("services", { kubeconfig: viaProxy, moves: moves.moves, kubernetesService: moves.kubernetesService, serviceCidr: NEW_RANGE }));
      const urn = urnOf(refused.type, refused.name);
      const refusal = await host.check(urn, {}, refused.inputs);
      assert.deepEqual(refusal.failures.map((f) => f.property), [`moves["${NS}/lb"]`]);
      assert.match(refusal.failures[0].reason, /Service shapes\/lb is a LoadBalancer: .*set cidr-migration:services\.allowLoadBalancerRecreate to true/);

      const consented = await registrationOf(() => new ServiceRecreation("services", { kubeconfig: viaProxy, moves: moves.moves, kubernetesService: moves.kubernetesService, serviceCidr: NEW_RANGE, allowLoadBalancerRecreate: true }));
      const checked = await host.check(urn, {}, consented.inputs);
      assert.deepEqual(checked.failures, []);
      for (const [name, ip] of Object.entries(seed.moving)) {
        assert.deepEqual((checked.inputs.moves as Record<string, { fromIP: string; toIP: string }>)[`${NS}/${name}`], moves.moves[`${NS}/${name}`]);
        assert.equal(moves.moves[`${NS}/${name}`].fromIP, ip);
      }
      // an update preview against a state that already moved them, and one with unknown moves
      const state = { ...checked.inputs, results: {} };
      assert.equal((await host.diff(urn, "id", state, checked.inputs)).changes, "none");
      const unknownCheck = await host.check(urn, state, { ...consented.inputs, moves: UNKNOWN });
      assert.deepEqual(unknownCheck.failures, []);
      assert.equal((await host.diff(urn, "id", state, unknownCheck.inputs)).changes, "some");
      assert.equal(proxy.connections(), 0, "Check and Diff opened no connection to the apiserver");
      assert.deepEqual(await serviceVersions(), allBefore, "nothing changed");
    } finally {
      await proxy.close();
    }
  });

  it("run directly: a live LoadBalancer the plan took for a ClusterIP is refused before anything changes", async () => {
    const stale = { ...moves.moves, [`${NS}/lb`]: { ...moves.moves[`${NS}/lb`], type: "ClusterIP" } };
    const requests = Object.entries(stale).map(([key, m]) => ({ namespace: key.split("/")[0], name: key.split("/")[1], ...m }));
    await assert.rejects(
      runServiceMoves(cluster().kubeConfig(), { moves: requests }, { parallelism: 4, allowLoadBalancerRecreate: false }),
      (err: Error) => /^Service shapes\/lb is a LoadBalancer: re-creating it can give its cloud load balancer a new external address; set cidr-migration:services\.allowLoadBalancerRecreate to true to consent, nothing was changed$/.test(err.message),
    );
    assert.deepEqual(await serviceVersions(), allBefore, "no Service was touched");
    assert.deepEqual(await journals(), [], "no journal was written");
  });

  let outputs: Props;
  let checkedInputs: Props;
  const urn = urnOf("pulumi-nodejs:dynamic/cidr-migration:ServiceRecreation", "services");

  it("through the host: every moved shape equal field by field at its planned IP; Endpoints, slices and owned objects back; kubernetes at the new first IP", async () => {
    const registration = await registrationOf(() => new ServiceRecreation("services", {
      kubeconfig, moves: moves.moves, kubernetesService: moves.kubernetesService, serviceCidr: NEW_RANGE, parallelism: 4, allowLoadBalancerRecreate: true,
    }));
    const checked = await host.check(urn, {}, registration.inputs);
    assert.deepEqual(checked.failures, []);
    checkedInputs = checked.inputs;
    const created = await host.create(urn, checked.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs });
    outputs = created.outputs;

    const planned = Object.fromEntries(Object.entries(seed.moving).map(([name, ip]) => [name, mapIp(ip, "10.100")]));
    // the garbage collector has acted on the old objects: a ConfigMap owned by web's old (controller-made) Endpoints is gone
    // web's slice: its bridge copy handed to the controller (or the controller's own, the copy deleted), listing
    // the pod once: a copy and a slice of the controller's own both listing it is a duplicate the controller drops
    const after = await eventually(rest, NS, "controllers re-deriving Endpoints and slices for the new Services", (s) =>
      JSON.stringify(s.endpoints.get("web")?.subsets ?? []).includes("10.244.100.5")
      && JSON.stringify(sliceAddresses(s, "web", SLICE_CONTROLLER)) === JSON.stringify(["10.244.100.5"])
      && s.endpointSlices.filter((e) => e.metadata?.labels?.["kubernetes.io/service-name"] === "web" && e.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === SLICE_CONTROLLER)
        .every((e) => e.metadata?.ownerReferences?.[0]?.uid === s.services.get("web")?.metadata?.uid)
      && selectorlessSlicesSettled(s));
    assertNamespaceIntact(seed, seeded, after, planned);
    // web's Endpoints: re-derived by the endpoints controller, the same addresses and ports as before
    assert.deepEqual(after.endpoints.get("web")?.subsets, seeded.endpoints.get("web")?.subsets);

    const kubernetes = await rest.get(paths.service("default", "kubernetes"));
    assert.deepEqual((kubernetes.spec as { clusterIPs: string[] }).clusterIPs, ["10.100.0.1"]);
    assert.deepEqual(await journals(), [], "every journal entry was removed after verification");

    const results = outputs.results as Record<string, { outcome: string; ip: string; gapMillis: number; createAttempts: number; pinnedInLastApplied: boolean; restoredEndpoints?: boolean; relinkedDependents: string[] }>;
    assert.deepEqual(Object.keys(results).sort(), Object.keys(moves.moves).sort());
    for (const [key, result] of Object.entries(results)) {
      assert.equal(result.outcome, "moved", key);
      assert.equal(result.ip, moves.moves[key].toIP, key);
      assert.equal(typeof result.gapMillis, "number", key);
    }
    assert.ok(results[`${NS}/lb`].createAttempts > 1, "the LoadBalancer's create waited for its cleanup finalizer");
    assert.equal(results[`${NS}/applied`].pinnedInLastApplied, true);
    assert.equal(results[`${NS}/external-ip-database`].restoredEndpoints, true);
    assert.deepEqual(results[`${NS}/web`].relinkedDependents, [`ConfigMap ${NS}/web-dependent`, `EndpointSlice ${NS}/web-extra`]);
    // web's old endpoints answered for the new web from its create on (no refused connection while the controller
    // catches up); every copy went once the controller had written web's own slice
    const bridged = Object.entries(results as Record<string, { endpointsBridgedMillis?: number }>).filter(([, r]) => r.endpointsBridgedMillis !== undefined).map(([key]) => key);
    assert.deepEqual(bridged, [`${NS}/web`], "only the selector Service with ready endpoints is bridged");
    assert.deepEqual(await rest.list(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, { labelSelector: "endpointslice.kubernetes.io/managed-by=cidr-migration.io" }), [], "no endpoint bridge is left");
    assert.equal((outputs.kubernetesServiceResult as { ip: string; outcome: string }).ip, "10.100.0.1");
    assert.ok(!withoutProviderAndSecrets(outputs).includes("client-key-data"), "no kubeconfig in the outputs");
    assert.equal(outputs.kubeconfig, undefined);
    // Services outside the moves (DNS, the untouched shapes) were not written
    const now = await serviceVersions();
    for (const key of ["kube-system/kube-dns", `${NS}/kube-state-metrics`, `${NS}/external-database`]) assert.equal(now.get(key), allBefore.get(key), key);
  });

  it("owned objects survive the garbage collector for good (it has processed the old Services by now)", async () => {
    // A canary the GC must delete: owned by a uid that no longer exists. Once it is gone, the GC has caught up.
    const oldWebUid = seeded.services.get("web")!.metadata!.uid!;
    await rest.create(paths.configMaps(NS), { metadata: { name: "gc-canary", ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "web", uid: oldWebUid }] } });
    await eventually(rest, NS, "the GC deleting a ConfigMap owned by the old web", (s) => !s.configMaps.has("gc-canary"));
    const state = await namespaceState(rest, NS);
    assert.ok(state.configMaps.has("web-dependent"));
    assert.ok(state.endpointSlices.some((s) => s.metadata?.name === "web-extra"));
    assert.ok(state.endpoints.has("external-ip-database"));
    assert.ok(state.services.has("owned"));
  });

  it("a re-run after success does nothing: no Service written, every move already-moved, and Diff sees no change", async () => {
    const versions = await serviceVersions();
    assert.equal((await host.diff(urn, "services-id", outputs, checkedInputs)).changes, "none");
    const rerun = await host.update(urn, "services-id", outputs, checkedInputs);
    const results = rerun.outputs.results as Record<string, { outcome: string }>;
    assert.deepEqual(new Set(Object.values(results).map((r) => r.outcome)), new Set(["already-moved"]));
    assert.equal((rerun.outputs.kubernetesServiceResult as { outcome: string }).outcome, "already-moved");
    assert.deepEqual(await serviceVersions(), versions);
    // and the next plan, from discovery after the move, has nothing left to move in the namespace
    const replanned = serviceMovesFromPlan(buildPlan(migrationConfig(true), await discoverInventory(cluster().kubeConfig())));
    assert.deepEqual(Object.keys(replanned.moves).filter((k) => k.startsWith(`${NS}/`)), []);
    const replannedCheck = await host.check(urn, checkedInputs, { ...checkedInputs, moves: replanned.moves });
    assert.equal((await host.diff(urn, "services-id", outputs, replannedCheck.inputs)).changes, "none");
  });

  it("a Service already elsewhere in the new range is left alone", async () => {
    const fresh = await rest.create(paths.services(NS), { metadata: { name: "fresh" }, spec: { selector: { app: "fresh" }, ports: [{ port: 1 }] } });
    const report = await runServiceMoves(cluster().kubeConfig(), { moves: [{ namespace: NS, name: "fresh", fromIP: "10.96.77.77", toIP: "10.100.77.77" }] }, { parallelism: 1, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE });
    assert.deepEqual(report.results.map((r) => [r.name, r.outcome, r.ip]), [["fresh", "in-new-range", (fresh.spec as { clusterIP: string }).clusterIP]]);
    const now = await rest.get(paths.service(NS, "fresh"));
    assert.equal(now.metadata?.resourceVersion, fresh.metadata?.resourceVersion);
  });

  it("DNS continuity: the stand-in answers at the final IP beside the old DNS Service, then the final swap moves kube-dns there back to back", async () => {
    const dns = moves.dns!;
    const temporaryGraph = await captureGraph(() => new DnsTemporaryService("dns-temporary", { kubeconfig, dns, finalIP: dns.toIP }));
    const standInResource = temporaryGraph.named("dns-temporary-stand-in");
    const standInUrn = urnOf(standInResource.type, standInResource.name);
    const standInChecked = await host.check(standInUrn, {}, standInResource.rawInputs as Props);
    assert.deepEqual(standInChecked.failures, []);
    await host.create(standInUrn, standInChecked.inputs);
    const standIn = await rest.get(paths.service("kube-system", dns.standIn.name));
    assert.deepEqual((standIn.spec as { clusterIPs: string[] }).clusterIPs, ["10.100.0.10"]);
    assert.deepEqual((standIn.spec as { selector: unknown }).selector, { "k8s-app": "kube-dns" });
    await eventually(rest, "kube-system", "the stand-in selecting the DNS pod", (s) => sliceAddresses(s, dns.standIn.name, SLICE_CONTROLLER).includes(DNS_POD_IP));
    assert.deepEqual(((await rest.get(paths.service("kube-system", "kube-dns"))).spec as { clusterIP: string }).clusterIP, "10.96.0.10", "the old DNS IP still answers");

    const swapGraph = await captureGraph(() => new DnsFinalSwap("dns-final", { kubeconfig, dns, fromIP: dns.fromIP, toIP: dns.toIP, temporary: dns.standIn }));
    const swapResource = swapGraph.named("dns-final-swap");
    const swapUrn = urnOf(swapResource.type, swapResource.name);
    const swapChecked = await host.check(swapUrn, {}, swapResource.rawInputs as Props);
    assert.deepEqual(swapChecked.failures, []);
    const swapped = await host.create(swapUrn, swapChecked.inputs);
    const result = (swapped.outputs.results as Record<string, { outcome: string; gapMillis: number; ip: string; endpointsBridgedMillis: number; controllerSliceMillis: number }>)["kube-system/kube-dns"];
    assert.equal(result.outcome, "moved");
    assert.equal(result.ip, "10.100.0.10");
    assert.equal(typeof result.gapMillis, "number");
    // the stand-in's endpoints were bridged to the new kube-dns, and removed once the controller had written its own
    assert.equal(typeof result.endpointsBridgedMillis, "number");
    assert.equal(typeof result.controllerSliceMillis, "number");

    const dnsAfter = await rest.get(paths.service("kube-system", "kube-dns"));
    assert.deepEqual((dnsAfter.spec as { clusterIPs: string[] }).clusterIPs, ["10.100.0.10"]);
    const { clusterIP: _a, clusterIPs: _b, ...specBefore } = dnsBefore.spec as Record<string, unknown>;
    const { clusterIP: _c, clusterIPs: _d, ...specAfter } = dnsAfter.spec as Record<string, unknown>;
    assert.deepEqual(specAfter, specBefore);
    assert.deepEqual(dnsAfter.metadata?.labels, dnsBefore.metadata?.labels);
    assert.deepEqual(dnsAfter.metadata?.annotations, dnsBefore.metadata?.annotations);
    assert.equal(await rest.getOptional(paths.service("kube-system", dns.standIn.name)), undefined, "the stand-in is gone");
    await eventually(rest, "kube-system", "the new kube-dns selecting the DNS pod", (s) => sliceAddresses(s, "kube-dns", SLICE_CONTROLLER).includes(DNS_POD_IP)
      && s.endpointSlices.filter((e) => e.metadata?.labels?.["kubernetes.io/service-name"] === "kube-dns").every((e) => e.metadata?.ownerReferences?.[0]?.uid === dnsAfter.metadata?.uid));
    const bridges = await rest.list("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices", { labelSelector: "endpointslice.kubernetes.io/managed-by=cidr-migration.io" });
    assert.deepEqual(bridges, [], "the endpoint bridge went once the controller had written kube-dns's own slice");
    assert.deepEqual(await journals(), []);
  });
});

describe("Service re-creation while kube-apiserver still serves the old range (real test bed)", function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });

  it("a range the apiserver does not allocate from stops the run at its probe, before any delete: every object stays as it was", async () => {
    const rest = await kubeRest(cluster().kubeConfig());
    try {
      const seed = await seedServiceShapes(rest, NS, { index: 1, oldPrefix: "10.96" });
      const before = await eventually(rest, NS, "the mirrored slice", (s) => sliceAddresses(s, "external-ip-database", MIRRORING_CONTROLLER).includes("192.168.0.1"));
      const moves = Object.entries(seed.moving).map(([name, ip]) => ({ namespace: NS, name, fromIP: ip, toIP: mapIp(ip, "10.100") }));
      await assert.rejects(
        runServiceMoves(cluster().kubeConfig(), { moves }, { parallelism: 1, allowLoadBalancerRecreate: true, serviceCidr: NEW_RANGE }),
        (err: Error) => /^kube-apiserver refuses ClusterIP 10\.100\.\d+\.\d+ \(planned for Service shapes\/[a-z-]+\): .*; nothing was deleted/.test(err.message),
      );
      const after = await namespaceState(rest, NS);
      assertNamespaceIntact(seed, before, after, {});
      assert.deepEqual(await rest.list("/api/v1/services", { labelSelector: "cidr-migration.io/probe" }), [], "no probe is left");
      assert.deepEqual(await rest.list("/api/v1/namespaces/kube-system/secrets", { labelSelector: JOURNAL_SELECTOR }), [], "no journal entry is left");
    } finally {
      rest.close();
    }
  });
});
