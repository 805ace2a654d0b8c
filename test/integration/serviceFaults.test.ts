// Crash tests of the Service mover on the real test bed. A child process runs the mover with
// CIDR_MIGRATION_FAULT=<point>:<namespace>/<name>, which SIGKILLs it when that Service's move reaches <point>
// (with three more moves in flight, cut wherever they happen to be). Then the move is run again the way a new
// `pulumi up` would run it, through the SDK's dynamic-provider host with the serialized provider, and every object
// of the namespace is compared field by field with what it was: nothing may be lost, whatever the point.
//
// This file is also the child: run directly (node -r ts-node/register ...), it performs one mover run described
// by the CIDR_MIGRATION_TEST_RUN environment variable and prints its report.
import { strict as assert } from "assert";
import * as fs from "fs";
import { KubeConfig } from "@kubernetes/client-node";
import { ServiceRecreation } from "../../dynamic-providers/serviceRecreation";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { FaultPoint } from "../../lib/serviceMove/faultHook";
import { AHEAD_ANNOTATION, removeNewIpsAhead } from "../../lib/serviceMove/newIpAhead";
import { HOP_STAND_IN_LABEL, hopStandInName, movesInPlace } from "../../lib/serviceMove/inPlace";
import { entriesFromSecret } from "../../lib/serviceMove/journal";
import { KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { MoverOptions, ServiceMoveSpec } from "../../lib/serviceMove/moveTypes";
import { ProviderHost, registrationOf, startProviderHost, urnOf } from "../support/providerHost";
import {
  assertNamespaceIntact, eventually, mapIp, namespaceState, SeededShapes, seedServiceShapes, selectorlessSlicesSettled,
  simulateCloudServiceController, SLICE_CONTROLLER, sliceAddresses,
} from "../support/serviceShapes";
import { enterNewServiceRange } from "../support/serviceRangePhase";
import { ChildEnd, childOrTests, RUN_ENV, runFaultChild } from "../support/faultChild";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";


interface ChildRun {
  kubeconfigPath: string;
  spec: ServiceMoveSpec;
  options: MoverOptions;
}

async function runAsChild(): Promise<void> {
  const run = JSON.parse(process.env[RUN_ENV] ?? "{}") as ChildRun;
  const kc = new KubeConfig();
  kc.loadFromFile(run.kubeconfigPath);
  const report = await runServiceMoves(kc, run.spec, run.options);
  process.stdout.write(JSON.stringify(report));
}

childOrTests(module, runAsChild, defineTests);

function defineTests(): void {
  const OLD_RANGE = "10.96.0.0/16";
  const NEW_RANGE = "10.100.0.0/16";

  /** Each point with the Service whose move is cut there (one that passes it). */
  const BULK_POINTS: Array<[FaultPoint, string]> = [
    ["before-journal", "web"],
    ["after-journal", "web"],
    ["after-detach-dependents", "web"],
    ["after-delete", "web"],
    ["after-create-conflict", "lb"],
    ["after-create", "applied"],
    ["after-endpoints-restore", "external-ip-database"],
    ["after-dependents-relink", "web"],
    ["after-verify", "nodeport"],
    ["after-journal-remove", "pinned"],
  ];
  const DNS_POINTS: FaultPoint[] = ["after-stand-in-create", "after-old-dns-delete", "after-vacate", "after-dns-bridge"];
  /** services.routeNewIpsFirst: cut once the planned IPs are routed (nothing journaled), and once journaled so. */
  const AHEAD_POINTS: Array<[FaultPoint, string]> = [["after-route-ahead", "web"], ["after-journal", "nodeport"]];
  const AHEAD = { routeNewIpsFirst: true, routeAheadSettleMs: 300 };
  /** services.moveInPlace: cut with the stand-ins made, with web an ExternalName naming its stand-in, and with web back. */
  const IN_PLACE_POINTS: Array<[FaultPoint, string]> = [["after-hop-stand-ins", "web"], ["after-hop-out", "web"], ["after-create", "web"]];
  const IN_PLACE = { ...AHEAD, moveInPlace: true, standInLingerMs: 300 };

  describe("Service moves cut by SIGKILL at every step, then re-run (real test bed)", function () {
    this.timeout(600_000);
    const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });
    let rest: KubeRest;
    let host: ProviderHost;
    let kubeconfig: string;
    let stopCloudController: () => Promise<void>;
    const seeds = new Map<string, SeededShapes>();
    const dnsCases = new Map<FaultPoint, { namespace: string; oldIp: string; service: KubeObject }>();

    const namespaceFor = (point: string) => `fault-${point}`;
    const aheadNamespaceFor = (point: string) => `fault-ahead-${point}`;
    const inPlaceNamespaceFor = (point: string) => `fault-in-place-${point}`;
    const movesOf = (seed: SeededShapes) => Object.entries(seed.moving).map(([name, ip]) => ({ namespace: seed.namespace, name, fromIP: ip, toIP: mapIp(ip, "10.100") }));
    const movesMap = (seed: SeededShapes) => Object.fromEntries(movesOf(seed).map((m) => [`${m.namespace}/${m.name}`, { fromIP: m.fromIP, toIP: m.toIP }]));
    const plannedOf = (seed: SeededShapes) => Object.fromEntries(Object.entries(seed.moving).map(([name, ip]) => [name, mapIp(ip, "10.100")]));

    async function journalKeys(): Promise<string[]> {
      const secrets = await rest.list("/api/v1/namespaces/kube-system/secrets", { labelSelector: "cidr-migration.io/journal=service-move" });
      return secrets.flatMap(entriesFromSecret).map((e) => `${e.namespace}/${e.name}`).sort();
    }

    /** Runs the mover in a child process with the fault armed; resolves with how the child ended. */
    function crashRun(spec: ServiceMoveSpec, fault: string, options: Partial<MoverOptions> = {}): Promise<ChildEnd> {
      const run: ChildRun = { kubeconfigPath: cluster().kubeconfigPath, spec, options: { parallelism: 4, allowLoadBalancerRecreate: true, serviceCidr: NEW_RANGE, ...options } };
      return runFaultChild(__filename, run, fault);
    }

    /** The re-run: what the next `pulumi up` does, Check then Create through the SDK host with the serialized provider. */
    async function rerunThroughHost(name: string, args: ConstructorParameters<typeof ServiceRecreation>[1]): Promise<Record<string, unknown>> {
      const registration = await registrationOf(() => new ServiceRecreation(name, args));
      const urn = urnOf(registration.type, registration.name);
      const checked = await host.check(urn, {}, registration.inputs);
      assert.deepEqual(checked.failures, []);
      return (await host.create(urn, checked.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs })).outputs;
    }

    before(async function () {
      const c = cluster();
      kubeconfig = fs.readFileSync(c.kubeconfigPath, "utf8");
      rest = await kubeRest(c.kubeConfig());
      await registerNode(c.kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
      let index = 0;
      for (const [point] of BULK_POINTS) {
        seeds.set(point, await seedServiceShapes(rest, namespaceFor(point), { index: index++, oldPrefix: "10.96", readyPodOnNode: "node-1" }));
      }
      for (const [point] of AHEAD_POINTS) {
        seeds.set(aheadNamespaceFor(point), await seedServiceShapes(rest, aheadNamespaceFor(point), { index: index++, oldPrefix: "10.96", readyPodOnNode: "node-1" }));
      }
      for (const [point] of IN_PLACE_POINTS) {
        seeds.set(inPlaceNamespaceFor(point), await seedServiceShapes(rest, inPlaceNamespaceFor(point), { index: index++, oldPrefix: "10.96", readyPodOnNode: "node-1" }));
      }
      for (const [k, point] of DNS_POINTS.entries()) {
        const namespace = namespaceFor(point);
        // in the static band, like the seeds' pinned IPs: no dynamically allocated ClusterIP can take it first
        const oldIp = `10.96.0.${100 + k}`;
        await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
        await rest.create(paths.services(namespace), {
          metadata: { name: "resolver", labels: { "k8s-app": "resolver" }, annotations: { "prometheus.io/port": "9153" } },
          spec: { clusterIP: oldIp, selector: { "k8s-app": "resolver" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53, protocol: "TCP" }] },
        });
        dnsCases.set(point, { namespace, oldIp, service: await rest.get(paths.service(namespace, "resolver")) });
      }
      await rest.mergePatch(paths.service("default", "kubernetes"), { metadata: { labels: { "example.com/team": "platform" }, annotations: { "example.com/note": "kept" } } });
      for (const seed of seeds.values()) {
        await eventually(rest, seed.namespace, "controller-derived Endpoints and slices", (s) =>
          sliceAddresses(s, "web", SLICE_CONTROLLER).length > 0 && selectorlessSlicesSettled(s));
      }
      rest.close();
      await enterNewServiceRange(c, OLD_RANGE, NEW_RANGE);
      rest = await kubeRest(c.kubeConfig());
      host = await startProviderHost();
      stopCloudController = simulateCloudServiceController(rest);
    });

    after(async () => {
      await stopCloudController?.();
      await host?.stop();
      rest?.close();
    });

    for (const [point, target] of BULK_POINTS) {
      it(`cut at ${point} (moving ${target}, three more in flight): the re-run finishes and nothing is lost`, async () => {
        const seed = seeds.get(point)!;
        const before = await namespaceState(rest, seed.namespace);
        const key = `${seed.namespace}/${target}`;

        const crash = await crashRun({ moves: movesOf(seed) }, `${point}:${key}`);
        assert.equal(crash.signal, "SIGKILL", `the child must die at ${point}; it ended with code ${crash.code}: ${crash.output.slice(0, 500)}`);
        const journaled = await journalKeys();
        if (point !== "before-journal" && point !== "after-journal-remove") assert.ok(journaled.includes(key), `${key} is journaled after a cut at ${point} (journal: ${journaled.join(", ")})`);
        // the bridge's copies: made before a delete (the controller's label, ours beside it), or after a create (ours as manager)
        const bridgeOf = async (name: string) => (await rest.list(`/apis/discovery.k8s.io/v1/namespaces/${seed.namespace}/endpointslices`, { labelSelector: `kubernetes.io/service-name=${name}` }))
          .filter((slice) => slice.metadata?.labels?.["cidr-migration.io/bridge-copy"] === "true" || slice.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === "cidr-migration.io");
        if (point === "after-delete" && target === "web") {
          // the old endpoints were copied under web's name before its delete, owned by nobody: the controller's to
          // replace once the new web exists (it creates its own before it deletes them)
          const copies = await bridgeOf("web");
          assert.ok(copies.length > 0, "web's endpoints were copied before its delete");
          assert.deepEqual(copies.map((c) => c.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"]), copies.map(() => SLICE_CONTROLLER));
          assert.equal(await rest.getOptional(paths.service(seed.namespace, "web")), undefined, "web is deleted");
          assert.deepEqual(copies.flatMap((c) => ((c.endpoints ?? []) as Array<{ addresses: string[] }>).flatMap((e) => e.addresses)).sort(), sliceAddresses(before, "web", SLICE_CONTROLLER));
          assert.deepEqual(copies.map((c) => c.metadata?.ownerReferences ?? []), copies.map(() => []));
        }

        const outputs = await rerunThroughHost(`services-${point}`, { kubeconfig, moves: movesMap(seed), serviceCidr: NEW_RANGE, parallelism: 4, allowLoadBalancerRecreate: true });
        const outcome = (outputs.results as Record<string, { outcome: string }>)[key].outcome;
        assert.ok(["moved", "completed-from-journal", "already-moved"].includes(outcome), outcome);
        assert.deepEqual((await journalKeys()).filter((k) => k.startsWith(`${seed.namespace}/`)), [], "every journal entry of the namespace is gone");

        const after = await eventually(rest, seed.namespace, "controllers re-deriving Endpoints and slices", (s) =>
          sliceAddresses(s, "web", SLICE_CONTROLLER).length > 0
          && s.endpointSlices.filter((e) => e.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === SLICE_CONTROLLER && e.metadata?.labels?.["kubernetes.io/service-name"] === "web")
            .every((e) => e.metadata?.ownerReferences?.[0]?.uid === s.services.get("web")?.metadata?.uid)
          && selectorlessSlicesSettled(s));
        assertNamespaceIntact(seed, before, after, plannedOf(seed));
        assert.deepEqual(after.endpoints.get("web")?.subsets, before.endpoints.get("web")?.subsets, "web's Endpoints re-derived with the same addresses");
        assert.deepEqual(await bridgeOf("web"), [], "no endpoint bridge is left, also none copied by the cut run");

        // and once more: nothing left to do
        const again = await rerunThroughHost(`services-${point}-again`, { kubeconfig, moves: movesMap(seed), serviceCidr: NEW_RANGE, parallelism: 4, allowLoadBalancerRecreate: true });
        assert.deepEqual(new Set(Object.values(again.results as Record<string, { outcome: string }>).map((r) => r.outcome)), new Set(["already-moved"]));
      });
    }

    for (const [point, target] of AHEAD_POINTS) {
      it(`new IPs routed first, cut at ${point} (moving ${target}): the route was on the old Service; the re-run finishes, nothing lost, nothing of the route left`, async () => {
        const seed = seeds.get(aheadNamespaceFor(point))!;
        const before = await namespaceState(rest, seed.namespace);
        const key = `${seed.namespace}/${target}`;

        const crash = await crashRun({ moves: movesOf(seed) }, `${point}:${key}`, AHEAD);
        assert.equal(crash.signal, "SIGKILL", `the child must die at ${point}; it ended with code ${crash.code}: ${crash.output.slice(0, 500)}`);
        const cut = await rest.get(paths.service(seed.namespace, target));
        assert.equal(cut.metadata?.uid, before.services.get(target)?.metadata?.uid, `${key} not deleted yet`);
        assert.ok(((cut.spec as { externalIPs?: string[] }).externalIPs ?? []).includes(plannedOf(seed)[target]), `${key} answers at its planned IP first`);
        assert.equal(cut.metadata?.annotations?.[AHEAD_ANNOTATION], plannedOf(seed)[target]);
        if (point === "after-route-ahead") {
          // the sweep a failed run ends with: every Service as it was, the traffic policy the route brought gone too
          assert.equal((await removeNewIpsAhead(rest)).length, Object.keys(seed.moving).length);
          const swept = await namespaceState(rest, seed.namespace);
          for (const [name, old] of before.services) {
            assert.deepEqual(swept.services.get(name)?.spec, old.spec, `${seed.namespace}/${name} spec`);
            assert.deepEqual(swept.services.get(name)?.metadata?.annotations, old.metadata?.annotations, `${seed.namespace}/${name} annotations`);
          }
        }

        const outputs = await rerunThroughHost(`services-ahead-${point}`, { kubeconfig, moves: movesMap(seed), serviceCidr: NEW_RANGE, parallelism: 4, allowLoadBalancerRecreate: true, routeNewIpsFirst: true, routeAheadSettleSeconds: 0.3 });
        assert.ok(["moved", "completed-from-journal"].includes((outputs.results as Record<string, { outcome: string }>)[key].outcome));
        assert.deepEqual((await journalKeys()).filter((k) => k.startsWith(`${seed.namespace}/`)), [], "every journal entry of the namespace is gone");
        const after = await eventually(rest, seed.namespace, "controllers re-deriving Endpoints and slices", (s) =>
          sliceAddresses(s, "web", SLICE_CONTROLLER).length > 0 && selectorlessSlicesSettled(s));
        // every field as it was but the ClusterIPs: the planned IP routed first is in no externalIPs and no annotation
        assertNamespaceIntact(seed, before, after, plannedOf(seed));
        for (const [name, svc] of after.services) assert.equal(svc.metadata?.annotations?.[AHEAD_ANNOTATION], undefined, `${seed.namespace}/${name}`);
      });
    }

    for (const [point, target] of IN_PLACE_POINTS) {
      it(`in place, cut at ${point} (moving ${target}): the re-run finishes, the in-place Services are the same objects, nothing lost, no stand-in left`, async () => {
        const seed = seeds.get(inPlaceNamespaceFor(point))!;
        const before = await namespaceState(rest, seed.namespace);
        const key = `${seed.namespace}/${target}`;
        const inPlace = new Set(Object.keys(seed.moving).filter((name) => movesInPlace(before.services.get(name)!, { namespace: seed.namespace, name, fromIP: "", toIP: "" })));
        const standIns = () => rest.list(paths.services(seed.namespace), { labelSelector: `${HOP_STAND_IN_LABEL}=true` });

        const crash = await crashRun({ moves: movesOf(seed) }, `${point}:${key}`, IN_PLACE);
        assert.equal(crash.signal, "SIGKILL", `the child must die at ${point}; it ended with code ${crash.code}: ${crash.output.slice(0, 500)}`);
        assert.deepEqual((await standIns()).map((s) => s.metadata?.name).sort(), [...inPlace].map(hopStandInName).sort(), "a stand-in for each in-place move");
        const cut = await rest.get(paths.service(seed.namespace, target));
        assert.equal(cut.metadata?.uid, before.services.get(target)?.metadata?.uid, `${key} is the same object`);
        if (point === "after-hop-out") {
          assert.deepEqual([(cut.spec as Record<string, unknown>).type, (cut.spec as Record<string, unknown>).externalName], ["ExternalName", `${hopStandInName(target)}.${seed.namespace}.svc.cluster.local`], `${key} names its stand-in`);
          assert.ok((await journalKeys()).includes(key), `${key} is journaled`);
        }

        const outputs = await rerunThroughHost(`services-in-place-${point}`, { kubeconfig, moves: movesMap(seed), serviceCidr: NEW_RANGE, parallelism: 4, allowLoadBalancerRecreate: true, routeNewIpsFirst: true, routeAheadSettleSeconds: 0.3, moveInPlace: true, standInLingerSeconds: 0.3 });
        // cut before its first write, it moves afresh; after it, the re-run only finishes what the journal holds
        assert.equal((outputs.results as Record<string, { outcome: string }>)[key].outcome, point === "after-hop-stand-ins" ? "moved" : "completed-from-journal");
        assert.deepEqual((await journalKeys()).filter((k) => k.startsWith(`${seed.namespace}/`)), [], "every journal entry of the namespace is gone");
        assert.deepEqual(await standIns(), [], "no stand-in is left");
        const after = await eventually(rest, seed.namespace, "controllers re-deriving Endpoints and slices", (s) =>
          sliceAddresses(s, "web", SLICE_CONTROLLER).length > 0 && selectorlessSlicesSettled(s));
        assertNamespaceIntact(seed, before, after, plannedOf(seed), inPlace);
        for (const [name, svc] of after.services) assert.equal(svc.metadata?.annotations?.[AHEAD_ANNOTATION], undefined, `${seed.namespace}/${name}`);
      });
    }

    it("cut at after-kubernetes-delete: the re-run waits for the apiserver's re-creation at the new first IP and puts the user's labels back", async () => {
      const crash = await crashRun({ moves: [], kubernetesService: { fromIP: "10.96.0.1", toIP: "10.100.0.1" } }, "after-kubernetes-delete");
      assert.equal(crash.signal, "SIGKILL", crash.output);
      assert.ok((await journalKeys()).includes("default/kubernetes"));
      // A plan made now can still ask for it; the bulk run also adopts the journal entry when it does not.
      const outputs = await rerunThroughHost("services-kubernetes", { kubeconfig, moves: {}, serviceCidr: NEW_RANGE });
      assert.equal((outputs.kubernetesServiceResult as { ip: string }).ip, "10.100.0.1");
      const kubernetes = await rest.get(paths.service("default", "kubernetes"));
      assert.deepEqual((kubernetes.spec as { clusterIPs: string[] }).clusterIPs, ["10.100.0.1"]);
      assert.equal(kubernetes.metadata?.labels?.["example.com/team"], "platform");
      assert.equal(kubernetes.metadata?.labels?.component, "apiserver");
      assert.equal(kubernetes.metadata?.annotations?.["example.com/note"], "kept");
      assert.ok(!(await journalKeys()).includes("default/kubernetes"));
    });

    for (const point of DNS_POINTS) {
      it(`DNS: cut at ${point}: the re-run finishes the stand-in or the swap, and the DNS Service is intact at the final IP`, async () => {
        const { namespace, oldIp, service } = dnsCases.get(point)!;
        const finalIp = mapIp(oldIp, "10.100");
        const key = `${namespace}/resolver`;
        const standIn = { namespace, name: "resolver-temp" };
        const standInSpec = { moves: [], standIns: [{ ...standIn, of: { namespace, name: "resolver" }, ip: finalIp }] };
        const swapSpec = { moves: [{ namespace, name: "resolver", fromIP: oldIp, toIP: finalIp, vacate: standIn }] };
        const swapArgs = { kubeconfig, moves: { [key]: { fromIP: oldIp, toIP: finalIp, vacate: `${namespace}/resolver-temp` } }, parallelism: 1, adoptJournals: false };
        let outputs: Record<string, unknown>;
        if (point === "after-stand-in-create") {
          const crash = await crashRun(standInSpec, `${point}:${namespace}/resolver-temp`, { parallelism: 1 });
          assert.equal(crash.signal, "SIGKILL", crash.output);
          const standInOutputs = await rerunThroughHost(`stand-in-${point}`, { kubeconfig, moves: {}, standIns: { [`${namespace}/resolver-temp`]: { of: key, ip: finalIp } }, adoptJournals: false });
          assert.deepEqual(standInOutputs.standInResults, { [`${namespace}/resolver-temp`]: { ip: finalIp, outcome: "present" } });
          outputs = await rerunThroughHost(`swap-${point}`, swapArgs);
        } else {
          await runServiceMoves(cluster().kubeConfig(), standInSpec, { parallelism: 1, allowLoadBalancerRecreate: false });
          const crash = await crashRun(swapSpec, `${point}:${key}`, { parallelism: 1, serviceCidr: undefined });
          assert.equal(crash.signal, "SIGKILL", crash.output);
          assert.ok((await journalKeys()).includes(key));
          outputs = await rerunThroughHost(`swap-${point}`, swapArgs);
        }
        assert.equal((outputs.results as Record<string, { ip: string }>)[key].ip, finalIp);

        const now = await rest.get(paths.service(namespace, "resolver"));
        assert.deepEqual((now.spec as { clusterIPs: string[] }).clusterIPs, [finalIp]);
        const { clusterIP: _a, clusterIPs: _b, ...specBefore } = service.spec as Record<string, unknown>;
        const { clusterIP: _c, clusterIPs: _d, ...specAfter } = now.spec as Record<string, unknown>;
        assert.deepEqual(specAfter, specBefore);
        assert.deepEqual(now.metadata?.labels, service.metadata?.labels);
        assert.deepEqual(now.metadata?.annotations, service.metadata?.annotations);
        assert.equal(await rest.getOptional(paths.service(namespace, "resolver-temp")), undefined, "the stand-in is gone");
        const bridges = await rest.list(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, { labelSelector: "endpointslice.kubernetes.io/managed-by=cidr-migration.io" });
        assert.deepEqual(bridges, [], "no endpoint bridge is left");
        assert.ok(!(await journalKeys()).includes(key));
      });
    }
  });
}
