/**
 * A worker's address change (issue 16) in a CIDR migration, previewed under the real Pulumi engine on its own
 * control plane: the worker's rollout steps add its new address over SSH to the old one, move --node-ip, wait in
 * the rejoin for the new InternalIP and remove the old address over SSH to the new one; `cidr-migration gate`
 * passes the preview; a control-plane node's change is refused before any resource, readably. Nothing is written.
 * The steps themselves over real SSH: test/integration/nodeRolloutSsh.test.ts; the rejoin's wait against a real
 * apiserver: test/integration/nodeRolloutApi.test.ts.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { stringify } from "yaml";
import { giveSshKey, seedKubeadmLikeCluster } from "./kubeadmLikeCluster";
import { auditLineCount, EngineStack, persistedWrites, previewTheGatePasses } from "./engineStack";
import { useTestCluster } from "../testbed/fixture";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const OLD = { service: "10.96.0.0/16", pod: "10.244.0.0/16" };
const NEW = { service: "10.112.0.0/16", pod: "10.48.0.0/16" };
const NODES = [
  { name: "addr-cp-1", role: "control-plane", host: "192.168.77.11" },
  { name: "addr-worker-1", role: "worker", host: "192.168.77.21" },
  { name: "addr-worker-2", role: "worker", host: "192.168.77.22" },
];

interface PreviewStep { op: string; urn: string; newState?: { type: string; inputs?: Record<string, any> } }

describe(`the real Pulumi engine previews a worker's address change with the rollout (Kubernetes ${resolveTestBedVersion().kube}, issue 16)`, function () {
  this.timeout(600_000);
  const cluster = useTestCluster({ serviceCidr: OLD.service, podCidr: OLD.pod, nodeMaskSize: 24 });
  let stack: EngineStack;
  const config = (nodeAddresses: Array<{ name: string; from: string; to: string }>) => ({
    "cidr-migration:serviceCidr": { from: OLD.service, to: NEW.service },
    "cidr-migration:podCidr": { from: OLD.pod, to: NEW.pod, nodeMaskSize: 24 },
    "cidr-migration:cni": "none",
    "cidr-migration:kubeconfig": cluster().kubeconfigPath,
    "cidr-migration:etcd": { endpoints: [cluster().etcd.endpoint] },
    "cidr-migration:snapshot": { directory: fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-node-address-")), trigger: "e2e-node-address" },
    "cidr-migration:nodes": NODES.map((n) => ({ name: n.name, host: n.host, role: n.role })),
    "cidr-migration:ssh": { user: "root" },
    "cidr-migration:nodeAddresses": nodeAddresses,
    "cidr-migration:hostAddress": { persistence: "netplan", prefix: 24 },
  });

  before(async () => {
    const kc = cluster().kubeConfig();
    await seedKubeadmLikeCluster(kc, { serviceSubnet: OLD.service, podSubnet: OLD.pod }, NODES);
    stack = await EngineStack.init(`e2e-node-address-${process.pid}`, stringify({ config: config([{ name: "addr-worker-2", from: "192.168.77.22", to: "192.168.78.22" }]) }));
    await giveSshKey(stack);
  });

  after(async () => {
    await stack?.remove();
  });

  it("`pulumi preview --json`: the worker's address steps in its rollout, over the old address then the new one; the gate passes; nothing written", async () => {
    const before = auditLineCount(cluster().auditLogPath);
    const preview = await stack.engine(["preview", "--json"]);
    assert.equal(preview.exitCode, 0, `${preview.stdout}\n${preview.stderr}`);
    const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
    const named = (name: string) => steps.find((s) => s.urn.endsWith(`::${name}`))?.newState?.inputs;
    const add = named("nodes-addr-worker-2-address-add");
    const removeOld = named("nodes-addr-worker-2-address-remove-old");
    assert.ok(add && removeOld && named("nodes-addr-worker-2-kubelet-node-ip"), "the worker's address steps are in the preview");
    assert.equal(add.connection.host, "192.168.77.22", "added over SSH to the old address");
    assert.equal(removeOld.connection.host, "192.168.78.22", "the old one removed over SSH to the new address");
    assert.match(String(add.script), /netplan set/);
    assert.equal(named("nodes-addr-worker-2-rejoin")?.internalIP, "192.168.78.22");
    assert.equal(named("nodes-addr-worker-1-address-add"), undefined, "only the listed worker");
    assert.match(String(named("nodes-addr-worker-2-kubelet-node-ip")?.triggers), /--node-ip 192\.168\.77\.22 -> 192\.168\.78\.22/);
    await previewTheGatePasses(stack, preview.stdout);
    assert.deepEqual(persistedWrites(cluster().auditLogPath, "kubernetes-admin", before), [], "the preview wrote nothing to the cluster");
  });

  it("a control-plane node's change is refused before any resource, naming the entry and `cidr-migration plan`", async () => {
    const planned = await stack.cli(["plan"]);
    assert.equal(planned.exitCode, 0, `${planned.stdout}\n${planned.stderr}`);
    assert.match(planned.stdout, /Node address changes .* a worker's runs with the node rollout/);
    for (const [key, value] of [["name", "addr-cp-1"], ["from", "192.168.77.11"], ["to", "192.168.78.11"]]) {
      await stack.pulumiOk(["config", "set", "--path", `nodeAddresses[0].${key}`, value]);
    }
    const preview = await stack.engine(["preview"]);
    const all = `${preview.stdout}\n${preview.stderr}`;
    assert.notEqual(preview.exitCode, 0, all);
    assert.match(all, /cidr-migration:nodeAddresses\[0\]\.name: addr-cp-1 is a control-plane node: `cidr-migration plan` shows its address change/);
    assert.doesNotMatch(all, /\n\s+at [\w.<>]+ \(/, "no stack trace");
  });
});
