/**
 * NodeRejoin's step: wait for the kubelet's re-registration, set the planned podCIDR (kube-controller-manager runs
 * with --allocate-node-cidrs=false meanwhile; on a run that changes node addresses only it keeps allocating, and the
 * step takes the subnet it gives, inside the pod range), restore the metadata exactly while still cordoned, evict the
 * DaemonSet pods left from the old Node, wait Ready, uncordon (back to the backed-up unschedulable), wait for the
 * node's DaemonSet pods to be Ready in the new subnet, and verify podCIDR and metadata.
 */
import { V1Node } from "@kubernetes/client-node";
import { describeKubeError } from "../../config/kubeClient";
import { cidrContains, familyOf, normalizeCidr } from "../../net/cidr";
import { podKey } from "../drainDecision";
import { describeDifferences, metadataDifferences, metadataMergePatch, metadataOf, restoredMetadata } from "../nodeMetadata";
import { isReady, podCidrAction, podCidrsOf, podsBack, registrationState, staleDaemonSetPods } from "../rejoinChecks";
import { evict, policyVersion } from "./eviction";
import { NodeBackupRecord } from "../backupRecord";
import { StepRun, mergePatch } from "./stepRun";

export const DEFAULT_REJOIN_TIMEOUT_SECONDS = 600;

/** What each stage of the rejoin reads: the run, its backup record, the planned podCIDR, and the wait limit. */
interface Rejoin {
  run: StepRun;
  record: NodeBackupRecord;
  planned: string;
  timeout: number;
}

export async function rejoin(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const planned = inputs.plannedPodCIDR!;
  const { record, phase } = await run.requireBackup();
  if (record.plannedPodCIDR !== planned) {
    throw new Error(`node ${inputs.node}: the backup of run "${inputs.runId}" was taken for podCIDR ${record.plannedPodCIDR}, this step plans ${planned}; re-plan or use a new snapshot.trigger`);
  }
  const r: Rejoin = { run, record, planned, timeout: inputs.rejoinTimeoutSeconds ?? DEFAULT_REJOIN_TIMEOUT_SECONDS };
  let registered = inputs.nodeKept ? await waitNodeKept(r) : await waitReregistered(r);
  if (inputs.internalIP) await waitInternalIP(run, r.timeout, inputs.internalIP);
  // from here on the node's own subnet, where its pods must come back
  if (inputs.podCidrFromController) [registered, r.planned] = await waitAllocatedPodCidr(r);
  const assigned = await assignPodCidrAndRestore(r, registered);
  const replaced = await replaceOldDaemonSetPods(r);
  await waitPodsBackInNewSubnet(r);
  await verifyRestored(r);
  await run.setPhase(phase, "restored");
  run.log(`verified: podCIDR ${r.planned}, metadata as before the move, ${record.daemonSets.length} DaemonSet pod(s) back`);
  return { podCIDR: r.planned, assignedPodCIDR: assigned, daemonSets: record.daemonSets, replacedPods: [...replaced].sort(), backupConfigMap: run.backupName(), elapsedSeconds: run.elapsedSeconds() };
}

/** 1. The kubelet's re-registration: a Node of the same name with a new uid. */
async function waitReregistered({ run, record, timeout }: Rejoin): Promise<V1Node> {
  const node = await run.within(timeout, "re-registration of the Node by its kubelet", async () => {
    const current = await run.readNode();
    const state = registrationState(current, record.nodeUid);
    if (state === "old-object") throw new Error(`node ${run.inputs.node}: the Node object from before the move still exists; the delete step must run before this one`);
    return state === "re-registered" ? current : undefined;
  }, "no Node of that name has registered; check the kubelet on the node (journalctl -u kubelet)");
  run.log("re-registered (new uid)");
  return node;
}

/** 1b. A node whose address moved (nodeAddresses): its kubelet reports the new InternalIP, and only that one of its family. */
export async function waitInternalIP(run: StepRun, timeout: number, wanted: string): Promise<void> {
  let seen: string[] = [];
  await run.within(timeout, `InternalIP ${wanted} on the Node`, async () => {
    const node = await run.readNode();
    seen = (node?.status?.addresses ?? []).filter((a) => a.type === "InternalIP").map((a) => a.address);
    const sameFamily = seen.filter((ip) => familyOf(ip) === familyOf(wanted));
    return sameFamily.length === 1 && sameFamily[0] === wanted ? true : undefined;
  }, () => `the kubelet does not report InternalIP ${wanted} (it reports ${seen.join(", ") || "none"}); check --node-ip in /var/lib/kubelet/kubeadm-flags.env and the address on the node`);
  run.log(`reports InternalIP ${wanted}`);
}

