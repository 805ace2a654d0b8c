/** The pure rules of a node move (lib/nodeMove): backup/restore, drain decisions, rejoin checks, waves, parsing. */
import { strict as assert } from "assert";
import { BACKUP_RECORD_VERSION, NodeBackupRecord, backupConfigMapName, decodeBackup, encodeBackup, laterPhase } from "../../../lib/nodeMove/backupRecord";
import { calicoObjectsToRelease } from "../../../lib/nodeMove/calicoIpam";
import { PodLike, decideDrain, pdbsBlocking, planDrain, selectorMatches } from "../../../lib/nodeMove/drainDecision";
import { parseJoinCommand } from "../../../lib/nodeMove/joinCommand";
import { NodeMetadata, metadataDifferences, metadataMergePatch, metadataOf, restoredMetadata } from "../../../lib/nodeMove/nodeMetadata";
import { podCidrAction, podsBack, podsOutsideSubnet, registrationState, staleDaemonSetPods } from "../../../lib/nodeMove/rejoinChecks";
import { rolloutEstimate, rolloutWaves } from "../../../lib/nodeMove/rolloutWaves";
import { NodeMove } from "../../../lib/plan/planModel";

const kubeletLabels = { "kubernetes.io/hostname": "w1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64" };

/** A worker as it looked before the move: kubeadm's, the operator's and the CNI's additions on top of the kubelet's. */
const before: NodeMetadata = metadataOf({
  metadata: {
    labels: { ...kubeletLabels, "topology.kubernetes.io/zone": "z1", "example.com/tier": "db", "node-role.kubernetes.io/worker": "" },
    annotations: {
      "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      "node.alpha.kubernetes.io/ttl": "0",
      "kubeadm.alpha.kubernetes.io/cri-socket": "/run/containerd/containerd.sock",
      "projectcalico.org/IPv4Address": "192.168.1.21/24",
      "projectcalico.org/IPv4IPIPTunnelAddr": "10.244.9.1",
      "flannel.alpha.coreos.com/backend-data": "{\"VtepMAC\":\"aa:bb:cc:dd:ee:ff\"}",
      "example.com/owner": "team-data",
    },
  },
  spec: {
    taints: [
      { key: "example.com/dedicated", value: "db", effect: "NoSchedule" },
      { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" },
      { key: "example.com/drain-me", value: "", effect: "NoExecute" },
    ],
    unschedulable: false,
  },
});

/** The same node right after its kubelet registered it again. */
const fresh: NodeMetadata = metadataOf({
  metadata: { labels: { ...kubeletLabels }, annotations: { "volumes.kubernetes.io/controller-managed-attach-detach": "true" } },
  spec: { taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }] },
});

