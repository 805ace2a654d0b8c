// flannel as older manifests installed it (before v0.20: ConfigMap kube-system/kube-flannel-cfg, DaemonSet
// kube-flannel-ds-amd64), on a real control plane: discovery finds where it is, the plan names that DaemonSet, and
// index.ts patches and restarts what is there (under mocks, for the graph's shape). The objects are the current
// official manifest's (test/fixtures/components), moved to kube-system and renamed as those releases had them.
import * as assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, V1ConfigMap, V1DaemonSet } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { validateConfig } from "../../lib/config/config";
import { readStackFile } from "../../lib/config/stackFile";
import { discoverInventory } from "../../lib/plan/discovery";
import { buildPlan } from "../../lib/plan/plan";
import { REPO } from "../support/cli";
import { programGraph } from "../support/programGraph";
import { useTestCluster } from "../testbed/fixture";
import { OLD_NODE_CIDR_MASK_SIZE, OLD_POD_CIDR, OLD_SERVICE_CIDR, seedWorkload } from "../testbed/seed";

const MANIFEST = parseAllDocuments(fs.readFileSync(path.join(REPO, "test", "fixtures", "components", "kube-flannel-official-manifest-with-kube-flannel-cfg.yml"), "utf8")).map((d) => d.toJS());
const OLD_DAEMONSET = "kube-flannel-ds-amd64";

function olderInstall(): { configMap: V1ConfigMap; daemonSet: V1DaemonSet } {
  const configMap = MANIFEST.find((o) => o?.kind === "ConfigMap") as V1ConfigMap;
  const daemonSet = MANIFEST.find((o) => o?.kind === "DaemonSet") as V1DaemonSet;
  return {
    configMap: { ...configMap, metadata: { ...configMap.metadata, namespace: "kube-system" } },
    daemonSet: { ...daemonSet, metadata: { ...daemonSet.metadata, namespace: "kube-system", name: OLD_DAEMONSET }, spec: { ...daemonSet.spec!, template: { ...daemonSet.spec!.template, spec: { ...daemonSet.spec!.template.spec!, serviceAccountName: "default" } } } },
  };
}

describe("flannel in kube-system, as older manifests installed it", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, nodeMaskSize: OLD_NODE_CIDR_MASK_SIZE });
  let values: Record<string, unknown>;

  before(async function () {
    const kc = cluster().kubeConfig();
    await seedWorkload(kc);
    // a flannel cluster has no Calico pool
    await kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: "crd.projectcalico.org", version: "v1", plural: "ippools", name: "default-ipv4-ippool" });
    const { configMap, daemonSet } = olderInstall();
    await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: "kube-system", body: configMap });
    await kc.makeApiClient(AppsV1Api).createNamespacedDaemonSet({ namespace: "kube-system", body: daemonSet });
    values = {
      ...readStackFile(path.join(REPO, "Pulumi.sandbox.yaml")).values,
      kubeconfig: cluster().kubeconfigPath,
      etcd: { endpoints: [cluster().etcd.endpoint] },
      ssh: { user: "root", privateKey: generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString() },
    };
  });

  it("discovery finds its namespace and the DaemonSet that mounts kube-flannel-cfg; the plan restarts that one", async () => {
    const inventory = await discoverInventory(cluster().kubeConfig());
    assert.equal(inventory.cni.detected, "flannel");
    assert.equal(inventory.cni.flannelNamespace, "kube-system");
    assert.equal(inventory.cni.flannelDaemonSet, OLD_DAEMONSET);
    assert.equal(inventory.cni.flannelNetwork, "10.244.0.0/16");
    const plan = buildPlan(validateConfig({ values: { ...values, ssh: { user: "root" } } }, { inventory }), inventory);
    const flannelSteps = plan.phases.flatMap((p) => p.steps).filter((s) => s.id.includes("flannel")).map((s) => `${s.action} ${s.target.split(" net-conf.json")[0]}`);
    assert.deepEqual(flannelSteps, [
      "patch-configmap ConfigMap kube-system/kube-flannel-cfg", `restart-daemonset DaemonSet kube-system/${OLD_DAEMONSET}`,
      "patch-configmap ConfigMap kube-system/kube-flannel-cfg", `restart-daemonset DaemonSet kube-system/${OLD_DAEMONSET}`,
    ]);
  });

  it("the program patches kube-system/kube-flannel-cfg and restarts the DaemonSet there, both times", async () => {
    const graph = await programGraph(cluster().kubeConfig(), values);
    const flannelPatches = graph.resources.filter((r) => r.type === "kubernetes:core/v1:ConfigMapPatch" && (r.inputs.metadata as { name?: string })?.name === "kube-flannel-cfg");
    assert.equal(flannelPatches.length, 2, "the transition Network and the final one");
    for (const p of flannelPatches) assert.equal((p.inputs.metadata as { namespace?: string }).namespace, "kube-system");
    const restarts = graph.resources.filter((r) => r.type === "kubernetes:apps/v1:DaemonSetPatch" && /flannel/.test(r.name));
    assert.equal(restarts.length, 2);
    for (const r of restarts) assert.deepEqual([(r.inputs.metadata as { namespace?: string }).namespace, (r.inputs.metadata as { name?: string }).name], ["kube-system", OLD_DAEMONSET]);
  });
});
