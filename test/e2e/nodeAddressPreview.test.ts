/**
 * A worker's address change (issue 16) in a CIDR migration, previewed under the real Pulumi engine on its own
 * control plane: the worker's rollout steps add its new address over SSH to the old one, move --node-ip, wait in
 * the rejoin for the new InternalIP and remove the old address over SSH to the new one; `cidr-migration gate`
 * passes the preview. A control-plane node's change follows the rollout as its own chain (etcd quorum first, the old
 * address removed over SSH to the new one), and is refused before any resource, readably, when the cluster's
 * controlPlaneEndpoint sits on its old address. Nothing is written.
 * The steps themselves over real SSH: test/integration/nodeRolloutSsh.test.ts; the rejoin's wait against a real
 * apiserver: test/integration/nodeRolloutApi.test.ts.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CoreV1Api } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { giveSshKey, seedKubeadmLikeCluster } from "./kubeadmLikeCluster";
import { auditLineCount, EngineStack, persistedWrites, previewTheGatePasses } from "./engineStack";
import { useTestCluster } from "../testbed/fixture";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const OLD = { service: "10.96.0.0/16", pod: "10.244.0.0/16" };
const NEW = { service: "10.112.0.0/16", pod: "10.48.0.0/16" };
const NODES = [
  { name: "addr-cp-1", role: "control-plane", host: "192.168.77.11" },
  { name: "addr-cp-2", role: "control-plane", host: "192.168.77.12" },
  { name: "addr-cp-3", role: "control-plane", host: "192.168.77.13" },
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

  it("a control-plane node's change: its own chain after the rollout, one step after another; refused before any resource when the controlPlaneEndpoint sits on it", async () => {
    const planned = await stack.cli(["plan"]);
    assert.equal(planned.exitCode, 0, `${planned.stdout}\n${planned.stderr}`);
    assert.match(planned.stdout, /Node address changes .* a worker's runs with the node rollout/);
    for (const [key, value] of [["name", "addr-cp-2"], ["from", "192.168.77.12"], ["to", "192.168.78.12"]]) {
      await stack.pulumiOk(["config", "set", "--path", `nodeAddresses[0].${key}`, value]);
    }
    const preview = await stack.engine(["preview", "--json"]);
    assert.equal(preview.exitCode, 0, `${preview.stdout}\n${preview.stderr}`);
    const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
    const named = (name: string) => steps.find((s) => s.urn.endsWith(`::control-plane-address-addr-cp-2-${name}`))?.newState?.inputs;
    for (const name of ["etcd-quorum", "address-add", "certs-both", "read-files", "kubelet", "node-address", "etcd-peer", "etcd", "apiserver", "components", "node-follow", "certs-new", "etcd-handoff", "address-remove-old"]) {
      assert.ok(named(name), `control-plane-address-addr-cp-2-${name} is in the preview`);
    }
    assert.deepEqual([named("etcd-quorum")!.step, named("etcd-quorum")!.member, named("etcd-peer")!.to], ["check", "addr-cp-2", "192.168.78.12"]);
    assert.equal(named("address-add")!.connection.host, "192.168.77.12", "added over SSH to the old address");
    assert.equal(named("address-remove-old")!.connection.host, "192.168.78.12", "the old one removed over SSH to the new address");
    assert.equal(named("node-follow")!.internalIP, "192.168.78.12");
    assert.ok(!steps.some((s) => s.urn.includes("control-plane-address-addr-cp-1-")), "only the listed node");
    await previewTheGatePasses(stack, preview.stdout);

    const kc = cluster().kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const cm = await core.readNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config" });
    const original = cm.data!.ClusterConfiguration;
    const onNode = stringify({ ...(parse(original) as object), controlPlaneEndpoint: "192.168.77.12:6443" });
    await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config", body: { ...cm, data: { ...cm.data, ClusterConfiguration: onNode } } });
    try {
      const refused = await stack.engine(["preview"]);
      const all = `${refused.stdout}\n${refused.stderr}`;
      assert.notEqual(refused.exitCode, 0, all);
      assert.match(all, /addr-cp-2's old address 192\.168\.77\.12 is the cluster's controlPlaneEndpoint \(192\.168\.77\.12:6443 in kube-system\/kubeadm-config\)/);
      assert.match(all, /Nothing was changed\./);
      assert.doesNotMatch(all, /\n\s+at [\w.<>]+ \(/, "no stack trace");
    } finally {
      const now = await core.readNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config" });
      await core.replaceNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config", body: { ...now, data: { ...now.data, ClusterConfiguration: original } } });
    }
  });
});