/**
 * 1c. kube-controller-manager allocating: the subnet(s) it gave the re-registered Node, each inside its family's pod
 * range (plannedPodCIDR). Returns the Node and its subnets as plannedPodCIDR lists them.
 */
async function waitAllocatedPodCidr({ run, planned, timeout }: Rejoin): Promise<[V1Node, string]> {
  const ranges = planned.split(",");
  const node = await run.within(timeout, "a podCIDR from kube-controller-manager", async () => {
    const current = await run.readNode();
    return podCidrsOf(current).length >= ranges.length ? current : undefined;
  }, `the Node has no podCIDR: kube-controller-manager gives one when it runs with --allocate-node-cidrs=true and --cluster-cidr ${planned}; check its flags and log`);
  const held = podCidrsOf(node);
  const outside = held.filter((subnet, i) => !cidrContains(ranges[i] ?? ranges[0], subnet));
  if (outside.length > 0) throw new Error(`node ${run.inputs.node}: kube-controller-manager gave podCIDR ${held.join(",")}, outside the pod range ${planned}; check its --cluster-cidr`);
  run.log(`podCIDR ${held.join(",")} from kube-controller-manager`);
  return [node, held.map(normalizeCidr).join(",")];
}

/** 1, etcd-rewrite: the Node was never deleted; its podCIDR was rewritten in etcd before its kubelet restarted. */
async function waitNodeKept({ run, planned, timeout }: Rejoin): Promise<V1Node> {
  const node = await run.within(timeout, "the Node after its kubelet's restart", async () => run.readNode(), "the Node object is gone; check who deleted it (the etcd-rewrite rollout never does)");
  if ((node.spec?.podCIDRs?.join(",") ?? node.spec?.podCIDR) !== planned) {
    throw new Error(`node ${run.inputs.node}: its podCIDR is ${node.spec?.podCIDR ?? "unset"}, the etcd rewrite planned ${planned}; the rewrite step must run before the node steps (re-run pulumi up)`);
  }
  return node;
}

/**
 * 2. podCIDR and metadata in one patch, guarded by resourceVersion: a concurrent kubelet or controller update makes
 * it conflict and it is recomputed from the newer object. The node stays cordoned until verified. Returns whether
 * this run assigned the podCIDR.
 */
async function assignPodCidrAndRestore({ run, record, planned }: Rejoin, registered: V1Node): Promise<boolean> {
  const { inputs } = run;
  let fresh = registered;
  let assigned = false;
  for (let attempt = 1; ; attempt++) {
    const cidr = podCidrAction(inputs.node, fresh, planned);
    if (cidr.action === "fail") throw new Error(cidr.message);
    const current = metadataOf(fresh);
    const target = { ...restoredMetadata(current, record.metadata), unschedulable: true };
    const patch = metadataMergePatch(current, target);
    const body = {
      ...patch,
      metadata: { ...patch.metadata, resourceVersion: fresh.metadata!.resourceVersion },
      spec: { ...patch.spec, ...(cidr.action === "assign" ? { podCIDR: cidr.podCIDRs[0], podCIDRs: cidr.podCIDRs } : {}) },
    };
    try {
      fresh = await run.c.core.patchNode({ name: inputs.node, body }, mergePatch());
      assigned ||= cidr.action === "assign";
      break;
    } catch (err) {
      if ((err as { code?: number }).code !== 409 || attempt >= 20) throw describeKubeError(err, `restoring Node ${inputs.node}`, run.c.server);
      fresh = (await run.readNode()) ?? fresh;
    }
  }
  run.log(`${assigned ? `podCIDR ${planned} assigned; ` : ""}labels, taints and annotations restored (still cordoned)`);
  return assigned;
}

/**
 * 3. The DaemonSet pods of the old Node (CNI agent, kube-proxy, ...) are replaced, then Ready, then back to the
 * backed-up schedulability. Returns the pods evicted.
 */