describe("lib/nodeMove nodeMetadata", () => {
  it("restores the operator's labels, annotations and taints exactly, keeping what the kubelet, KCM and the CNI own", () => {
    const restored = restoredMetadata(fresh, before);
    assert.deepEqual(restored.labels, before.labels);
    assert.deepEqual(restored.annotations, {
      "volumes.kubernetes.io/controller-managed-attach-detach": "true",
      "kubeadm.alpha.kubernetes.io/cri-socket": "/run/containerd/containerd.sock",
      "example.com/owner": "team-data",
    });
    assert.deepEqual(restored.taints, [
      { key: "example.com/dedicated", value: "db", effect: "NoSchedule" },
      { key: "example.com/drain-me", effect: "NoExecute" },
      { key: "node.kubernetes.io/not-ready", effect: "NoSchedule" },
    ]);
    assert.equal(restored.unschedulable, false);
    assert.deepEqual(metadataDifferences({ ...restored }, before), []);
  });

  it("keeps a kubelet label's fresh value and a newer kubelet's extra label, and the backup's unschedulable", () => {
    const newer = { ...fresh, labels: { ...fresh.labels, "kubernetes.io/arch": "arm64", "node.kubernetes.io/new-label": "x" } };
    const restored = restoredMetadata(newer, { ...before, unschedulable: true });
    assert.equal(restored.labels["kubernetes.io/arch"], "arm64");
    assert.equal(restored.labels["node.kubernetes.io/new-label"], "x");
    assert.equal(restored.unschedulable, true);
  });

  it("lists every difference that is left: labels, annotations, taint values, extra taints, schedulability", () => {
    const restored = restoredMetadata(fresh, before);
    const broken: NodeMetadata = {
      labels: { ...restored.labels, "example.com/tier": "web" },
      annotations: Object.fromEntries(Object.entries(restored.annotations).filter(([k]) => k !== "example.com/owner")),
      taints: [{ key: "example.com/dedicated", value: "web", effect: "NoSchedule" }, { key: "example.com/new", effect: "NoSchedule" }],
      unschedulable: true,
    };
    assert.deepEqual(metadataDifferences(broken, before), [
      { field: "label", key: "example.com/tier", expected: "db", actual: "web" },
      { field: "annotation", key: "example.com/owner", expected: "team-data", actual: undefined },
      { field: "taint", key: "example.com/dedicated:NoSchedule", expected: "db", actual: "web" },
      { field: "taint", key: "example.com/drain-me:NoExecute", expected: "", actual: undefined },
      { field: "taint", key: "example.com/new:NoSchedule", expected: undefined, actual: "" },
      { field: "unschedulable", key: "spec.unschedulable", expected: "false", actual: "true" },
    ]);
    assert.deepEqual(metadataDifferences({ ...restored, unschedulable: true }, before, { ignoreUnschedulable: true }), []);
  });

  it("builds a merge patch that removes with null, sets changed keys and replaces the taint list whole", () => {
    const patch = metadataMergePatch(
      { labels: { a: "1", gone: "x" }, annotations: { same: "s" }, taints: [], unschedulable: false },
      { labels: { a: "2", b: "3" }, annotations: { same: "s" }, taints: [{ key: "k", effect: "NoSchedule" }], unschedulable: true },
    );
    assert.deepEqual(patch, { metadata: { labels: { gone: null, a: "2", b: "3" }, annotations: {} }, spec: { taints: [{ key: "k", effect: "NoSchedule" }], unschedulable: true } });
  });
});

