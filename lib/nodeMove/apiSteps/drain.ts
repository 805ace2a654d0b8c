/**
 * NodeDrain's step: back up the Node's labels, taints, annotations and unschedulable to a kube-system ConfigMap,
 * cordon, evict its pods through the Eviction API (PDBs respected, DaemonSet and mirror pods left, emptyDir
 * allowed), and fail after drainTimeoutSeconds. Never forces anything. An evicted pod of the cluster's DNS Service
 * is taken out of that Service while it still answers (dnsHandoff.ts).
 */
import { V1Node, V1Pod } from "@kubernetes/client-node";
import { describeKubeError } from "../../config/kubeClient";
import { BACKUP_LABELS, BACKUP_NAMESPACE, BACKUP_RECORD_VERSION, BackupPhase, NodeBackupRecord, encodeBackup } from "../backupRecord";
import { PdbLike, pdbsBlocking, planDrain, podKey } from "../drainDecision";
import { metadataOf } from "../nodeMetadata";
import { evict, policyVersion } from "./eviction";
import { dnsSelector, handOff, matchesSelector } from "./dnsHandoff";
import { POLL_MS, StepRun, mergePatch } from "./stepRun";
import { sleep } from "../../concurrency/sleep";

export const DEFAULT_EVICTION_RETRY_SECONDS = 5;

async function takeBackup(run: StepRun, node: V1Node, pods: V1Pod[]): Promise<{ record: NodeBackupRecord; phase: BackupPhase }> {
  const existing = await run.readBackup();
  // the first backup of a run is the pre-migration state; a re-run (node already cordoned) must not replace it
  if (existing) return existing;
  const record: NodeBackupRecord = {
    version: BACKUP_RECORD_VERSION,
    runId: run.inputs.runId,
    node: run.inputs.node,
    nodeUid: node.metadata!.uid!,
    takenAt: new Date().toISOString(),
    metadata: metadataOf(node),
    oldPodCIDR: node.spec?.podCIDR,
    plannedPodCIDR: run.inputs.plannedPodCIDR!,
    daemonSets: planDrain(pods).daemonSets,
    daemonSetPodUids: planDrain(pods).daemonSetPodUids,
  };
  const name = run.backupName();
  try {
    await run.c.core.createNamespacedConfigMap({
      namespace: BACKUP_NAMESPACE,
      body: {
        metadata: { name, namespace: BACKUP_NAMESPACE, labels: { ...BACKUP_LABELS }, annotations: { "cidr-migration.io/node": run.inputs.node, "cidr-migration.io/run-id": run.inputs.runId } },
        data: encodeBackup(record, "backed-up"),
      },
    });
  } catch (err) {
    // a concurrent or crashed earlier attempt wrote it first: that one is the original
    if ((err as { code?: number }).code !== 409) throw describeKubeError(err, `creating ConfigMap ${BACKUP_NAMESPACE}/${name}`, run.c.server);
    return run.requireBackup();
  }
  run.log(`backed up ${Object.keys(record.metadata.labels).length} labels, ${record.metadata.taints.length} taints, ${Object.keys(record.metadata.annotations).length} annotations to ConfigMap ${BACKUP_NAMESPACE}/${name}`);
  return { record, phase: "backed-up" };
}

function refusedMessage(node: string, refused: Array<{ pod: string; reason: string }>): string {
  return `node ${node}: cannot drain, ${refused.length} pod(s) have no controller and would not come back: ${refused.map((r) => r.pod).join(", ")}; move them off the node (or delete them) yourself, or set unmanagedPods: "evict" to evict them anyway, then re-run`;
}

