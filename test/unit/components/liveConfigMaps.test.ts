import { strict as assert } from "assert";
import { liveConfigMap, useConfigMapReader } from "../../../components/liveConfigMaps";
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
});