describe("lib/nodeMove backupRecord", () => {
  const record: NodeBackupRecord = {
    version: BACKUP_RECORD_VERSION, runId: "2024-05-01", node: "w1", nodeUid: "uid-1", takenAt: "2024-05-01T10:00:00Z",
    metadata: before, oldPodCIDR: "10.244.3.0/24", plannedPodCIDR: "10.48.3.0/24", daemonSets: ["kube-system/kube-proxy"], daemonSetPodUids: ["p1"],
  };

  it("names the ConfigMap by run and node, stably, within the 253-character DNS-subdomain limit", () => {
    assert.match(backupConfigMapName("2024-05-01", "w1"), /^cidr-migration-backup-w1-[0-9a-f]{8}$/);
    assert.equal(backupConfigMapName("2024-05-01", "w1"), backupConfigMapName("2024-05-01", "w1"));
    assert.notEqual(backupConfigMapName("2024-05-01", "w1"), backupConfigMapName("2024-06-01", "w1"));
    const long = `${"a".repeat(120)}.${"b".repeat(132)}`;
    const name = backupConfigMapName("r", long);
    assert.ok(name.length <= 253, `${name.length}`);
    assert.match(name, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    assert.notEqual(name, backupConfigMapName("r", `${long.slice(0, -1)}c`));
  });

  it("round-trips a record and refuses one of another run or node, or an incomplete one, naming the ConfigMap", () => {
    const data = encodeBackup(record, "backed-up");
    assert.deepEqual(decodeBackup(data, "cm", { runId: "2024-05-01", node: "w1" }), { record, phase: "backed-up" });
    assert.throws(() => decodeBackup(data, "cm", { runId: "other", node: "w1" }), /^UserError: ConfigMap kube-system\/cm: belongs to run "2024-05-01" node "w1", expected run "other" node "w1"; it holds the node's pre-migration labels and taints, so do not delete it/);
    assert.throws(() => decodeBackup({ ...data, phase: "done" }, "cm", { runId: "2024-05-01", node: "w1" }), /phase "done" is not one of backed-up, node-deleted, restored/);
    assert.throws(() => decodeBackup({ "backup.json": "{" }, "cm", { runId: "2024-05-01", node: "w1" }), /backup\.json is not JSON/);
    const partial = JSON.stringify({ ...record, metadata: { labels: {} } });
    assert.throws(() => decodeBackup({ "backup.json": partial, phase: "backed-up" }, "cm", { runId: "2024-05-01", node: "w1" }), /is incomplete/);
  });

  it("moves phases only forward", () => {
    assert.equal(laterPhase("restored", "backed-up"), "restored");
    assert.equal(laterPhase("backed-up", "node-deleted"), "node-deleted");
  });
});

const pod = (name: string, extra: PodLike = {}): PodLike => ({
  ...extra,
  metadata: { namespace: "ns", name, uid: `uid-${name}`, labels: { app: name }, ...extra.metadata },
  spec: { ...extra.spec },
  status: { phase: "Running", ...extra.status },
});
const ownedBy = (kind: string, name: string) => ({ ownerReferences: [{ kind, name, controller: true }] });

describe("lib/nodeMove drainDecision", () => {
  it("follows kubectl drain --ignore-daemonsets --delete-emptydir-data, and never forces a bare pod", () => {
    assert.deepEqual(decideDrain(pod("m", { metadata: { annotations: { "kubernetes.io/config.mirror": "x" } } })), { action: "skip", reason: "mirror pod of a static pod" });
    assert.deepEqual(decideDrain(pod("d", { metadata: ownedBy("DaemonSet", "kube-proxy") })), { action: "skip", reason: "DaemonSet kube-proxy", daemonSet: "ns/kube-proxy" });
    assert.equal(decideDrain(pod("t", { metadata: { ...ownedBy("ReplicaSet", "web"), deletionTimestamp: "2024-05-01T10:00:00Z" } })).action, "wait");
    assert.deepEqual(decideDrain(pod("j", { metadata: ownedBy("Job", "batch"), status: { phase: "Succeeded" } })), { action: "evict", reason: "finished (Succeeded)" });
    assert.deepEqual(decideDrain(pod("e", { metadata: ownedBy("ReplicaSet", "web"), spec: { volumes: [{ emptyDir: {} }] } })), { action: "evict", reason: "ReplicaSet web (emptyDir data is lost)" });
    assert.deepEqual(decideDrain(pod("s", { metadata: ownedBy("StatefulSet", "db") })), { action: "evict", reason: "StatefulSet db" });
    assert.deepEqual(decideDrain(pod("bare")), { action: "refuse", reason: "no controller would re-create it" });
    assert.equal(decideDrain(pod("bare"), "evict").action, "evict");
    // an owner that is not the controller does not count
    assert.equal(decideDrain(pod("o", { metadata: { ownerReferences: [{ kind: "ReplicaSet", name: "x", controller: false }] } })).action, "refuse");
  });

  it("plans the drain and records the node's DaemonSets and their pods", () => {
    const plan = planDrain([
      pod("a", { metadata: ownedBy("ReplicaSet", "web") }),
      pod("ds1", { metadata: ownedBy("DaemonSet", "z-agent") }),
      pod("ds2", { metadata: ownedBy("DaemonSet", "calico-node") }),
      pod("bare"),
    ]);
    assert.deepEqual(plan.evict.map((p) => p.metadata!.name), ["a"]);
    assert.deepEqual(plan.refused, [{ pod: "ns/bare", reason: "no controller would re-create it" }]);
    assert.deepEqual(plan.daemonSets, ["ns/calico-node", "ns/z-agent"]);
    assert.deepEqual(plan.daemonSetPodUids, ["uid-ds1", "uid-ds2"]);
  });

  it("matches label selectors as Kubernetes does and names the budgets covering a pod", () => {
    const labels = { app: "web", tier: "front" };
    assert.equal(selectorMatches({}, labels), true);
    assert.equal(selectorMatches(undefined, labels), false);
    assert.equal(selectorMatches({ matchLabels: { app: "web" }, matchExpressions: [{ key: "tier", operator: "In", values: ["front", "back"] }] }, labels), true);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "tier", operator: "NotIn", values: ["front"] }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "zone", operator: "Exists" }] }, labels), false);
    assert.equal(selectorMatches({ matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] }, labels), true);
    const pdbs = [
      { metadata: { namespace: "ns", name: "web-pdb" }, spec: { selector: { matchLabels: { app: "web" } } }, status: { disruptionsAllowed: 0 } },
      { metadata: { namespace: "other", name: "web-pdb" }, spec: { selector: { matchLabels: { app: "web" } } } },
      { metadata: { namespace: "ns", name: "db-pdb" }, spec: { selector: { matchLabels: { app: "db" } } } },
    ];
    assert.deepEqual(pdbsBlocking(pod("cache"), pdbs), []);
    assert.deepEqual(pdbsBlocking(pod("x", { metadata: { labels: labels } }), pdbs), ["PodDisruptionBudget ns/web-pdb (0 disruptions allowed)"]);
  });
});