export async function drain(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const timeout = inputs.drainTimeoutSeconds ?? 300;
  const retryMs = (inputs.evictionRetrySeconds ?? DEFAULT_EVICTION_RETRY_SECONDS) * 1000;
  const unmanaged = inputs.unmanagedPods ?? "refuse";
  const node = await run.readNode();
  const earlier = await run.readBackup();

  if (earlier && earlier.phase !== "backed-up") {
    run.log(`already moved in run ${inputs.runId} (backup phase ${earlier.phase}); nothing to drain`);
    return { backupConfigMap: run.backupName(), evicted: [], ignored: [], daemonSets: earlier.record.daemonSets, elapsedSeconds: run.elapsedSeconds() };
  }
  if (!node) throw new Error(`node ${inputs.node}: no such Node in the cluster; check the name in cidr-migration:nodes and the plan`);

  const firstPods = await run.podsOnNode();
  const first = planDrain(firstPods, unmanaged);
  if (first.refused.length > 0) throw new Error(refusedMessage(inputs.node, first.refused));
  const backup = await takeBackup(run, node, firstPods);

  if (node.spec?.unschedulable !== true) {
    await run.api(`cordoning Node ${inputs.node}`, () => run.c.core.patchNode({ name: inputs.node, body: { spec: { unschedulable: true } } }, mergePatch()));
    run.log("cordoned");
  }

  const version = await policyVersion(run);
  const dns = inputs.dnsService ? await dnsSelector(run, inputs.dnsService) : undefined;
  const handoffs: Array<Promise<void>> = [];
  const evicted = new Set<string>();
  let ignored: string[] = [];
  let blocked = new Set<string>();
  const deadline = Date.now() + timeout * 1000;
  for (;;) {
    const plan = planDrain(await run.podsOnNode(), unmanaged);
    if (plan.refused.length > 0) throw new Error(refusedMessage(inputs.node, plan.refused));
    ignored = plan.skipped.map((s) => `${s.pod} (${s.reason})`);
    if (plan.evict.length === 0 && plan.wait.length === 0) break;
    blocked = new Set();
    for (const pod of plan.evict) {
      const result = await evict(run, pod, version);
      if (result === "blocked") blocked.add(podKey(pod));
      else if (result === "evicted") evicted.add(podKey(pod));
      if (result === "evicted" && dns && matchesSelector(pod, dns)) handoffs.push(handOff(run, pod, dns));
    }
    if (Date.now() >= deadline) {
      await Promise.all(handoffs);
      const pdbs = await pdbsIn(run, version, [...new Set(plan.evict.map((p) => p.metadata!.namespace!))]);
      const stuck = [
        ...plan.evict.filter((p) => blocked.has(podKey(p))).map((p) => `${podKey(p)} (${pdbsBlocking(p, pdbs).join(", ") || "blocked by a PodDisruptionBudget"})`),
        ...plan.wait.map((p) => `${podKey(p)} (evicted, still terminating)`),
        ...plan.evict.filter((p) => !blocked.has(podKey(p))).map((p) => `${podKey(p)} (evicted, still terminating)`),
      ];
      throw new Error(
        `node ${inputs.node}: drain timed out after ${timeout}s with ${stuck.length} pod(s) left: ${stuck.join("; ")}. Nothing was forced; the node stays cordoned. Scale the workload up or relax the budget, or raise nodeRollout.drainTimeoutSeconds, then re-run`,
      );
    }
    await sleep(blocked.size > 0 ? retryMs : POLL_MS);
  }
  await Promise.all(handoffs);
  run.log(`drained: ${evicted.size} pod(s) evicted, ${ignored.length} left (DaemonSet/mirror)`);
  return { backupConfigMap: run.backupName(), evicted: [...evicted].sort(), ignored, daemonSets: backup.record.daemonSets, elapsedSeconds: run.elapsedSeconds() };
}

async function pdbsIn(run: StepRun, version: string, namespaces: string[]): Promise<PdbLike[]> {
  const all: PdbLike[] = [];
  for (const namespace of namespaces) {
    const list = (await run.api(`listing PodDisruptionBudgets in ${namespace}`, () =>
      run.c.custom.listNamespacedCustomObject({ group: "policy", version, namespace, plural: "poddisruptionbudgets" }),
    )) as { items: PdbLike[] };
    all.push(...list.items);
  }
  return all;
}
