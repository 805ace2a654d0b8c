// The default Service range on the ServiceCIDR API (1.33+), on the real test bed: the failure the graph fixes (a
// create at a planned IP in the new range refused after the flag change), then the graph's order — apiserver on the
// new flag, service-cidr-open, the Service moves (default/kubernetes and DNS included), service-cidr-close — with
// each new step first cut by SIGKILL in a child process and then re-run through the SDK's dynamic-provider host
// with the serialized provider, as the next `pulumi up` would. On the legacy test bed (no ServiceCIDR API) it
// proves the graph's discovery takes the legacy path.
//
// This file is also the child: run directly, it runs one step described by CIDR_MIGRATION_TEST_RUN.
import { strict as assert } from "assert";
import * as fs from "fs";
import { KubeConfig } from "@kubernetes/client-node";
import { ServiceCidrSwitch } from "../../dynamic-providers/serviceCidrSwitch";
import { discoverInventory } from "../../lib/plan/discovery";
import { MigrationConfig } from "../../lib/config/migrationConfig";
import { buildPlan } from "../../lib/plan/plan";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { FaultPoint } from "../../lib/serviceMove/faultHook";
import { isKubeApiError, KubeObject, KubeRest, kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { ServiceMoveRequest } from "../../lib/serviceMove/moveTypes";
import { serviceMovesFromPlan } from "../../lib/serviceMove/planMoves";
import { closeServiceCidrs, openServiceCidrs, planServiceCidrSwitch } from "../../lib/serviceMove/serviceCidrs";
import { runVerify } from "../../lib/verify";
import { ProviderHost, registrationOf, startProviderHost, urnOf } from "../support/providerHost";
import { APISERVER_FEATURE_GATES, serviceMoveConfig, servesServiceCidrs } from "../support/serviceRangePhase";
import { minorNumber } from "../testbed/kubeVersion";
import { runReadyPod } from "../support/serviceShapes";
import { childOrTests, RUN_ENV, runFaultChild } from "../support/faultChild";
import { useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";

const OLD_RANGE = "10.96.0.0/16";
const NEW_RANGE = "10.100.0.0/16";
const SERVICE_CIDRS = "/apis/networking.k8s.io/v1/servicecidrs";
const IP_ADDRESSES = "/apis/networking.k8s.io/v1/ipaddresses";

interface ChildRun { kubeconfigPath: string; step: "open" | "close" }

async function runAsChild(): Promise<void> {
  const run = JSON.parse(process.env[RUN_ENV] ?? "{}") as ChildRun;
  const kc = new KubeConfig();
  kc.loadFromFile(run.kubeconfigPath);
  const rest = await kubeRest(kc);
  const plan = planServiceCidrSwitch(OLD_RANGE, NEW_RANGE);
  const report = run.step === "open" ? await openServiceCidrs(rest, plan) : await closeServiceCidrs(rest, plan);
  rest.close();
  process.stdout.write(JSON.stringify(report));
}

childOrTests(module, runAsChild, defineTests);

function migrationConfig(): MigrationConfig {
  return serviceMoveConfig(OLD_RANGE, NEW_RANGE);
}

function defineTests(): void {
  /** 1.33+ serves the ServiceCIDR API; the legacy bed proves discovery takes the legacy path instead. */
  const SERVES_SERVICE_CIDR = minorNumber() >= 33;
  describe("default ServiceCIDR move (ServiceCIDR API, real test bed, SDK dynamic-provider host)", function () {
    this.timeout(300_000);
    const cluster = useTestCluster({ serviceCidr: OLD_RANGE, podCidr: "10.244.0.0/16" });
    let rest: KubeRest;
    let host: ProviderHost;
    let kubeconfig: string;
    let served: boolean;

    async function killedAt(step: ChildRun["step"], point: FaultPoint): Promise<void> {
      const run = await runFaultChild(__filename, { kubeconfigPath: cluster().kubeconfigPath, step }, point);
      assert.equal(run.signal, "SIGKILL", `the ${step} step should have been cut at ${point}; it ended with code ${run.code}: ${run.output}`);
    }

    /** What the next `pulumi up` does: Check, then Create through the host with the serialized provider. */
    async function stepThroughHost(step: "open" | "close"): Promise<Record<string, unknown>> {
      const registration = await registrationOf(() => new ServiceCidrSwitch(`service-cidr-${step}`, { kubeconfig, step, from: OLD_RANGE, to: NEW_RANGE }));
      const urn = urnOf(registration.type, registration.name);
      const checked = await host.check(urn, {}, registration.inputs);
      assert.deepEqual(checked.failures, []);
      return (await host.create(urn, checked.inputs, { additionalSecretOutputs: registration.additionalSecretOutputs })).outputs;
    }

    async function serviceCidr(name: string): Promise<KubeObject | undefined> {
      return rest.getOptional(`${SERVICE_CIDRS}/${name}`);
    }

    before(async function () {
      const c = cluster();
      kubeconfig = fs.readFileSync(c.kubeconfigPath, "utf8");
      rest = await kubeRest(c.kubeConfig());
      served = await servesServiceCidrs(c.kubeConfig());
      if (!served) return;
      host = await startProviderHost();
      await registerNode(c.kubeConfig(), { name: "node-1", internalIP: "127.0.0.1" });
      await rest.create("/api/v1/namespaces", { metadata: { name: "apps" } });
      await rest.create(paths.services("apps"), { metadata: { name: "web", labels: { app: "web" } }, spec: { clusterIP: "10.96.5.5", selector: { app: "web" }, ports: [{ port: 80 }] } });
      await rest.create(paths.services("kube-system"), {
        metadata: { name: "kube-dns", labels: { "k8s-app": "kube-dns" } },
        spec: { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" }, ports: [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53, protocol: "TCP" }] },
      });
      await runReadyPod(rest, "kube-system", "coredns-1", { "k8s-app": "kube-dns" }, "node-1", "10.244.0.53");
    });

    after(async () => {
      await host?.stop();
      rest?.close();
    });

    if (!SERVES_SERVICE_CIDR) it("the legacy test bed has no ServiceCIDR API, so discovery takes the legacy path (no ServiceCIDR step in the graph)", async function () {
      assert.equal(served, false);
      const inventory = await discoverInventory(cluster().kubeConfig());
      assert.equal(inventory.serviceCidrs, undefined);
    });

    if (SERVES_SERVICE_CIDR) it("discovery reads the default ServiceCIDR the apiserver made from its flag", async function () {
      assert.equal(served, true, "the apiserver serves networking.k8s.io/v1 ServiceCIDR");
      const inventory = await discoverInventory(cluster().kubeConfig());
      assert.deepEqual(inventory.serviceCidrs, [{ name: "kubernetes", cidrs: [OLD_RANGE], terminating: false }]);
    });

    if (SERVES_SERVICE_CIDR) it("the defect: after the flag change, a create at a planned IP in the new range is refused and new Services keep getting old IPs", async function () {
      assert.equal(served, true, "the apiserver serves networking.k8s.io/v1 ServiceCIDR");
      rest.close();
      await cluster().restartApiserver({ serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES });
      rest = await kubeRest(cluster().kubeConfig());
      await assert.rejects(
        rest.create(paths.services("apps"), { metadata: { name: "probe" }, spec: { clusterIP: "10.100.9.9", ports: [{ port: 80 }] } }),
        (err: unknown) => isKubeApiError(err) && err.status === 422,
      );
      const fresh = await rest.create(paths.services("apps"), { metadata: { name: "probe" }, spec: { ports: [{ port: 80 }] } });
      assert.match(String((fresh.spec as { clusterIP: string }).clusterIP), /^10\.96\./, "the default ServiceCIDR still hands out old-range IPs");
      await rest.delete(paths.service("apps", "probe"));
      const current = await serviceCidr("kubernetes");
      assert.deepEqual((current!.spec as { cidrs: string[] }).cidrs, [OLD_RANGE], "the apiserver never updates the default from the flag");
      // the mover finds this out with a probe Service before it deletes anything, and leaves no probe behind
      const web = await rest.get(paths.service("apps", "web"));
      await assert.rejects(
        runServiceMoves(cluster().kubeConfig(), { moves: [{ namespace: "apps", name: "web", fromIP: "10.96.5.5", toIP: "10.100.5.5" }] }, { parallelism: 4, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE }),
        /kube-apiserver refuses ClusterIP 10\.100\.5\.5 \(planned for Service apps\/web\): .*; nothing was deleted/,
      );
      assert.equal((await rest.get(paths.service("apps", "web"))).metadata!.uid, web.metadata!.uid, "web was not touched");
      assert.deepEqual(await rest.list("/api/v1/services", { labelSelector: "cidr-migration.io/probe" }), []);
    });

    if (SERVES_SERVICE_CIDR) it("service-cidr-open: preview lists both objects; cut after the create and after the delete, the re-run converges", async function () {
      assert.equal(served, true, "the apiserver serves networking.k8s.io/v1 ServiceCIDR");
      const registration = await registrationOf(() => new ServiceCidrSwitch("service-cidr-open", { kubeconfig, step: "open", from: OLD_RANGE, to: NEW_RANGE }));
      const checked = await host.check(urnOf(registration.type, registration.name), {}, registration.inputs);
      assert.deepEqual(checked.inputs.creates, ["ServiceCIDR cidr-migration-10-100-0-0-16 [10.100.0.0/16]"]);
      assert.deepEqual(checked.inputs.deletes, ["ServiceCIDR kubernetes [10.96.0.0/16] (the apiserver re-creates it as [10.100.0.0/16])"]);

      await killedAt("open", "after-service-cidr-create");
      assert.ok(await serviceCidr("cidr-migration-10-100-0-0-16"), "the temporary ServiceCIDR was created before the kill");
      assert.equal((await serviceCidr("kubernetes"))!.metadata!.deletionTimestamp, undefined, "the default was not touched yet");
      await killedAt("open", "after-default-service-cidr-delete");

      const outputs = await stepThroughHost("open");
      assert.deepEqual(outputs.actions, [], "the re-run finds both steps done");
      assert.equal(JSON.stringify(outputs).includes("client-certificate-data"), false, "the kubeconfig is not an output");
      const old = await serviceCidr("kubernetes");
      assert.ok(old!.metadata!.deletionTimestamp, "the old default is Terminating");
      assert.ok(old!.metadata!.finalizers!.includes("networking.k8s.io/service-cidr-finalizer"), "held by its finalizer while addresses remain");
      // now a create in the new range works, and a Service with no IP asked gets one from the new range
      const probe = await rest.create(paths.services("apps"), { metadata: { name: "probe" }, spec: { ports: [{ port: 80 }] } });
      assert.match(String((probe.spec as { clusterIP: string }).clusterIP), /^10\.100\./);
      await rest.delete(paths.service("apps", "probe"));
    });

    if (minorNumber() === 33) it("1.33: without DisableAllocatorDualWrite a create at a planned IP is refused even with the ServiceCIDR open (what preflight blocks); with it, accepted", async function () {
      const probe = { metadata: { name: "probe" }, spec: { clusterIP: "10.100.9.9", ports: [{ port: 80 }] } };
      rest.close();
      await cluster().restartApiserver({ serviceClusterIpRange: NEW_RANGE, featureGates: "" });
      rest = await kubeRest(cluster().kubeConfig());
      await assert.rejects(rest.create(paths.services("apps"), probe), (err: unknown) => isKubeApiError(err) && /the provided range does not match the current range/.test(err.apiMessage));
      rest.close();
      await cluster().restartApiserver({ serviceClusterIpRange: NEW_RANGE, featureGates: APISERVER_FEATURE_GATES });
      rest = await kubeRest(cluster().kubeConfig());
      await rest.create(paths.services("apps"), probe);
      await rest.delete(paths.service("apps", "probe"));
    });

    if (SERVES_SERVICE_CIDR) it("the moves, then service-cidr-close cut after its delete and re-run: the new default replaces the old, nothing left in the old range", async function () {
      assert.equal(served, true, "the apiserver serves networking.k8s.io/v1 ServiceCIDR");
      const config = migrationConfig();
      const planned = serviceMovesFromPlan(buildPlan(config, await discoverInventory(cluster().kubeConfig())));
      const moves: ServiceMoveRequest[] = Object.entries(planned.moves).map(([key, m]) => ({ namespace: key.split("/")[0], name: key.split("/")[1], ...m }));
      // the DNS Service moves here directly (the graph's stand-in and final swap are proven in serviceRecreation)
      moves.push({ namespace: "kube-system", name: "kube-dns", fromIP: planned.dns!.fromIP, toIP: planned.dns!.toIP });
      const report = await runServiceMoves(cluster().kubeConfig(), { moves, kubernetesService: planned.kubernetesService }, { parallelism: 4, allowLoadBalancerRecreate: false, serviceCidr: NEW_RANGE });
      assert.equal(report.kubernetesService?.ip, "10.100.0.1");

      await killedAt("close", "after-temporary-service-cidr-delete");
      const outputs = await stepThroughHost("close");
      assert.deepEqual(outputs.creates, ["ServiceCIDR kubernetes [10.100.0.0/16] (by the apiserver)"]);
      const current = await serviceCidr("kubernetes");
      assert.deepEqual((current!.spec as { cidrs: string[] }).cidrs, [NEW_RANGE]);
      assert.equal(current!.metadata!.deletionTimestamp, undefined);
      assert.equal(await serviceCidr("cidr-migration-10-100-0-0-16"), undefined, "the temporary ServiceCIDR is gone");
      const addresses = (await rest.list(IP_ADDRESSES)).map((a) => a.metadata!.name!);
      assert.deepEqual(addresses.filter((ip) => ip.startsWith("10.96.")), []);
      for (const [ns, name, ip] of [["apps", "web", "10.100.5.5"], ["kube-system", "kube-dns", "10.100.0.10"], ["default", "kubernetes", "10.100.0.1"]]) {
        const live = await rest.get(paths.service(ns, name));
        assert.equal((live.spec as { clusterIP: string }).clusterIP, ip, `${ns}/${name}`);
        assert.ok(addresses.includes(ip), `IPAddress ${ip} records ${ns}/${name}`);
      }
      const verify = await runVerify({ config, kubeConfig: cluster().kubeConfig() });
      const serviceFindings = verify.findings.filter((f) => /SERVICE|IPADDRESS/.test(f.code));
      assert.deepEqual(serviceFindings, []);
      // a re-run of close after success does nothing and still succeeds
      assert.deepEqual((await stepThroughHost("close")).actions, []);
    });

    if (SERVES_SERVICE_CIDR) it("verify fails while any ServiceCIDR still offers addresses in the old range", async function () {
      assert.equal(served, true, "the apiserver serves networking.k8s.io/v1 ServiceCIDR");
      const config = migrationConfig();
      const extra = await rest.create(SERVICE_CIDRS, { apiVersion: "networking.k8s.io/v1", kind: "ServiceCIDR", metadata: { name: "leftover" }, spec: { cidrs: ["10.96.200.0/24"] } });
      try {
        const verify = await runVerify({ config, kubeConfig: cluster().kubeConfig() });
        assert.deepEqual(verify.findings.filter((f) => f.code === "SERVICE_CIDR_IN_OLD_RANGE").map((f) => f.object), ["ServiceCIDR leftover"]);
      } finally {
        await rest.delete(`${SERVICE_CIDRS}/${extra.metadata!.name}`);
      }
    });
  });
}