describe("lib/nodeMove rejoinChecks", () => {
  it("tells the re-registered Node from the old object by uid", () => {
    assert.equal(registrationState(undefined, "u1"), "absent");
    assert.equal(registrationState({ metadata: { uid: "u1" } }, "u1"), "old-object");
    assert.equal(registrationState({ metadata: { uid: "u2" } }, "u1"), "re-registered");
  });

  it("assigns the planned podCIDR to an empty Node, keeps a matching one, refuses another naming both", () => {
    assert.deepEqual(podCidrAction("w1", { spec: {} }, "10.48.3.0/24"), { action: "assign", podCIDRs: ["10.48.3.0/24"] });
    assert.deepEqual(podCidrAction("w1", { spec: { podCIDR: "10.48.3.0/24" } }, "10.48.3.0/24"), { action: "keep" });
    const refused = podCidrAction("w1", { spec: { podCIDR: "10.48.7.0/24" } }, "10.48.3.0/24");
    assert.equal(refused.action, "fail");
    assert.match((refused as { message: string }).message, /^Node w1 came back with podCIDR 10\.48\.7\.0\/24, planned 10\.48\.3\.0\/24: kube-controller-manager allocated it \(run it with --allocate-node-cidrs=false during the node rollout\)/);
  });

  it("a dual-stack node: both planned subnets assigned at once, kept when both match, refused when one differs (issue 17)", () => {
    const pair = "10.48.3.0/24,fd00:10:48:3::/64";
    assert.deepEqual(podCidrAction("w1", { spec: {} }, pair), { action: "assign", podCIDRs: ["10.48.3.0/24", "fd00:10:48:3::/64"] });
    assert.deepEqual(podCidrAction("w1", { spec: { podCIDR: "10.48.3.0/24", podCIDRs: ["10.48.3.0/24", "fd00:10:48:3::/64"] } }, pair), { action: "keep" });
    const refused = podCidrAction("w1", { spec: { podCIDR: "10.48.3.0/24", podCIDRs: ["10.48.3.0/24", "fd00:10:48:9::/64"] } }, pair);
    assert.match((refused as { message: string }).message, /came back with podCIDR 10\.48\.3\.0\/24,fd00:10:48:9::\/64, planned 10\.48\.3\.0\/24,fd00:10:48:3::\/64/);
    // a pod's address is held to its own family's subnet
    const v6 = pod("agent-v6", { status: { podIP: "fd00:10:244:3::5" } });
    const v6New = pod("agent-v6-new", { status: { podIP: "fd00:10:48:3::5" } });
    assert.deepEqual(podsOutsideSubnet([v6, v6New], pair), [{ pod: "ns/agent-v6", podIP: "fd00:10:244:3::5" }]);
  });

  it("finds old-network pods, ignoring host-network and terminating ones, and says when the node's pods are back", () => {
    const ready = { phase: "Running", conditions: [{ type: "Ready", status: "True" }] };
    const pods = [
      pod("agent-old", { metadata: { ...ownedBy("DaemonSet", "agent"), uid: "old" }, status: { ...ready, podIP: "10.244.3.5" } }),
      pod("proxy", { metadata: ownedBy("DaemonSet", "kube-proxy"), spec: { hostNetwork: true }, status: { ...ready, podIP: "192.168.1.21" } }),
      pod("gone", { metadata: { ...ownedBy("DaemonSet", "agent"), deletionTimestamp: "2024-05-01T10:00:00Z" }, status: { podIP: "10.244.3.6" } }),
    ];
    assert.deepEqual(podsOutsideSubnet(pods, "10.48.3.0/24"), [{ pod: "ns/agent-old", podIP: "10.244.3.5" }]);
    assert.deepEqual(staleDaemonSetPods(pods, [], "10.48.3.0/24").map((p) => p.metadata!.name), ["agent-old"]);
    // recorded at drain time: replaced even with a host-network address
    assert.deepEqual(staleDaemonSetPods(pods, ["uid-proxy"], "10.48.3.0/24").map((p) => p.metadata!.name), ["agent-old", "proxy"]);
    assert.deepEqual(podsBack(pods, ["ns/agent", "ns/kube-proxy"], "10.48.3.0/24"), { done: false, missingDaemonSets: [], outside: [{ pod: "ns/agent-old", podIP: "10.244.3.5" }] });
    const moved = [pod("agent-new", { metadata: ownedBy("DaemonSet", "agent"), status: { ...ready, podIP: "10.48.3.2" } }), pods[1]];
    assert.deepEqual(podsBack(moved, ["ns/agent", "ns/kube-proxy"], "10.48.3.0/24"), { done: true, missingDaemonSets: [], outside: [] });
    const notReady = [pod("agent-new", { metadata: ownedBy("DaemonSet", "agent"), status: { phase: "Pending", podIP: "10.48.3.2" } })];
    assert.deepEqual(podsBack(notReady, ["ns/agent"], "10.48.3.0/24").missingDaemonSets, ["ns/agent"]);
  });
});

