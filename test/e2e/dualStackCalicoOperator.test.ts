/**
 * A dual-stack cluster's Calico pools moved through the Tigera operator (issue 17) under the real Pulumi engine, on
 * its own IPv4 + IPv6 control plane, with the operator's pool-controller stand-in running (test/support). The
 * Installation lists one pool per family; the run's program is index.ts's Calico half (test/e2e/calicoProgram.ts).
 * - each step's Installation patch carries both families: both new pools added beside the old ones, both old ones
 *   closed, and the operator creates and edits the IPPools;
 * - the removal waits for each family's old pool to drain: an IPAM block left in the old IPv6 range stops it before
 *   the Installation changes; once released, both old pools are unlisted in one patch and the operator deletes them;
 * - a third run has nothing left to do.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { stringify } from "yaml";
import { calicoProgram } from "./calicoProgram";
import { EngineStack } from "./engineStack";
import { giveSshKey, seedKubeadmLikeCluster } from "./kubeadmLikeCluster";
import { installCalicoCrds } from "../support/calicoCrds";
import { installOperator, OperatorInstall } from "../support/tigeraOperatorFixture";
import { useTestCluster } from "../testbed/fixture";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const PROJECT = path.join(__dirname, "calico-project");
const CALICO = { group: "crd.projectcalico.org", version: "v1" };
const TIGERA = { group: "operator.tigera.io", version: "v1" };
const OLD = { service: ["10.96.0.0/16", "fd00:10:96::/112"], pod: ["10.244.0.0/16", "fd00:10:244::/56"] };
const NEW = { service: ["10.112.0.0/16", "fd00:10:112::/112"], pod: ["10.48.0.0/16", "fd00:10:48::/56"] };
const NODES = [{ name: "dual-cp-1", role: "control-plane", port: 2201 }, { name: "dual-worker-1", role: "worker", port: 2202 }];
/** The Installation's pools as the operator defaults them on a dual-stack cluster. */
const V4 = { name: "default-ipv4-ippool", cidr: OLD.pod[0], blockSize: 26, encapsulation: "IPIP", natOutgoing: "Enabled", nodeSelector: "all()", assignmentMode: "Automatic" };
const V6 = { name: "default-ipv6-ippool", cidr: OLD.pod[1], blockSize: 122, encapsulation: "None", natOutgoing: "Disabled", nodeSelector: "all()", assignmentMode: "Automatic" };
const NEW_V4 = "cidr-migration-10-48-0-0-16";
const NEW_V6 = "cidr-migration-fd00-10-48-56";
const V6_BLOCK = "fd00:10:244:0:1::/122";

interface CalicoObject {
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, any>;
}

