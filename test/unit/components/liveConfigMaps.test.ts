import { strict as assert } from "assert";
import { checkLiveKeyEdits, liveConfigMap, useConfigMapReader } from "../../../components/liveConfigMaps";
import { clusterConfigEdits } from "../../../components/clusterConfig";
import { kubeProxyConfigEdit } from "../../../components/kubeProxyConfig";
import { UserError } from "../../../lib/config/errors";
import { liveConfigMapKey } from "../../../components/systemObjectPatch";
import { captureGraph, outputValue } from "../../support/pulumiMocks";

describe("live ConfigMaps", () => {
  it("reads each ConfigMap once per run, however many components read it; a new reader starts afresh", async () => {
    await captureGraph(() => undefined);
    const reads: string[] = [];
    const reader = async (namespace: string, name: string) => { reads.push(`${namespace}/${name}`); return { ClusterConfiguration: "text" }; };
    useConfigMapReader(reader);
    const ref = { namespace: "kube-system", configMap: "kubeadm-config", key: "ClusterConfiguration" };
    assert.deepEqual(await Promise.all([outputValue(liveConfigMapKey(ref)), outputValue(liveConfigMapKey(ref))]), ["text", "text"]);
    assert.deepEqual(reads, ["kube-system/kubeadm-config"]);
    useConfigMapReader(reader);
    await outputValue(liveConfigMap("kube-system", "kubeadm-config").data);
    assert.deepEqual(reads, ["kube-system/kubeadm-config", "kube-system/kubeadm-config"]);
  });

  it("checkLiveKeyEdits runs the graph's edits on the live objects before any resource: a missing object or key, or an edit refusing what it finds, is one readable error", async () => {
    await captureGraph(() => undefined);
    const objects: Record<string, Record<string, string>> = {
      "kube-system/kube-proxy": { "config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nclusterCIDR: 10.244.0.0/16\n" },
      "kube-system/kubeadm-config": { ClusterConfiguration: "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/16\n" },
    };
    const reads: string[] = [];
    const read = async (namespace: string, name: string) => { reads.push(`${namespace}/${name}`); return objects[`${namespace}/${name}`]; };
    const kubeProxy = kubeProxyConfigEdit({ podCidr: "10.48.0.0/16,fd00:10:48::/56" });
    const [kubeadm, kubelet] = clusterConfigEdits({ podCidr: "10.48.0.0/16", serviceCidr: "10.112.0.0/12", clusterDns: ["10.112.0.10"] });
    await checkLiveKeyEdits(read, [kubeProxy, kubeadm]);
    assert.deepEqual(reads, ["kube-system/kube-proxy", "kube-system/kubeadm-config"]);

    await assert.rejects(checkLiveKeyEdits(read, [kubelet]), /ConfigMap kube-system\/kubelet-config does not exist; .*kubectl -n kube-system get cm kubelet-config/);
    objects["kube-system/kube-proxy"] = { "kubeconfig.conf": "x" };
    await assert.rejects(checkLiveKeyEdits(read, [kubeProxy]), /ConfigMap kube-system\/kube-proxy has no key "config.conf"/);
    objects["kube-system/kube-proxy"] = { "config.conf": "kind: KubeSchedulerConfiguration\n" };
    await assert.rejects(checkLiveKeyEdits(read, [kubeProxy]), (e: unknown) => e instanceof UserError && /kube-system\/kube-proxy config.conf/.test(e.message));
  });
});