const move = (name: string, batch: number, extra: Partial<NodeMove> = {}): NodeMove => ({ name, role: "worker", newPodCIDR: "10.48.0.0/24", action: "move", batch, canary: false, ...extra });

describe("lib/nodeMove rolloutWaves", () => {
  it("turns plan batches into ordered waves, leaving unchanged nodes out", () => {
    const waves = rolloutWaves([move("w3", 2), move("w1", 0, { canary: true }), move("cp1", 1, { role: "control-plane" }), move("w4", 2), move("keep", -1, { action: "unchanged" })]);
    assert.deepEqual(waves.map((w) => [w.index, w.nodes.map((n) => n.name), w.canary, w.controlPlane]), [[0, ["w1"], true, false], [1, ["cp1"], false, true], [2, ["w3", "w4"], false, false]]);
  });

  it("refuses a canary or control-plane node sharing a wave, a late canary, and a node planned twice", () => {
    assert.throws(() => rolloutWaves([move("w1", 0, { canary: true }), move("w2", 0)]), /^UserError: node rollout batch 0 holds w1, w2: the canary goes alone; re-run the planner$/);
    assert.throws(() => rolloutWaves([move("cp1", 0, { role: "control-plane" }), move("cp2", 0, { role: "control-plane" })]), /control-plane nodes go one at a time \(etcd quorum\)/);
    assert.throws(() => rolloutWaves([move("w2", 0), move("w1", 1, { canary: true })]), /the canary w1 is in wave 1, it must be first/);
    assert.throws(() => rolloutWaves([move("w1", 0), move("w1", 1)]), /node w1 is planned twice/);
    assert.throws(() => rolloutWaves([move("w1", 0.5)]), /batch 0\.5 is not a wave number/);
  });

  it("estimates a wave by its slowest node and compares with the manual runbook", () => {
    const waves = rolloutWaves([move("w1", 0, { canary: true }), move("w2", 1), move("w3", 1)]);
    const e = rolloutEstimate(waves, (n) => (n === "w3" ? 300 : 240));
    assert.equal(e.totalSeconds, 540);
    assert.deepEqual(e.manualMinutes, { min: 15, max: 24 });
    assert.equal(e.summary, "node rollout: 3 node(s) in 2 wave(s), estimated 9 min (w1 4 min, w2 4 min, w3 5 min); the manual runbook takes 15-24 min (5-8 min per node, one after another)");
  });
});

