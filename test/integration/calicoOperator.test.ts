/**
 * Calico installed by the Tigera operator, on the real test bed with the operator's CRDs and the stand-in for its
 * pool controller (test/support/tigeraPoolControllerStandIn.ts says why a stand-in and what it follows):
 * - the manifest path's own writes are undone: the old pool's `disabled: true` is put back to enabled, and the
 *   old pool deleted by hand comes back;
 * - discovery sees the Installation, and the plan takes the operator path, or refuses before any change when the
 *   Calico API server is not up (the operator could not create the new pool);
 * - a step whose Installation edit the operator cannot carry out fails with the operator's own reason;
 * - the old pool's deletion refuses while the Installation still lists it.
 * The operator path end to end, through the real engine, is test/e2e/calicoPaths.test.ts.
 */
import { strict as assert } from "assert";
import { CustomObjectsApi, KubeConfig, KubernetesObjectApi, PatchStrategy } from "@kubernetes/client-node";
import { calicoOperatorReconciledProvider } from "../../dynamic-providers/calicoOperatorReconciled";
import { calicoPoolRemovalProvider } from "../../dynamic-providers/calicoPoolRemoval";
import { disabledPoolPatch } from "../../lib/podNetwork/calicoPool";
import { calicoPoolPlan, calicoPoolRefusals } from "../../lib/plan/calicoPools";
import { discoverInventory } from "../../lib/plan/discovery";
import { useTestCluster } from "../testbed/fixture";
import { installCalicoCrds } from "../support/calicoCrds";
import { eventually, installOperator, OperatorInstall } from "../support/tigeraOperatorFixture";

const CALICO = { group: "crd.projectcalico.org", version: "v1" };
const TIGERA = { group: "operator.tigera.io", version: "v1" };
const OLD = "10.244.0.0/16";
const NEW = "10.48.0.0/16";
const OLD_ENTRY = { name: "default-ipv4-ippool", cidr: OLD, blockSize: 26, encapsulation: "IPIP", natOutgoing: "Enabled", nodeSelector: "all()", assignmentMode: "Automatic" };

