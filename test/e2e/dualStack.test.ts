/**
 * A dual-stack migration (issue 17) under the real Pulumi engine, on its own IPv4 + IPv6 control plane (IPv6 on
 * loopback): every Service shape, kubeadm's ConfigMaps on the old pairs, two simulated nodes. The preview carries
 * each family's move into every step: both ClusterIPs of a dual-stack Service, both podCIDRs of each node, both
 * ranges of the ServiceCIDR switch (1.33+) and of kube-proxy; the gate passes it against the plan and refuses it
 * against a plan that put one second address elsewhere. The preview writes nothing.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CoreV1Api } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { giveSshKey, seedKubeadmLikeCluster } from "./kubeadmLikeCluster";
import { assertServiceCidrSwitch, auditLineCount, EngineStack, persistedWrites, previewTheGatePasses } from "./engineStack";
import { useTestCluster } from "../testbed/fixture";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const OLD = { service: ["10.96.0.0/16", "fd00:10:96::/112"], pod: ["10.244.0.0/16", "fd00:10:244::/56"] };
const NEW = { service: ["10.112.0.0/16", "fd00:10:112::/112"], pod: ["10.48.0.0/16", "fd00:10:48::/56"] };
const SHAPES: Array<{ name: string; policy: string; families: string[] }> = [
  { name: "single-v4", policy: "SingleStack", families: ["IPv4"] },
  { name: "single-v6", policy: "SingleStack", families: ["IPv6"] },
  { name: "prefer-v4-v6", policy: "PreferDualStack", families: ["IPv4", "IPv6"] },
  { name: "require-v6-v4", policy: "RequireDualStack", families: ["IPv6", "IPv4"] },
];
const NODES = [{ name: "dual-cp-1", role: "control-plane", port: 2201 }, { name: "dual-worker-1", role: "worker", port: 2202 }];

interface PlannedService { namespace: string; name: string; action: string; oldClusterIP: string; newClusterIP: string; oldClusterIPs?: string[]; newClusterIPs?: string[] }
interface PreviewStep { op: string; urn: string; newState?: { type: string; inputs?: Record<string, any> } }

describe(`the real Pulumi engine previews a dual-stack migration and the gate judges it (Kubernetes ${resolveTestBedVersion().kube}, issue 17)`, function () {
  this.timeout(600_000);
  const cluster = useTestCluster({ serviceCidr: OLD.service.join(","), podCidr: OLD.pod.join(","), nodeMaskSize: 24, secondNodeMaskSize: 64 });
  let stack: EngineStack;
  let plan: { services: PlannedService[]; nodes: Array<{ name: string; action: string; newPodCIDRs?: string[] }> };

  before(async () => {
    const kc = cluster().kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "mixed" } } });
    for (const shape of SHAPES) {
      await core.createNamespacedService({
        namespace: "mixed",
        body: { metadata: { name: shape.name }, spec: { selector: { app: shape.name }, ports: [{ port: 80 }], ipFamilyPolicy: shape.policy, ipFamilies: shape.families } },
      });
    }
    await seedKubeadmLikeCluster(kc, { serviceSubnet: OLD.service.join(","), podSubnet: OLD.pod.join(",") }, NODES);

    const snapshots = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-dual-snapshots-"));
    const config = {
      "cidr-migration:serviceCidr": { from: OLD.service, to: NEW.service },
      "cidr-migration:podCidr": { from: OLD.pod, to: NEW.pod, nodeMaskSize: { ipv4: 24, ipv6: 64 } },
      "cidr-migration:cni": "none",
      "cidr-migration:kubeconfig": cluster().kubeconfigPath,
      "cidr-migration:etcd": { endpoints: [cluster().etcd.endpoint] },
      "cidr-migration:snapshot": { directory: snapshots, trigger: "e2e-dual" },
      "cidr-migration:nodes": NODES.map((n) => ({ name: n.name, host: "127.0.0.1", port: n.port, role: n.role })),
      "cidr-migration:ssh": { user: "root" },
    };
    stack = await EngineStack.init(`e2e-dual-${process.pid}`, stringify({ config }));
    await giveSshKey(stack);
    const planned = await stack.cli(["plan", "--json"]);
    assert.equal(planned.exitCode, 0, `${planned.stdout}\n${planned.stderr}`);
    plan = JSON.parse(planned.stdout);
  });

  after(async () => {
    await stack?.remove();
  });

  it("a live ConfigMap the run cannot edit is one readable error before any resource, not a preview that never ends", async () => {
    const core = cluster().kubeConfig().makeApiClient(CoreV1Api);
    const live = await core.readNamespacedConfigMap({ namespace: "kube-system", name: "kube-proxy" });
    const body = (data: Record<string, string>) => ({ ...live, metadata: { ...live.metadata, resourceVersion: undefined }, data });
    await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kube-proxy", body: body({ ...live.data, "config.conf": "kind: KubeSchedulerConfiguration\n" }) });
    try {
      const preview = await stack.engine(["preview"]);
      const all = `${preview.stdout}\n${preview.stderr}`;
      assert.notEqual(preview.exitCode, 0, all);
      assert.match(all, /kube-system\/kube-proxy config\.conf/);
      assert.doesNotMatch(all, /\n\s+at [\w.<>]+ \(/, "no stack trace");
      assert.doesNotMatch(all, /^\s*\+\s+pulumi-nodejs:dynamic/m, "no resource declared");
    } finally {
      await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kube-proxy", body: body(live.data ?? {}) });
    }
  });

  it("`pulumi preview --json`: both addresses of every dual-stack Service, both podCIDRs of each node, both ranges of the ServiceCIDR switch and kube-proxy; the gate passes it, and refuses a plan with one second address elsewhere; nothing written", async () => {
    const before = auditLineCount(cluster().auditLogPath);
    const preview = await stack.engine(["preview", "--json", "--show-sames"]);
    assert.equal(preview.exitCode, 0, `${preview.stdout}\n${preview.stderr}`);
    const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
    const inputsOf = (type: string) => steps.filter((s) => s.newState?.type === `pulumi-nodejs:dynamic/cidr-migration:${type}`).map((s) => s.newState!.inputs!);

    // every shape moves, a dual-stack one with its second family beside the first
    const moves: Record<string, { fromIP: string; toIP: string; otherFamily?: { fromIP: string; toIP: string } }> = Object.assign({}, ...inputsOf("ServiceRecreation").map((i) => i.moves));
    for (const shape of SHAPES) {
      const row = plan.services.find((s) => s.namespace === "mixed" && s.name === shape.name)!;
      const move = moves[`mixed/${shape.name}`];
      assert.deepEqual([move.fromIP, move.toIP], [row.oldClusterIP, row.newClusterIP], shape.name);
      const second = row.newClusterIPs?.[1];
      assert.equal(shape.families.length === 2, second !== undefined, `${shape.name}: a second address only for a dual-stack Service`);
      assert.deepEqual(move.otherFamily, second ? { fromIP: row.oldClusterIPs![1], toIP: second } : undefined, shape.name);
    }
    assert.equal(moves["mixed/require-v6-v4"].toIP.includes(":"), true, "an IPv6-first Service moves its IPv6 address first");

    // each node re-registers with a subnet per family
    const rejoins = Object.fromEntries(inputsOf("NodeRejoin").map((i) => [i.node, i.plannedPodCIDR]));
    for (const n of plan.nodes.filter((node) => node.action === "move")) {
      assert.equal(n.newPodCIDRs?.length, 2, n.name);
      assert.equal(rejoins[n.name], n.newPodCIDRs!.join(","), n.name);
    }

    // kube-proxy's clusterCIDR gets the pair, primary family first
    assert.ok(preview.stdout.includes(`clusterCIDR: ${NEW.pod.join(",")}`) || preview.stdout.includes(`clusterCIDR: \\"${NEW.pod.join(",")}\\"`), "kube-proxy's clusterCIDR is the new pair");

    assertServiceCidrSwitch(inputsOf("ServiceCidrSwitch"), OLD.service, NEW.service);
    const previewFile = await previewTheGatePasses(stack, preview.stdout);

    // the same preview against a reviewed plan that put one Service's second address elsewhere
    const reviewed = JSON.parse(JSON.stringify(plan)) as typeof plan;
    const dual = reviewed.services.find((s) => s.namespace === "mixed" && s.name === "prefer-v4-v6")!;
    const planned = dual.newClusterIPs![1];
    dual.newClusterIPs![1] = planned.endsWith("::99") ? planned.replace(/::99$/, "::98") : planned.replace(/::[0-9a-f]+$/, "::99");
    const planFile = path.join(stack.dir, "reviewed-plan.json");
    fs.writeFileSync(planFile, JSON.stringify(reviewed));
    const offPlan = await stack.cli(["gate", previewFile, "--plan", planFile], false);
    assert.equal(offPlan.exitCode, 1, `${offPlan.stdout}\n${offPlan.stderr}`);
    assert.match(offPlan.stdout, new RegExp(`mixed/prefer-v4-v6[\\s\\S]*re-creates its second ClusterIP at ${planned}, the plan at ${dual.newClusterIPs![1]}`));
    assert.deepEqual(persistedWrites(cluster().auditLogPath, "kubernetes-admin", before), [], "the preview wrote nothing to the cluster");
  });
});
