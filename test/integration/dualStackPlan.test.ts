// Dual-stack planning (issue 17) against a real dual-stack control plane of the test-bed version: the apiserver
// allocates ClusterIPs from an IPv4 + IPv6 --service-cluster-ip-range and KCM gives each Node a podCIDR per family.
// Discovery reads what they hand out; the plan moves each address within its family, in each Service's own order;
// `cidr-migration plan` prints each family's old → new; the Service mover re-creates every shape at its planned
// addresses with nothing else changed. The whole graph under the real engine: test/e2e/dualStack.test.ts.
import * as assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { CoreV1Api, V1Service } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { validateConfig } from "../../lib/config/config";
import { cidrContains, familyOf } from "../../lib/net/cidr";
import { discoverInventory } from "../../lib/plan/discovery";
import { Inventory } from "../../lib/plan/inventory";
import { buildPlan } from "../../lib/plan/plan";
import { kubeRest, paths } from "../../lib/serviceMove/kubeRest";
import { serviceMovesFromPlan } from "../../lib/serviceMove/planMoves";
import { listServiceCidrs } from "../../lib/serviceMove/serviceCidrs";
import { runServiceMoves } from "../../lib/serviceMove/serviceMover";
import { plannedIps, previousIps } from "../../lib/serviceMove/moveTypes";
import { routedAheadIpsOf, routeNewIpsAhead } from "../../lib/serviceMove/newIpAhead";
import { removeOldIpBridges } from "../../lib/serviceMove/oldIpBridge";
import { Plan } from "../../lib/plan/planModel";
import { runCli } from "../support/cli";
import { enterNewServiceRange, leaveOldServiceRange, servesServiceCidrs } from "../support/serviceRangePhase";
import { baseValues } from "../support/stackValues";
import { useTestCluster } from "../testbed/fixture";
import { waitUntil } from "../testbed/processes";

const OLD = { service: ["10.96.0.0/16", "fd00:10:96::/112"], pod: ["10.244.0.0/16", "fd00:10:244::/56"] };
const NEW = { service: ["10.112.0.0/16", "fd00:10:112::/112"], pod: ["10.48.0.0/16", "fd00:10:48::/56"] };
const NODES = ["dual-cp-1", "dual-worker-1"];

/** Every family shape a dual-stack cluster holds: the policy, and the family order asked for. */
const SHAPES: Array<{ name: string; policy: string; families: string[] }> = [
  { name: "single-v4", policy: "SingleStack", families: ["IPv4"] },
  { name: "single-v6", policy: "SingleStack", families: ["IPv6"] },
  { name: "prefer-v4-v6", policy: "PreferDualStack", families: ["IPv4", "IPv6"] },
  { name: "prefer-v6-v4", policy: "PreferDualStack", families: ["IPv6", "IPv4"] },
  { name: "require-v4-v6", policy: "RequireDualStack", families: ["IPv4", "IPv6"] },
  { name: "require-v6-v4", policy: "RequireDualStack", families: ["IPv6", "IPv4"] },
];

function stackValues(kubeconfig: string): Record<string, unknown> {
  return {
    ...baseValues(),
    kubeconfig,
    cni: "none",
    serviceCidr: { from: OLD.service, to: NEW.service },
    podCidr: { from: OLD.pod, to: NEW.pod, nodeMaskSize: { ipv4: 24, ipv6: 64 } },
    nodes: [
      { name: NODES[0], host: "192.168.77.11", role: "control-plane" },
      { name: NODES[1], host: "192.168.77.21", role: "worker" },
    ],
  };
}

