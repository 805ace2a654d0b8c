// The in-place Service move (services.moveInPlace) on the real test bed: single-stack ClusterIP Services with a
// selector keep their object and their EndpointSlices, and at every moment a watch sees, their name resolves: to
// the Service at its old IP, to an ExternalName naming a stand-in that exists with endpoints, or to the Service at
// its planned IP. Every other shape is re-created as before, nothing lost. An admission policy that forbids
// ExternalName makes the moves fall back to the re-create, with a warning.
import { strict as assert } from "assert";
import { HOP_STAND_IN_LABEL, hopStandInName, movesInPlace } from "../../lib/serviceMove/inPlace";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { entriesFromSecret } from "../../lib/serviceMove/journal";
import {
  assertNamespaceIntact, eventually, mapIp, namespaceState, SeededShapes, seedServiceShapes, selectorlessSlicesSettled,
  simulateCloudServiceController, SLICE_CONTROLLER, sliceAddresses,
} from "../support/serviceShapes";
import { enterNewServiceRange } from "../support/serviceRangePhase";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";

const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const FAST = { routeAheadSettleMs: 300, standInLingerMs: 500 };
const BAD_TARGET_NS = "in-place-bad-target";

interface Seen {
  type: string;
  name: string;
  spec: Record<string, unknown>;
  /** the stand-in it names had endpoints when this event arrived */
  standInHadEndpoints?: boolean;
}