describe(`the real Pulumi engine moves both families' Calico pools through the Tigera operator (Kubernetes ${resolveTestBedVersion().kube}, issue 17)`, function () {
  this.timeout(600_000);
  const cluster = useTestCluster({ serviceCidr: OLD.service.join(","), podCidr: OLD.pod.join(","), nodeMaskSize: 24, secondNodeMaskSize: 64 });
  let stack: EngineStack;
  let operator: OperatorInstall | undefined;
  const custom = () => cluster().kubeConfig().makeApiClient(CustomObjectsApi);
  const list = async (plural: string) => ((await custom().listClusterCustomObject({ ...CALICO, plural })) as { items: CalicoObject[] }).items;
  const pool = async (name: string) => (await list("ippools")).find((p) => p.metadata.name === name);
  const installationPools = async () =>
    ((await custom().getClusterCustomObject({ ...TIGERA, plural: "installations", name: "default" })) as { spec: { calicoNetwork: { ipPools: Array<Record<string, unknown>> } } }).spec.calicoNetwork.ipPools;
  const all = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`;

  before(async () => {
    const kc = cluster().kubeConfig();
    await seedKubeadmLikeCluster(kc, { serviceSubnet: OLD.service.join(","), podSubnet: OLD.pod.join(",") }, NODES);

    // what the operator made at install time, one pool per family; and one node's IPv6 block in the old range
    await installCalicoCrds(kc);
    const create = (plural: string, kind: string, name: string, spec: object) =>
      custom().createClusterCustomObject({ ...CALICO, plural, body: { apiVersion: "crd.projectcalico.org/v1", kind, metadata: { name }, spec } });
    await create("ippools", "IPPool", V4.name, { cidr: V4.cidr, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" });
    await create("ippools", "IPPool", V6.name, { cidr: V6.cidr, blockSize: 122, ipipMode: "Never", vxlanMode: "Never", natOutgoing: false, nodeSelector: "all()" });
    await create("ipamblocks", "IPAMBlock", "fd00-10-244-0-1--122", {
      cidr: V6_BLOCK, affinity: `host:${NODES[1].name}`, strictAffinity: false, deleted: false,
      allocations: Array.from({ length: 64 }, (_, i) => (i === 0 ? 0 : null)), unallocated: Array.from({ length: 63 }, (_, i) => i + 1),
      attributes: [{ handle_id: "k8s-pod-network.web-0", secondary: { node: NODES[1].name, type: "pod" } }],
    });
    operator = await installOperator(kc, { pools: [V4, V6], apiServerReady: true });

    const snapshots = fs.mkdtempSync(path.join(os.tmpdir(), "cidr-e2e-dual-calico-"));
    const config = {
      "cidr-migration:serviceCidr": { from: OLD.service, to: NEW.service },
      "cidr-migration:podCidr": { from: OLD.pod, to: NEW.pod, nodeMaskSize: { ipv4: 24, ipv6: 64 } },
      "cidr-migration:cni": "calico",
      "cidr-migration:kubeconfig": cluster().kubeconfigPath,
      "cidr-migration:etcd": { endpoints: [cluster().etcd.endpoint] },
      "cidr-migration:snapshot": { directory: snapshots, trigger: "e2e-dual-calico" },
      "cidr-migration:nodes": NODES.map((n) => ({ name: n.name, host: "127.0.0.1", port: n.port, role: n.role })),
      "cidr-migration:ssh": { user: "root" },
    };
    stack = await EngineStack.init(`e2e-dual-calico-${process.pid}`, stringify({ config }), PROJECT);
    await giveSshKey(stack);
  });

  after(async () => {
    await operator?.remove();
    await stack?.remove();
  });

  it("preview, then `up`: each Installation patch carries both families; the IPv6 pool's removal waits for its last block, then both go in one patch", async () => {
    const preview = await stack.runProgram(calicoProgram(), ["preview", "--diff"]);
    assert.equal(preview.exitCode, 0, all(preview));
    assert.match(all(preview), /Calico pools: calico \(pools: through Installation default\)/);
    for (const name of ["calico-pool-add-new-pool", "calico-pool-close-old-pool", "calico-old-pool-drained", "calico-old-pool-drained-ipv6", "calico-old-pool-remove-from-installation", "calico-old-pool-deleted-ipv6"]) {
      assert.match(preview.stdout, new RegExp(`${name}\\b`), name);
    }
    assert.doesNotMatch(preview.stdout, /calico-pool-ipv6|calico-pool-disable-old/, "no IPPool edited beside the operator");

    const first = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(first.exitCode, 1, all(first));
    assert.match(all(first), /Calico IPPool default-ipv6-ippool \(fd00:10:244::\/56\) is still in use: 1 IPAM block/);
    const added4 = { ...V4, name: NEW_V4, cidr: NEW.pod[0], disableBGPExport: false };
    const added6 = { ...V6, name: NEW_V6, cidr: NEW.pod[1], disableBGPExport: false };
    const closed = (p: object) => ({ ...p, disableBGPExport: false, nodeSelector: "!all()" });
    assert.deepEqual(await installationPools(), [closed(V4), closed(V6), added4, added6], "both new pools listed, both old ones closed, none unlisted yet");
    for (const [name, cidr] of [[NEW_V4, NEW.pod[0]], [NEW_V6, NEW.pod[1]]]) {
      const made = (await pool(name))!;
      assert.equal(made.spec.cidr, cidr);
      assert.equal(made.metadata.labels?.["app.kubernetes.io/managed-by"], "tigera-operator", `the operator made ${name}`);
    }
    assert.equal((await pool(V6.name))!.spec.nodeSelector, "!all()");
    assert.equal((await pool(V4.name))!.spec.nodeSelector, "!all()");

    // what the node rollout does: the node's block in the old IPv6 range is released
    await custom().deleteClusterCustomObject({ ...CALICO, plural: "ipamblocks", name: "fd00-10-244-0-1--122" });
    const second = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(second.exitCode, 0, all(second));
    assert.deepEqual(await installationPools(), [added4, added6]);
    assert.deepEqual((await list("ippools")).map((p) => p.metadata.name).sort(), [NEW_V4, NEW_V6].sort());
    for (const old of [V4.name, V6.name]) assert.ok(operator!.standIn.actions.includes(`delete ${old}`), `the operator deleted ${old}: ${operator!.standIn.actions.join(", ")}`);

    const third = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(third.exitCode, 0, all(third));
    assert.deepEqual(await installationPools(), [added4, added6]);
    assert.equal(JSON.parse(await stack.pulumiOk(["stack", "output", "--json"])).nothingToDo.length, 2, "nothing left to do");
  });
});