describe("dual-stack plan on a real IPv4 + IPv6 control plane (issue 17)", function () {
  this.timeout(120_000);
  const cluster = useTestCluster({ serviceCidr: OLD.service.join(","), podCidr: OLD.pod.join(","), nodeMaskSize: 24, secondNodeMaskSize: 64 });
  const created = new Map<string, V1Service>();
  let inventory: Inventory;
  let plan: Plan;

  before(async () => {
    const core = cluster().kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "mixed" } } });
    for (const shape of SHAPES) {
      const body: V1Service = {
        metadata: { namespace: "mixed", name: shape.name },
        spec: { selector: { app: shape.name }, ports: [{ port: 80 }], ipFamilyPolicy: shape.policy, ipFamilies: shape.families },
      };
      created.set(shape.name, await core.createNamespacedService({ namespace: "mixed", body }));
    }
    await core.createNamespacedService({
      namespace: "kube-system",
      body: { metadata: { namespace: "kube-system", name: "kube-dns" }, spec: { selector: { "k8s-app": "kube-dns" }, ports: [{ port: 53, protocol: "UDP" }], clusterIP: "10.96.0.10" } },
    });
    for (const name of NODES) {
      const labels: Record<string, string> = name.includes("cp") ? { "node-role.kubernetes.io/control-plane": "" } : {};
      await core.createNode({ body: { metadata: { name, labels } } });
    }
    // KCM's range allocator gives each Node one podCIDR per family
    await waitUntil(async () => (await core.listNode()).items.every((n) => n.spec?.podCIDRs?.length === 2), { timeoutMs: 30_000, what: "a podCIDR per family on every Node" });
    inventory = await discoverInventory(cluster().kubeConfig());
    plan = buildPlan(validateConfig({ values: stackValues(cluster().kubeconfigPath) } as never, { inventory, planOnly: true }), inventory);
  });

  it("the apiserver hands out what each shape asks for, and discovery reads it", () => {
    for (const shape of SHAPES) {
      const live = created.get(shape.name)!;
      const found = inventory.services.find((s) => s.namespace === "mixed" && s.name === shape.name)!;
      assert.deepEqual(found.clusterIPs, live.spec!.clusterIPs, shape.name);
      assert.deepEqual(found.ipFamilies, shape.families, `${shape.name}: both families on a dual-stack cluster, in the order asked`);
    }
    for (const n of inventory.nodes) assert.deepEqual(n.podCIDRs!.map(familyOf), ["IPv4", "IPv6"], n.name);
  });

  it("moves every address within its own family, keeping each Service's order, its offsets and nothing else", () => {
    for (const shape of SHAPES) {
      const row = plan.services.find((s) => s.namespace === "mixed" && s.name === shape.name)!;
      const old = created.get(shape.name)!.spec!.clusterIPs!;
      assert.equal(row.action, "recreate", shape.name);
      const planned = row.newClusterIPs ?? [row.newClusterIP!];
      assert.deepEqual(row.oldClusterIPs ?? [row.oldClusterIP!], old, shape.name);
      assert.deepEqual(planned.map(familyOf), shape.families, `${shape.name} keeps its family order`);
      planned.forEach((ip, i) => {
        const family = familyOf(ip) === "IPv4" ? 0 : 1;
        assert.ok(cidrContains(NEW.service[family], ip), `${shape.name}: ${ip} in ${NEW.service[family]}`);
        assert.ok(!old.includes(ip), `${shape.name}: ${old[i]} moves`);
      });
      assert.equal(row.newClusterIP, planned[0], `${shape.name}: spec.clusterIP is the first`);
      assert.ok(row.keepsOffset, `${shape.name} keeps its offsets`);
    }
    for (const n of plan.nodes) {
      assert.equal(n.action, "move", n.name);
      assert.ok(cidrContains(NEW.pod[0], n.newPodCIDRs![0]) && n.newPodCIDRs![0].endsWith("/24"), `${n.name}: ${n.newPodCIDRs}`);
      assert.ok(cidrContains(NEW.pod[1], n.newPodCIDRs![1]) && n.newPodCIDRs![1].endsWith("/64"), `${n.name}: ${n.newPodCIDRs}`);
    }
    assert.deepEqual(plan.warnings.filter((w) => /OUTSIDE|OFFSET/.test(w.code)), []);
  });

  it("`cidr-migration plan` prints each family's old → new and both addresses of a dual-stack Service; a run plans the same", async () => {
    const values = stackValues(cluster().kubeconfigPath);
    const file = path.join(mkdtempSync(path.join(tmpdir(), "cidr-dual-")), "Pulumi.dual.yaml");
    writeFileSync(file, stringify({ config: Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, v])) }));
    const result = await runCli(["plan", "--config", file]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Service CIDR {2}IPv4: 10\.96\.0\.0\/16 -> 10\.112\.0\.0\/16\n {14}IPv6: fd00:10:96::\/112 -> fd00:10:112::\/112/);
    const require = created.get("require-v6-v4")!.spec!.clusterIPs!;
    assert.match(result.stdout, new RegExp(`mixed/require-v6-v4\\s+ClusterIP\\s+${require.join(", ")}\\s+fd00:10:112::\\S+, 10\\.112\\.\\S+\\s+recreate`));
    // a run plans exactly what `plan` showed: nothing about this cluster is refused
    assert.deepEqual(buildPlan(validateConfig({ values } as never, { inventory }), inventory).services, plan.services);
  });

  it("the Service mover re-creates every shape at its planned addresses, both families in one re-create, routed ahead and bridged in both, nothing else changed once the bridges end; (1.33+) the default ServiceCIDR ends on the new pair", async () => {
    const rest = await kubeRest(cluster().kubeConfig());
    try {
      // the control-plane phase as far as Services need it: the apiserver on the new pair, and (1.33+)
      // service-cidr-open: a ServiceCIDR for the new pair, the old default let go
      await enterNewServiceRange(cluster(), OLD.service.join(","), NEW.service.join(","));
      const planned = serviceMovesFromPlan(plan);
      const requests = [...SHAPES.map(({ name }) => ({ namespace: "mixed", name, ...planned.moves[`mixed/${name}`] })), { namespace: "kube-system", name: "kube-dns", fromIP: planned.dns!.fromIP, toIP: planned.dns!.toIP }];
      assert.equal(requests.filter((r) => "otherFamily" in r && r.otherFamily).length, 4, "the four dual-stack Services move both families");
      // the apiserver takes a planned address of each family as an externalIP (services.routeNewIpsFirst); the
      // run below finds this one routed already and routes the others
      const dual = requests.find((r) => r.name === "prefer-v6-v4")!;
      const [ahead] = await routeNewIpsAhead(rest, [{ live: await rest.get(paths.service("mixed", dual.name)), toIPs: plannedIps(dual) }]);
      assert.deepEqual((ahead.spec as { externalIPs: string[] }).externalIPs, plannedIps(dual), "both families routed ahead, IPv6 first as the Service holds them");
      const options = { parallelism: 4, allowLoadBalancerRecreate: false, bridgeOldIps: true, routeNewIpsFirst: true, routeAheadSettleMs: 200 };
      const report = await runServiceMoves(cluster().kubeConfig(), { moves: requests, kubernetesService: planned.kubernetesService }, options);
      assert.deepEqual(report.results.map((r) => r.outcome), requests.map(() => "moved"));
      assert.equal(report.kubernetesService?.ip, "10.112.0.1");
      // services.bridgeOldIps: every old address answers until the bridges end, a dual-stack Service's in both families
      for (const request of requests) {
        const moved = await rest.get(paths.service(request.namespace, request.name));
        assert.deepEqual((moved.spec as { externalIPs?: string[] }).externalIPs, previousIps(request), `${request.name} bridged at its old addresses`);
        assert.equal(routedAheadIpsOf(moved), undefined, `${request.name}: nothing routed ahead is left`);
      }
      const bridged = await removeOldIpBridges(rest);
      assert.deepEqual(bridged.sort(), requests.map((r) => `${r.namespace}/${r.name} ${previousIps(r).join(",")}`).sort());

      for (const shape of SHAPES) {
        const row = plan.services.find((s) => s.namespace === "mixed" && s.name === shape.name)!;
        const before = created.get(shape.name)!;
        const after = await rest.get(paths.service("mixed", shape.name));
        const spec = after.spec as Record<string, unknown>;
        assert.deepEqual(spec.clusterIPs, row.newClusterIPs ?? [row.newClusterIP], `${shape.name} at its planned addresses, in its order`);
        assert.equal(spec.clusterIP, row.newClusterIP);
        const { clusterIP: _a, clusterIPs: _b, ...rest1 } = before.spec as Record<string, unknown>;
        const { clusterIP: _c, clusterIPs: _d, ...rest2 } = spec;
        assert.deepEqual(JSON.parse(JSON.stringify(rest2)), JSON.parse(JSON.stringify(rest1)), `${shape.name}: ipFamilies, ipFamilyPolicy and every other field kept`);
      }
      // a second run finds every Service moved
      const again = await runServiceMoves(cluster().kubeConfig(), { moves: requests }, options);
      assert.deepEqual(again.results.map((r) => r.outcome), requests.map(() => "already-moved"));

      if (await servesServiceCidrs(cluster().kubeConfig())) {
        // service-cidr-close: nothing is left in the old pair, so the old default goes and the apiserver makes it anew
        await leaveOldServiceRange(cluster(), OLD.service.join(","), NEW.service.join(","));
        assert.deepEqual((await listServiceCidrs(rest)).map((c) => [c.name, c.cidrs]), [["kubernetes", NEW.service]]);
      }
    } finally {
      rest.close();
    }
  });
});
