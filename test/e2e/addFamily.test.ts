/**
 * Single-stack → dual-stack (issue 17: an "add family" run) under the real Pulumi engine, on its own IPv4 control
 * plane with kubeadm's ConfigMaps: `pulumi preview --json` of the whole program moves no Service, re-registers each
 * node with a subnet of the added family beside the one it keeps, puts the apiserver's range, kube-proxy's
 * clusterCIDR and (1.33+) the ServiceCIDR on the pairs; `cidr-migration gate` passes it; the preview writes nothing.
 * The conversion itself on a real control plane: test/integration/addFamily.test.ts.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CoreV1Api } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { giveSshKey, seedKubeadmLikeCluster } from "./kubeadmLikeCluster";
import { auditLineCount, EngineStack, persistedWrites, previewTheGatePasses } from "./engineStack";
import { useTestCluster } from "../testbed/fixture";
import { minorNumber, resolveTestBedVersion } from "../testbed/kubeVersion";

const V4 = { service: "10.96.0.0/16", pod: "10.244.0.0/16" };
const V6 = { service: "fd00:10:96::/112", pod: "fd00:10:244::/56" };
const NODES = [{ name: "add-cp-1", role: "control-plane", port: 2201 }, { name: "add-worker-1", role: "worker", port: 2202 }];

interface PreviewStep { op: string; urn: string; newState?: { type: string; inputs?: Record<string, any> } }

describe(`the real Pulumi engine previews an add-family run (single → dual-stack) and the gate passes it (Kubernetes ${resolveTestBedVersion().kube}, issue 17)`, function () {
  this.timeout(600_000);
  const cluster = useTestCluster({ serviceCidr: V4.service, podCidr: V4.pod, nodeMaskSize: 24 });
  let stack: EngineStack;
  const podCIDRs = new Map<string, string>();

  before(async () => {
    const kc = cluster().kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "apps" } } });
    await core.createNamespacedService({ namespace: "apps", body: { metadata: { name: "web" }, spec: { selector: { app: "web" }, ports: [{ port: 80 }] } } });
    await seedKubeadmLikeCluster(kc, { serviceSubnet: V4.service, podSubnet: V4.pod }, NODES);
    for (const n of (await core.listNode()).items) podCIDRs.set(n.metadata!.name!, n.spec!.podCIDR!);

    const config = {
      "cidr-migration:serviceCidr": { from: V4.service, to: [V4.service, V6.service] },
      "cidr-migration:podCidr": { from: V4.pod, to: [V4.pod, V6.pod], nodeMaskSize: { ipv4: 24, ipv6: 64 } },
      "cidr-migration:cni": "none",
      "cidr-migration:kubeconfig": cluster().kubeconfigPath,
      "cidr-migration:etcd": { endpoints: [cluster().etcd.endpoint] },
      "cidr-migration:snapshot": { directory: fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-add-family-")), trigger: "e2e-add-family" },
      "cidr-migration:nodes": NODES.map((n) => ({ name: n.name, host: "127.0.0.1", port: n.port, role: n.role })),
      "cidr-migration:ssh": { user: "root" },
    };
    stack = await EngineStack.init(`e2e-add-family-${process.pid}`, stringify({ config }));
    await giveSshKey(stack);
  });

  after(async () => {
    await stack?.remove();
  });

  it("`pulumi preview --json`: no Service moves, each node keeps its IPv4 subnet and gains an IPv6 one, the ranges become pairs; the gate passes; nothing written", async () => {
    const before = auditLineCount(cluster().auditLogPath);
    const preview = await stack.engine(["preview", "--json", "--show-sames"]);
    assert.equal(preview.exitCode, 0, `${preview.stdout}\n${preview.stderr}`);
    const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
    const inputsOf = (type: string) => steps.filter((s) => s.newState?.type === `pulumi-nodejs:dynamic/cidr-migration:${type}`).map((s) => s.newState!.inputs!);

    const moves = Object.assign({}, ...inputsOf("ServiceRecreation").map((i) => i.moves ?? {}));
    assert.deepEqual(Object.keys(moves), [], "an added family moves no Service");

    const rejoins: Record<string, string> = Object.fromEntries(inputsOf("NodeRejoin").map((i) => [i.node, String(i.plannedPodCIDR)]));
    assert.deepEqual(Object.keys(rejoins).sort(), NODES.map((n) => n.name).sort(), "every node re-registers (a Node cannot gain a podCIDR in place)");
    for (const [node, planned] of Object.entries(rejoins)) {
      const [v4, v6] = planned.split(",");
      assert.equal(v4, podCIDRs.get(node), `${node} keeps its IPv4 subnet`);
      assert.match(v6 ?? "", /^fd00:10:244:[0-9a-f:]*\/64$/, `${node} gains an IPv6 /64 of the added range`);
    }

    const text = preview.stdout;
    assert.ok(text.includes(`clusterCIDR: ${V4.pod},${V6.pod}`) || text.includes(`clusterCIDR: \\"${V4.pod},${V6.pod}\\"`), "kube-proxy's clusterCIDR is the pair");
    assert.ok(text.includes(`service-cluster-ip-range=${V4.service},${V6.service}`), "the apiserver's range is the pair");
    if (minorNumber() >= 33) {
      const open = inputsOf("ServiceCidrSwitch").find((i) => i.step === "open");
      assert.ok(open, "a ServiceCIDR step on 1.33+");
      assert.match([...open.creates, ...(open.deletes ?? [])].join(" "), /fd00:10:96::\/112/, `the ServiceCIDR switch holds the added range: ${JSON.stringify(open)}`);
    }
    await previewTheGatePasses(stack, preview.stdout);
    assert.deepEqual(persistedWrites(cluster().auditLogPath, "kubernetes-admin", before), [], "the preview wrote nothing to the cluster");
  });
});