describe("Calico under the Tigera operator (pool-controller stand-in) on the test bed", function () {
  this.timeout(120_000);
  const cluster = useTestCluster({ serviceCidr: "10.96.0.0/12", podCidr: OLD, controllerManager: false });
  const kc = () => cluster().kubeConfig();
  const custom = () => kc().makeApiClient(CustomObjectsApi);
  const pool = (name: string) => custom().getClusterCustomObject({ ...CALICO, plural: "ippools", name }).then((p) => p as { metadata: { labels?: Record<string, string> }; spec: Record<string, unknown> }, () => undefined);
  let operator: OperatorInstall | undefined;

  before(async () => {
    await installCalicoCrds(kc());
  });

  beforeEach(async () => {
    // The operator made the first pool at install time (through v1: no pool existed yet).
    await custom().createClusterCustomObject({ ...CALICO, plural: "ippools", body: { apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name: "default-ipv4-ippool" }, spec: { cidr: OLD, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()" } } });
  });

  afterEach(async () => {
    await operator?.remove();
    operator = undefined;
    for (const p of ((await custom().listClusterCustomObject({ ...CALICO, plural: "ippools" })) as { items: { metadata: { name: string } }[] }).items) {
      await custom().deleteClusterCustomObject({ ...CALICO, plural: "ippools", name: p.metadata.name });
    }
  });

  it("fights the manifest path: the old pool's disabled: true is put back, and the old pool deleted by hand comes back", async () => {
    operator = await installOperator(kc(), { pools: [OLD_ENTRY], apiServerReady: true });
    // What CalicoIPPool's disable-old step applies (server-side apply, force).
    await KubernetesObjectApi.makeApiClient(kc()).patch(disabledPoolPatch("default-ipv4-ippool"), undefined, undefined, "pulumi-kubernetes-test", true, PatchStrategy.ServerSideApply);
    assert.equal((await pool("default-ipv4-ippool"))!.spec.disabled, true, "the manifest path's write landed");
    await eventually("the operator to re-enable the old pool", async () => (await pool("default-ipv4-ippool"))?.spec.disabled !== true);
    assert.ok(operator.standIn.actions.includes("update default-ipv4-ippool"));

    // What CalicoPoolRemoval does once its checks pass.
    await custom().deleteClusterCustomObject({ ...CALICO, plural: "ippools", name: "default-ipv4-ippool" });
    await eventually("the old pool to come back", async () => (await pool("default-ipv4-ippool")) !== undefined);
    const back = (await pool("default-ipv4-ippool"))!;
    assert.equal(back.spec.cidr, OLD);
    assert.equal(back.metadata.labels?.["app.kubernetes.io/managed-by"], "tigera-operator");
    assert.ok(operator.standIn.actions.includes("create default-ipv4-ippool"));
  });

  it("discovery sees the Installation; the plan takes the operator path, and refuses while the Calico API server is not Ready", async () => {
    operator = await installOperator(kc(), { pools: [OLD_ENTRY], apiServerReady: false });
    const inventory = await discoverInventory(kc());
    // The Installation CRD's own default fills disableBGPExport.
    assert.deepEqual(inventory.cni.calicoOperator, { ipPools: [{ ...OLD_ENTRY, disableBGPExport: false }], apiServerState: "", v3Served: false });
    const plan = calicoPoolPlan(inventory.cni, { from: OLD, to: NEW });
    assert.equal(plan.management, "operator");
    assert.deepEqual(calicoPoolRefusals(inventory.cni, { from: OLD, to: NEW }), [
      "the Tigera operator changes pools only through the Calico API server (projectcalico.org/v3), and APIServer default has no status yet; install or fix it (kubectl get tigerastatus apiserver) before the run",
    ]);
  });

  it("a step the operator cannot carry out fails with the operator's reason; the old pool is not deleted while still listed", async () => {
    operator = await installOperator(kc(), { pools: [OLD_ENTRY], apiServerReady: false });
    const kubeconfig = kc().exportConfig();
    // The edit CalicoOperatorPools makes first; without the v3 API the operator cannot create the pool.
    const installation = (await custom().getClusterCustomObject({ ...TIGERA, plural: "installations", name: "default" })) as { spec: { calicoNetwork: { ipPools: unknown[] } } };
    installation.spec.calicoNetwork.ipPools.push({ ...OLD_ENTRY, name: "new-pool", cidr: NEW });
    await custom().replaceClusterCustomObject({ ...TIGERA, plural: "installations", name: "default", body: installation });
    await assert.rejects(
      calicoOperatorReconciledProvider.create!({ kubeconfig, purpose: "the new pool", expect: [{ cidr: OLD }, { cidr: NEW }], gone: [], timeoutSeconds: 3 }),
      /the Tigera operator has not carried out the new pool after 3 s: no IPPool in 10\.48\.0\.0\/16 yet; TigeraStatus ippools is Degraded \(ResourceNotReady: Unable to modify IP pools while Calico API server is unavailable\)/,
    );

    const removal = (step: "check" | "delete") => calicoPoolRemovalProvider.create!({ kubeconfig, poolName: "default-ipv4-ippool", poolCidr: OLD, installation: "default", step, timeoutSeconds: 1 });
    await assert.rejects(removal("check"), /still matches nodes \(nodeSelector "all\(\)"\)/);
    const closed = (await pool("default-ipv4-ippool"))!;
    // Closed the way the operator writes it from the Installation.
    await custom().replaceClusterCustomObject({ ...CALICO, plural: "ippools", name: "default-ipv4-ippool", body: { ...closed, spec: { ...closed.spec, nodeSelector: "!all()" } } });
    assert.equal((await removal("check")).outs!.result, "drained");
    await assert.rejects(removal("delete"), /is still listed in Installation default \(as default-ipv4-ippool\), so the operator would re-create it; nothing was deleted/);
    assert.ok(await pool("default-ipv4-ippool"), "the pool is still there");
  });
});