describe("lib/nodeMove joinCommand", () => {
  const hash = `sha256:${"0f".repeat(32)}`;
  it("reads the join line after warnings, in both flag forms, and keeps the token secret", () => {
    const parsed = parseJoinCommand(`W0501 warning line\nkubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash ${hash} \n`);
    assert.equal(parsed.endpoint, "10.0.0.10:6443");
    assert.equal(parsed.caCertHash, hash);
    assert.equal(parsed.token.reveal("t"), "abcdef.0123456789abcdef");
    assert.equal(JSON.stringify(parsed), `{"endpoint":"10.0.0.10:6443","token":"[secret]","caCertHash":"${hash}"}`);
    assert.equal(parseJoinCommand(`kubeadm join cp.example:6443 --token=abcdef.0123456789abcdef --discovery-token-ca-cert-hash=${hash}`).endpoint, "cp.example:6443");
  });

  it("fails without echoing what it read", () => {
    assert.throws(() => parseJoinCommand("error: abcdef.0123456789abcdef"), (err: Error) => /printed no `kubeadm join` line/.test(err.message) && !err.message.includes("abcdef"));
    assert.throws(() => parseJoinCommand("kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef"), (err: Error) => /no --discovery-token-ca-cert-hash/.test(err.message) && !err.message.includes("abcdef"));
  });
});

describe("lib/nodeMove calicoIpam and subnet", () => {
  it("releases only the node's blocks and affinities inside the old pool", () => {
    const blocks = [
      { metadata: { name: "b1" }, spec: { cidr: "10.244.3.0/26", affinity: "host:w1" } },
      { metadata: { name: "b2" }, spec: { cidr: "10.48.3.0/26", affinity: "host:w1" } },
      { metadata: { name: "b3" }, spec: { cidr: "10.244.4.0/26", affinity: "host:w2" } },
      { metadata: { name: "b4" }, spec: { cidr: "10.244.5.0/26", affinity: "host:w1x" } },
    ];
    const affinities = [
      { metadata: { name: "a1" }, spec: { node: "w1", cidr: "10.244.3.0/26" } },
      { metadata: { name: "a2" }, spec: { node: "w1", cidr: "10.48.3.0/26" } },
      { metadata: { name: "a3" }, spec: { node: "w2", cidr: "10.244.4.0/26" } },
    ];
    assert.deepEqual(calicoObjectsToRelease("w1", ["10.244.0.0/16"], blocks, affinities), { blocks: ["b1"], affinities: ["a1"] });
  });

});