async function replaceOldDaemonSetPods({ run, record, planned, timeout }: Rejoin): Promise<Set<string>> {
  const { inputs } = run;
  const version = await policyVersion(run);
  const toReplace = staleDaemonSetPods(await run.podsOnNode(), record.daemonSetPodUids, planned);
  const replaceUids = new Set(toReplace.map((p) => p.metadata!.uid!));
  const replaced = new Set<string>();
  let blocked: string[] = [];
  await run.within(timeout, "replacing the DaemonSet pods left from before the move", async () => {
    const left = (await run.podsOnNode()).filter((p) => replaceUids.has(p.metadata?.uid ?? ""));
    blocked = [];
    for (const pod of left.filter((p) => !p.metadata?.deletionTimestamp)) {
      const result = await evict(run, pod, version);
      if (result === "evicted") replaced.add(podKey(pod));
      if (result === "blocked") blocked.push(podKey(pod));
    }
    return left.length === 0 ? true : undefined;
  }, () => (blocked.length ? `PodDisruptionBudgets refuse evicting ${blocked.join(", ")}; relax them for the node's DaemonSet pods` : "the evicted pods are still terminating; check the kubelet on the node"));
  await run.within(timeout, "Ready", async () => {
    const node = await run.readNode();
    return node && isReady(node) ? true : undefined;
  }, "the Node is not Ready; check the kubelet and the CNI pods on the node");
  await run.api(`uncordoning Node ${inputs.node}`, () =>
    run.c.core.patchNode({ name: inputs.node, body: { spec: { unschedulable: record.metadata.unschedulable } } }, mergePatch()),
  );
  run.log(`${replaced.size} old DaemonSet pod(s) replaced; Ready; ${record.metadata.unschedulable ? "left cordoned, as it was before the migration" : "uncordoned"}`);
  return replaced;
}

/** 4. Its DaemonSet pods back and Ready, every pod address in the new subnet. */
async function waitPodsBackInNewSubnet({ run, record, planned, timeout }: Rejoin): Promise<void> {
  let last = podsBack([], record.daemonSets, planned);
  await run.within(timeout, "the node's pods coming back in the new subnet", async () => {
    last = podsBack(await run.podsOnNode(), record.daemonSets, planned);
    return last.done ? true : undefined;
  }, () => [
    last.missingDaemonSets.length ? `no Ready pod yet of DaemonSet ${last.missingDaemonSets.join(", ")}` : "",
    last.outside.length ? `pods outside ${planned}: ${last.outside.map((o) => `${o.pod} ${o.podIP}`).join(", ")} (the CNI still hands out old addresses: check its cleanup)` : "",
  ].filter(Boolean).join("; "));
}

/**
 * 5. Verify what the move promised. The node lifecycle controller lifts the not-ready taint by patching the whole
 * taint list computed from its cached Node, which can predate the restore above: a stale write can drop restored
 * taints. Re-apply the restore until the Node matches its backup, and fail closed naming what still differs.
 */
async function verifyRestored({ run, record, planned, timeout }: Rejoin): Promise<void> {
  const { inputs } = run;
  const final = await run.readNode();
  if (!final) throw new Error(`node ${inputs.node}: disappeared during verification`);
  // a dual-stack node's plan is its subnets comma-separated, as spec.podCIDRs lists them
  const held = final.spec?.podCIDRs?.join(",") ?? final.spec?.podCIDR;
  if (held !== planned) throw new Error(`node ${inputs.node}: spec.podCIDRs is ${held ?? "empty"}, planned ${planned}`);
  let differences = metadataDifferences(metadataOf(final), record.metadata);
  await run.within(timeout, "the Node's metadata matching its backup", async () => {
    const node = await run.readNode();
    if (!node) return undefined;
    differences = metadataDifferences(metadataOf(node), record.metadata);
    if (differences.length === 0) return true;
    const current = metadataOf(node);
    const patch = metadataMergePatch(current, restoredMetadata(current, record.metadata));
    await run.c.core.patchNode({ name: inputs.node, body: { ...patch, metadata: { ...patch.metadata, resourceVersion: node.metadata!.resourceVersion } } }, mergePatch()).catch((err) => {
      if ((err as { code?: number }).code !== 409) throw describeKubeError(err, `restoring Node ${inputs.node}`, run.c.server);
    });
    return undefined;
  }, () => `metadata differs from its backup after the restore: ${describeDifferences(differences)}`);
}