describe("in-place Service moves (real test bed)", function () {
  this.timeout(300_000);
  const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });
  let rest: KubeRest;
  let stopCloudController: () => Promise<void>;
  const seeds = new Map<string, SeededShapes>();

  const planned = (seed: SeededShapes) => Object.fromEntries(Object.entries(seed.moving).map(([name, ip]) => [name, mapIp(ip, "10.100")]));
  const movesOf = (seed: SeededShapes) => Object.entries(seed.moving).map(([name, ip]) => ({ namespace: seed.namespace, name, fromIP: ip, toIP: mapIp(ip, "10.100") }));
  const settled = (s: Awaited<ReturnType<typeof namespaceState>>) => sliceAddresses(s, "web", SLICE_CONTROLLER).length > 0 && selectorlessSlicesSettled(s);

  before(async () => {
    rest = await kubeRest(cluster().kubeConfig());
    await registerNode(cluster().kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
    for (const [index, namespace] of ["in-place", "in-place-refused"].entries()) {
      const seed = await seedServiceShapes(rest, namespace, { index: 10 + index, oldPrefix: "10.96", readyPodOnNode: "node-1" });
      seeds.set(namespace, seed);
      await eventually(rest, namespace, "controller-derived Endpoints and slices", settled);
    }
    await rest.create("/api/v1/namespaces", { metadata: { name: BAD_TARGET_NS } });
    for (const [name, ip] of [["good", "10.96.7.10"], ["bad", "10.96.7.11"]]) {
      await rest.create(paths.services(BAD_TARGET_NS), { metadata: { name, labels: { app: name } }, spec: { clusterIP: ip, selector: { app: name }, ports: [{ port: 80 }] } });
    }

    rest.close();
    await enterNewServiceRange(cluster(), OLD_RANGE, NEW_RANGE);
    rest = await kubeRest(cluster().kubeConfig());
    stopCloudController = simulateCloudServiceController(rest);
  });

  after(async () => {
    await stopCloudController?.();
    rest?.close();
  });

  it("moves each ClusterIP Service with a selector in place, its name answering through a stand-in with endpoints at every event; the rest re-created; nothing lost, no stand-in left", async () => {
    const seed = seeds.get("in-place")!;
    const ns = seed.namespace;
    const before = await namespaceState(rest, ns);
    const inPlace = new Set(Object.keys(seed.moving).filter((name) => movesInPlace(before.services.get(name)!, { namespace: ns, name, fromIP: "", toIP: "" })));
    assert.ok(inPlace.has("web") && inPlace.size >= 2, `the seed has in-place shapes: ${[...inPlace].join(", ")}`);
    assert.ok(Object.keys(seed.moving).some((name) => !inPlace.has(name)), "and shapes that are re-created");

    // every Service event of the namespace, with whether the stand-in an ExternalName names had endpoints then
    const events: Seen[] = [];
    const withEndpoints = new Set<string>();
    const sliceWatch = rest.watch(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {}, (type, slice) => {
      const service = slice.metadata?.labels?.["kubernetes.io/service-name"];
      if (service && type !== "DELETED" && Array.isArray(slice.endpoints) && slice.endpoints.length > 0) withEndpoints.add(service);
    }, () => undefined);
    const { resourceVersion } = await rest.listAt(paths.services(ns));
    const serviceWatch = rest.watch(paths.services(ns), { resourceVersion }, (type, service) => {
      const spec = service.spec as Record<string, unknown>;
      const target = typeof spec.externalName === "string" ? spec.externalName.split(".")[0] : undefined;
      events.push({ type, name: service.metadata!.name!, spec, ...(target ? { standInHadEndpoints: withEndpoints.has(target) } : {}) });
    }, () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the slice watch has listed what exists

    const report = await runServiceMoves(cluster().kubeConfig(), { moves: movesOf(seed) }, {
      parallelism: 4, allowLoadBalancerRecreate: true, serviceCidr: NEW_RANGE, routeNewIpsFirst: true, moveInPlace: true, ...FAST,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    serviceWatch.stop();
    sliceWatch.stop();

    for (const result of report.results) {
      assert.equal(result.outcome, "moved", `${result.name}`);
      assert.equal(result.movedInPlace === true, inPlace.has(result.name), `${result.name} moved in place only if it is a ClusterIP Service with a selector`);
    }
    for (const name of inPlace) {
      const own = events.filter((e) => e.name === name);
      assert.ok(!own.some((e) => e.type === "DELETED"), `${name} was never deleted`);
      const hops = own.filter((e) => e.spec.type === "ExternalName");
      assert.equal(hops.length, 1, `${name} was ExternalName once: ${JSON.stringify(own.map((e) => [e.type, e.spec.type]))}`);
      assert.equal(hops[0].spec.externalName, `${hopStandInName(name)}.${ns}.svc.cluster.local`);
      if (sliceAddresses(before, name, SLICE_CONTROLLER).length > 0) assert.equal(hops[0].standInHadEndpoints, true, `${name}'s stand-in had endpoints when ${name} named it`);
      const standInAdded = events.findIndex((e) => e.name === hopStandInName(name) && e.type === "ADDED");
      const standInDeleted = events.findIndex((e) => e.name === hopStandInName(name) && e.type === "DELETED");
      const back = own.findIndex((e) => e.spec.type === "ClusterIP" && e.spec.clusterIP === planned(seed)[name]);
      assert.ok(standInAdded >= 0 && standInAdded < events.indexOf(hops[0]), `${name}'s stand-in existed before ${name} named it`);
      assert.ok(back > own.indexOf(hops[0]), `${name} came back at its planned IP`);
      assert.ok(standInDeleted > events.indexOf(own[back]), `${name}'s stand-in went only after ${name} was back`);
      const standIn = events[standInAdded].spec;
      assert.deepEqual(standIn.selector, (before.services.get(name)!.spec as Record<string, unknown>).selector, "the stand-in selects the same pods");
      assert.deepEqual(standIn.externalIPs, [planned(seed)[name]], "the stand-in answers at the planned IP too, until the Service does");
    }

    // the stand-ins' slices go too: the copies of their Services' by the mover, the controller's own by the garbage collector
    const ofStandIn = (s: KubeObject) => [...inPlace].map(hopStandInName).includes(s.metadata?.labels?.["kubernetes.io/service-name"] ?? "");
    const after = await eventually(rest, ns, "controllers settled and no slice of a stand-in left", (s) => settled(s) && !s.endpointSlices.some(ofStandIn));
    assertNamespaceIntact(seed, before, after, planned(seed), inPlace);
    // the in-place Services kept their EndpointSlices (the same objects, never re-derived)
    const controllerSlices = (state: typeof before, name: string) => state.endpointSlices
      .filter((s) => s.metadata?.labels?.["kubernetes.io/service-name"] === name && s.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === SLICE_CONTROLLER)
      .map((s) => s.metadata?.uid).sort();
    assert.deepEqual(controllerSlices(after, "web"), controllerSlices(before, "web"), "web's slices are the ones it had");
    assert.deepEqual(await rest.list(paths.services(ns), { labelSelector: `${HOP_STAND_IN_LABEL}=true` }), [], "no stand-in is left");
  });

  it("a planned IP the apiserver refuses, and the old one too: the Service stays ExternalName naming its stand-in (its name answers), journaled; a re-run says so again and changes nothing", async () => {
    const ns = BAD_TARGET_NS;
    const bad = await rest.get(paths.service(ns, "bad"));
    const moves = [
      { namespace: ns, name: "good", fromIP: "10.96.7.10", toIP: "10.100.7.10" },
      // outside every range the apiserver allocates from: its second write is refused
      { namespace: ns, name: "bad", fromIP: "10.96.7.11", toIP: "10.200.7.11" },
    ];
    const options = { parallelism: 2, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE, routeNewIpsFirst: true, moveInPlace: true, ...FAST };
    // the old range no longer allocates either (the apiserver is on the new one), so the put-back is refused too
    const stuck = /Service in-place-bad-target\/bad: kube-apiserver refused it at 10\.200\.7\.11 .* and back at 10\.96\.7\.11 too .*it is an ExternalName Service naming its stand-in until then, so its name still answers; the original is kept in /;
    await assert.rejects(runServiceMoves(cluster().kubeConfig(), { moves }, options), stuck);

    const good = await rest.get(paths.service(ns, "good"));
    assert.deepEqual([(good.spec as Record<string, unknown>).clusterIP, (good.spec as Record<string, unknown>).type], ["10.100.7.10", "ClusterIP"], "the other move went through");
    const hopped = await rest.get(paths.service(ns, "bad"));
    assert.equal(hopped.metadata?.uid, bad.metadata?.uid, "bad is the same object");
    assert.deepEqual([(hopped.spec as Record<string, unknown>).type, (hopped.spec as Record<string, unknown>).externalName], ["ExternalName", `${hopStandInName("bad")}.${ns}.svc.cluster.local`]);
    const standIns = () => rest.list(paths.services(ns), { labelSelector: `${HOP_STAND_IN_LABEL}=true` });
    assert.deepEqual((await standIns()).map((s) => s.metadata?.name), [hopStandInName("bad")], "its stand-in stays while its name resolves through it; good's went");
    const journaled = async () => (await rest.list("/api/v1/namespaces/kube-system/secrets", { labelSelector: "cidr-migration.io/journal=service-move" }))
      .flatMap(entriesFromSecret).filter((e) => e.namespace === ns).map((e) => e.name);
    assert.deepEqual(await journaled(), ["bad"], "bad's original is journaled");

    const before = JSON.stringify([hopped.metadata?.resourceVersion, (await standIns())[0].metadata?.resourceVersion]);
    await assert.rejects(runServiceMoves(cluster().kubeConfig(), { moves }, options), stuck);
    const again = await rest.get(paths.service(ns, "bad"));
    assert.equal(JSON.stringify([again.metadata?.resourceVersion, (await standIns())[0]?.metadata?.resourceVersion]), before, "the re-run wrote neither bad nor its stand-in");
    assert.deepEqual(await journaled(), ["bad"]);
  });

  it("a policy forbidding ExternalName: the moves fall back to the re-create, with a warning, and nothing is lost", async () => {
    const seed = seeds.get("in-place-refused")!;
    const ns = seed.namespace;
    await rest.mergePatch(`/api/v1/namespaces/${ns}`, { metadata: { labels: { "example.com/policy": "no-external-name" } } });
    await rest.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", {
      metadata: { name: "no-external-name" },
      spec: {
        failurePolicy: "Fail",
        matchConstraints: { resourceRules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["services"] }] },
        validations: [{ expression: "object.spec.type != 'ExternalName'", message: "ExternalName Services are not allowed here" }],
      },
    });
    await rest.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", {
      metadata: { name: "no-external-name" },
      spec: { policyName: "no-external-name", validationActions: ["Deny"], matchResources: { namespaceSelector: { matchLabels: { "example.com/policy": "no-external-name" } } } },
    });
    // the policy is compiled and enforced a moment after its create
    const probe: KubeObject = { metadata: { name: "probe" }, spec: { type: "ExternalName", externalName: "example.com" } };
    for (let i = 0; ; i++) {
      const refused = await rest.create(`${paths.services(ns)}?dryRun=All`, probe).then(() => false, (err) => /not allowed here/.test((err as Error).message));
      if (refused) break;
      assert.ok(i < 100, "the policy is enforced within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const before = await namespaceState(rest, ns);
    const report = await runServiceMoves(cluster().kubeConfig(), { moves: movesOf(seed) }, {
      parallelism: 4, allowLoadBalancerRecreate: true, serviceCidr: NEW_RANGE, routeNewIpsFirst: true, moveInPlace: true, ...FAST,
    });
    assert.ok(report.results.every((r) => r.outcome === "moved" && !r.movedInPlace), JSON.stringify(report.results));
    assert.ok(report.warnings.some((w) => /refused it as ExternalName for its in-place move .*not allowed here.*re-created instead/.test(w)), report.warnings.join("\n"));
    const after = await eventually(rest, ns, "controllers settled", settled);
    assertNamespaceIntact(seed, before, after, planned(seed));
    assert.deepEqual(await rest.list(paths.services(ns), { labelSelector: `${HOP_STAND_IN_LABEL}=true` }), [], "no stand-in is left");
  });
});
