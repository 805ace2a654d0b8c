// The API side of a control-plane node's address change (issue 16), against a stand-in for the API that replays what
// the node lab showed: a Node that reports its new InternalIP, a DaemonSet pod left at the old address, and a static
// pod whose mirror its kubelet deletes and makes again after it first reported. The real thing runs on the node lab
// (test/lab/controlPlaneAddress.test.ts).
import { strict as assert } from "assert";
import { V1Pod } from "@kubernetes/client-node";
import { addressFollow, addressReported, STABLE_MS } from "../../../lib/nodeMove/apiSteps/addressFollow";
import { Clients, StepInputs, StepRun } from "../../../lib/nodeMove/apiSteps/stepRun";

const OLD = "192.168.1.13";
const NEW = "192.168.1.113";
const pod = (name: string, ip: string | undefined, owner: "mirror" | "DaemonSet" | "Deployment"): V1Pod => ({
  metadata: {
    namespace: "kube-system",
    name,
    ...(owner === "mirror" ? { annotations: { "kubernetes.io/config.mirror": "hash" } } : { ownerReferences: [{ apiVersion: "apps/v1", kind: owner === "DaemonSet" ? "DaemonSet" : "ReplicaSet", name: "x", uid: "u", controller: true }] }),
  },
  spec: { hostNetwork: true, nodeName: "cp-3", containers: [] },
  status: ip ? { podIP: ip, podIPs: [{ ip }] } : {},
});

/** The API: the Node at `nodeIp`, and the pods `podsAt(poll)` returns on each listing. */
function api(podsAt: (poll: number) => V1Pod[], nodeIp = NEW) {
  let polls = 0;
  const deleted: string[] = [];
  const core = {
    readNode: async () => ({ status: { addresses: [{ type: "InternalIP", address: nodeIp }] } }),
    listPodForAllNamespaces: async () => ({ items: podsAt(polls++).filter((p) => !deleted.includes(p.metadata!.name!)) }),
    deleteNamespacedPod: async ({ name }: { name: string }) => void deleted.push(name),
  };
  return { clients: { core, custom: {}, kc: {}, server: "https://cp" } as unknown as Clients, deleted, polls: () => polls };
}

const inputs = (step: StepInputs["step"], timeoutSeconds = 60): StepInputs => ({ step, kubeconfig: "", node: "cp-3", runId: "r", version: "1", internalIP: NEW, oldInternalIP: OLD, rejoinTimeoutSeconds: timeoutSeconds });

describe("lib/nodeMove addressFollow (a control-plane node's address change, issue 16)", function () {
  this.timeout(60_000);

  it("address-reported: done once the Node reports the new InternalIP; fails naming what it reports", async () => {
    const moved = api(() => []);
    assert.equal((await addressReported(new StepRun(moved.clients, inputs("address-reported"), () => {}))).internalIP, NEW);
    const stuck = api(() => [], OLD);
    await assert.rejects(addressReported(new StepRun(stuck.clients, inputs("address-reported", 1), () => {})), /the kubelet does not report InternalIP 192\.168\.1\.113 \(it reports 192\.168\.1\.13\)/);
  });

  it("address-follow: replaces the DaemonSet pods at the old address, leaves another owner's, and waits out a static pod's mirror made again", async () => {
    const scheduler = (poll: number) => (poll < 4 ? [pod("kube-scheduler-cp-3", NEW, "mirror")] : poll < 8 ? [] : poll < 12 ? [pod("kube-scheduler-cp-3", undefined, "mirror")] : [pod("kube-scheduler-cp-3", NEW, "mirror")]);
    const lab = api((poll) => [
      pod("etcd-cp-3", NEW, "mirror"),
      ...scheduler(poll),
      poll === 0 ? pod("kube-proxy-old", OLD, "DaemonSet") : pod("kube-proxy-new", NEW, "DaemonSet"),
      pod("node-exporter-abc", OLD, "Deployment"),
    ]);
    const logs: string[] = [];
    const started = Date.now();
    const out = await addressFollow(new StepRun(lab.clients, inputs("address-follow"), (line) => logs.push(line)));
    assert.deepEqual(lab.deleted, ["kube-proxy-old"]);
    assert.deepEqual(out.replacedPods, ["kube-system/kube-proxy-old"]);
    assert.deepEqual(out.leftAtOldAddress, ["kube-system/node-exporter-abc"]);
    assert.ok(lab.polls() > 12, "it waited through the mirror pod's absence and its address-less return");
    assert.ok(Date.now() - started >= STABLE_MS, "and then for the pods to stay at the new address");
    assert.ok(logs.some((l) => /left at 192\.168\.1\.13 \(neither a DaemonSet's nor a static pod/.test(l)));
  });

  it("address-follow: a static pod still at the old address fails the step with what to do", async () => {
    const stuck = api(() => [pod("kube-scheduler-cp-3", OLD, "mirror")]);
    await assert.rejects(addressFollow(new StepRun(stuck.clients, inputs("address-follow", 1), () => {})),
      /not at 192\.168\.1\.113: kube-system\/kube-scheduler-cp-3 \(192\.168\.1\.13\); a static pod keeps the address it started with: restart kube-system\/kube-scheduler-cp-3 as a new pod by changing its manifest in \/etc\/kubernetes\/manifests \(an annotation such as cidr-migration\.io\/node-address: 192\.168\.1\.113,/);
    assert.deepEqual(stuck.deleted, [], "a mirror pod is never deleted");
  });
});
