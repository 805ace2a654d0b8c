import * as pulumi from "@pulumi/pulumi";
import { ApisApi, CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, V1Node, V1Pod } from "@kubernetes/client-node";
import { describeKubeError, isNotFound } from "../lib/config/kubeClient";
import {
  BACKUP_LABELS, BACKUP_NAMESPACE, BACKUP_RECORD_VERSION, BackupPhase, NodeBackupRecord, PHASE_DATA_KEY, backupConfigMapName, decodeBackup, encodeBackup, laterPhase,
} from "../lib/nodeMove/backupRecord";
import { calicoObjectsToRelease } from "../lib/nodeMove/calicoIpam";
import { normalizeCidr } from "../lib/net/cidr";
import { PdbLike, PodLike, UnmanagedPodPolicy, pdbsBlocking, planDrain, podKey } from "../lib/nodeMove/drainDecision";
import { describeDifferences, metadataDifferences, metadataMergePatch, metadataOf, restoredMetadata } from "../lib/nodeMove/nodeMetadata";
import { isReady, podCidrAction, podsBack, registrationState, staleDaemonSetPods } from "../lib/nodeMove/rejoinChecks";
import { containsUnknown, kubeConfigFrom, withSecretOutputs } from "./wire";

/**
 * The API side of a node move (issue 7), as four resources that share one dynamic provider:
 *
 *   NodeDrain          back up the Node's labels/taints/annotations/unschedulable to a kube-system ConfigMap,
 *                      cordon, evict its pods through the Eviction API (PDBs respected, DaemonSet and mirror pods
 *                      left, emptyDir allowed), fail after drainTimeoutSeconds. Never forces anything.
 *   CalicoIpamRelease  delete the node's IPAMBlocks and BlockAffinities in the old pool (Calico only).
 *   NodeDeregister     delete the Node object (only the backed-up one, by uid precondition).
 *   NodeRejoin         wait for the kubelet's re-registration, set the planned podCIDR (kube-controller-manager
 *                      runs with --allocate-node-cidrs=false meanwhile), restore the metadata exactly while still
 *                      cordoned, evict the DaemonSet pods left from the old Node (CNI agent, kube-proxy, ...:
 *                      they survive the re-registration on the old network), wait Ready, uncordon (back to the
 *                      backed-up unschedulable), wait for the node's DaemonSet pods to be Ready in the new subnet,
 *                      verify podCIDR and metadata.
 *
 * Remote steps (CNI cleanup, kubelet stop/start, clusterDNS) run between them as remote.Commands
 * (components/nodeRollout.ts). Every step is idempotent and keyed by (runId, node): a re-run after a crash reads
 * the backup from the cluster, never from memory, and recognises the re-registered Node by its new uid, so it
 * neither deletes it again nor loses the labels. check and diff are read-only. The kubeconfig is an input only
 * (a secret); it is never in the outputs, the log or an error.
 */

export const NODE_API_STEPS_VERSION = "1";
export const NODE_API_STEPS = ["drain", "release-calico-ipam", "delete-node", "rejoin"] as const;
export type NodeApiStepName = (typeof NODE_API_STEPS)[number];

export const DEFAULT_EVICTION_RETRY_SECONDS = 5;
export const DEFAULT_REJOIN_TIMEOUT_SECONDS = 600;

const POLL_MS = 250;
const CALICO = { group: "crd.projectcalico.org", version: "v1" };

interface StepInputs {
  step: NodeApiStepName;
  kubeconfig: string;
  node: string;
  runId: string;
  version: string;
  /** drain and rejoin */
  plannedPodCIDR?: string;
  oldPodCIDR?: string;
  drainTimeoutSeconds?: number;
  evictionRetrySeconds?: number;
  unmanagedPods?: UnmanagedPodPolicy;
  /** release-calico-ipam */
  oldPoolCidrs?: string[];
  /** rejoin: applies to each wait (registration, Ready, pods back) */
  rejoinTimeoutSeconds?: number;
}

/** Changing one of these is another action on the cluster: a replacement. The rest is recorded in place. */
const IDENTITY = ["step", "node", "runId", "plannedPodCIDR", "oldPoolCidrs"] as const;
const IN_PLACE = ["version", "oldPodCIDR", "drainTimeoutSeconds", "evictionRetrySeconds", "unmanagedPods", "rejoinTimeoutSeconds"] as const;

function checkInputs(news: Record<string, unknown>): pulumi.dynamic.CheckResult {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const fail = (property: string, reason: string) => failures.push({ property, reason });
  const known = (key: string) => news[key] !== undefined && !containsUnknown(news[key]);
  const step = news.step as NodeApiStepName;
  if (!known("step") || !NODE_API_STEPS.includes(step)) fail("step", `step ${JSON.stringify(news.step)} is not one of ${NODE_API_STEPS.join(", ")}`);
  for (const key of ["node", "runId"]) {
    if (news[key] === undefined) fail(key, `${key} is required`);
    else if (known(key) && (typeof news[key] !== "string" || (news[key] as string) === "")) fail(key, `${key} must be a non-empty string; got ${JSON.stringify(news[key])}`);
  }
  // never echo the kubeconfig: it holds credentials
  if (news.kubeconfig === undefined) fail("kubeconfig", "kubeconfig is required: the content of an admin kubeconfig, as a secret");
  else if (known("kubeconfig") && (typeof news.kubeconfig !== "string" || !/\bclusters\b/.test(news.kubeconfig))) fail("kubeconfig", "kubeconfig must be the content of a kubeconfig file (the value given is not)");
  if (step === "drain" || step === "rejoin") {
    if (news.plannedPodCIDR === undefined) fail("plannedPodCIDR", "plannedPodCIDR is required: the node's subnet in the new pod range (plan.nodes[].newPodCIDR)");
    else if (known("plannedPodCIDR")) {
      try {
        if (normalizeCidr(news.plannedPodCIDR as string) !== news.plannedPodCIDR) fail("plannedPodCIDR", `plannedPodCIDR ${JSON.stringify(news.plannedPodCIDR)} is not in normal form; pass ${normalizeCidr(news.plannedPodCIDR as string)}`);
      } catch (err) {
        fail("plannedPodCIDR", (err as Error).message);
      }
    }
  }
  if (step === "release-calico-ipam" && known("oldPoolCidrs") && (!Array.isArray(news.oldPoolCidrs) || news.oldPoolCidrs.length === 0)) {
    fail("oldPoolCidrs", "oldPoolCidrs must list the old IPPool CIDRs, e.g. [\"10.244.0.0/16\"]");
  }
  for (const key of ["drainTimeoutSeconds", "evictionRetrySeconds", "rejoinTimeoutSeconds"]) {
    if (known(key) && (!Number.isFinite(news[key]) || (news[key] as number) <= 0)) fail(key, `${key} ${JSON.stringify(news[key])} must be a positive number of seconds`);
  }
  if (known("unmanagedPods") && news.unmanagedPods !== "refuse" && news.unmanagedPods !== "evict") fail("unmanagedPods", `unmanagedPods ${JSON.stringify(news.unmanagedPods)} must be "refuse" or "evict"`);
  return { inputs: news, failures };
}

function diffInputs(olds: Record<string, unknown>, news: Record<string, unknown>): pulumi.dynamic.DiffResult {
  const same = (key: string) => JSON.stringify(olds[key]) === JSON.stringify(news[key]);
  const replaces = IDENTITY.filter((key) => !same(key));
  const updates = IN_PLACE.filter((key) => !same(key));
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}

function asInputs(news: Record<string, unknown>): StepInputs {
  const failures = checkInputs(news).failures ?? [];
  if (failures.length > 0) throw new Error(failures.map((f) => `${f.property}: ${f.reason}`).join("; "));
  return { ...(news as unknown as StepInputs), version: (news.version as string | undefined) ?? NODE_API_STEPS_VERSION };
}

/** The inputs kept in the outputs (diff compares against them); never the kubeconfig. */
function recordedInputs(inputs: StepInputs): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key of [...IDENTITY, ...IN_PLACE]) if (inputs[key] !== undefined) kept[key] = inputs[key];
  return kept;
}

interface Clients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  kc: KubeConfig;
  server: string | undefined;
}

function clientsFor(kubeconfig: string): Clients {
  const kc = kubeConfigFrom(kubeconfig);
  return { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), kc, server: kc.getCurrentCluster()?.server };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** One step of one node move: logs progress (node, step, elapsed) and turns API failures into one-line errors. */
class StepRun {
  readonly started: number;
  // assigned in the constructor, not as a field initializer: Pulumi's closure serializer drops class field
  // initializers when it copies this class into the provider host
  constructor(readonly c: Clients, readonly inputs: StepInputs) {
    this.started = Date.now();
  }

  elapsedSeconds(): number {
    return Math.round((Date.now() - this.started) / 100) / 10;
  }

  log(message: string): void {
    void pulumi.log.info(`node ${this.inputs.node} ${this.inputs.step} +${this.elapsedSeconds()}s: ${message}`);
  }

  async api<T>(action: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw describeKubeError(err, `${action} (node ${this.inputs.node}, step ${this.inputs.step})`, this.c.server);
    }
  }

  /** undefined on 404 */
  async optional<T>(action: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw describeKubeError(err, `${action} (node ${this.inputs.node}, step ${this.inputs.step})`, this.c.server);
    }
  }

  readNode(): Promise<V1Node | undefined> {
    return this.optional(`reading Node ${this.inputs.node}`, () => this.c.core.readNode({ name: this.inputs.node }));
  }

  async podsOnNode(): Promise<V1Pod[]> {
    const list = await this.api(`listing the pods of Node ${this.inputs.node}`, () =>
      this.c.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${this.inputs.node}` }),
    );
    return list.items;
  }

  backupName(): string {
    return backupConfigMapName(this.inputs.runId, this.inputs.node);
  }

  async readBackup(): Promise<{ record: NodeBackupRecord; phase: BackupPhase } | undefined> {
    const name = this.backupName();
    const cm = await this.optional(`reading ConfigMap ${BACKUP_NAMESPACE}/${name}`, () => this.c.core.readNamespacedConfigMap({ namespace: BACKUP_NAMESPACE, name }));
    return cm ? decodeBackup(cm.data, name, { runId: this.inputs.runId, node: this.inputs.node }) : undefined;
  }

  async requireBackup(): Promise<{ record: NodeBackupRecord; phase: BackupPhase }> {
    const backup = await this.readBackup();
    if (!backup) {
      throw new Error(`node ${this.inputs.node}: no backup ConfigMap ${BACKUP_NAMESPACE}/${this.backupName()} for run "${this.inputs.runId}"; the drain step takes it and must run first (pulumi up runs it before this step)`);
    }
    return backup;
  }

  async setPhase(current: BackupPhase, next: BackupPhase): Promise<void> {
    const phase = laterPhase(current, next);
    if (phase === current) return;
    const name = this.backupName();
    await this.api(`updating ConfigMap ${BACKUP_NAMESPACE}/${name}`, () =>
      this.c.core.patchNamespacedConfigMap({ namespace: BACKUP_NAMESPACE, name, body: { data: { [PHASE_DATA_KEY]: phase } } }, mergePatch()),
    );
  }

  async within<T>(timeoutSeconds: number, what: string, probe: () => Promise<T | undefined>, explain: string | (() => Promise<string> | string)): Promise<T> {
    const deadline = Date.now() + timeoutSeconds * 1000;
    for (;;) {
      const result = await probe();
      if (result !== undefined) return result;
      if (Date.now() >= deadline) throw new Error(`node ${this.inputs.node}: ${what} did not happen within ${timeoutSeconds}s: ${typeof explain === "string" ? explain : await explain()}`);
      await sleep(POLL_MS);
    }
  }
}

// ---------------------------------------------------------------------------------------------- drain

async function policyVersion(run: StepRun): Promise<string> {
  const groups = await run.api("reading the API groups", () => run.c.kc.makeApiClient(ApisApi).getAPIVersions());
  const policy = groups.groups.find((g) => g.name === "policy");
  return policy?.versions.some((v) => v.version === "v1") ? "v1" : "v1beta1";
}

/**
 * One eviction through the Eviction API. "blocked" is a 429: a PodDisruptionBudget allows no disruption right now;
 * the caller retries until its timeout. Nothing is ever deleted directly or forced.
 */
async function evict(run: StepRun, pod: PodLike, version: string): Promise<"evicted" | "gone" | "blocked"> {
  const name = pod.metadata!.name!;
  const namespace = pod.metadata!.namespace!;
  try {
    await run.c.core.createNamespacedPodEviction({
      name,
      namespace,
      // preconditions: evict this pod, not a namesake (a StatefulSet pod re-created under the same name)
      body: { apiVersion: `policy/${version}`, kind: "Eviction", metadata: { name, namespace }, deleteOptions: { preconditions: { uid: pod.metadata!.uid } } },
    });
    run.log(`evicted ${namespace}/${name}`);
    return "evicted";
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code === 404 || code === 409) return "gone";
    if (code === 429) return "blocked";
    throw describeKubeError(err, `evicting pod ${namespace}/${name} from Node ${run.inputs.node}`, run.c.server);
  }
}

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

async function drain(run: StepRun): Promise<Record<string, unknown>> {
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
    }
    if (Date.now() >= deadline) {
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

// ---------------------------------------------------------------------------------------------- calico

async function releaseCalicoIpam(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const { record } = await run.requireBackup();
  const node = await run.readNode();
  if (registrationState(node, record.nodeUid) === "old-object") {
    throw new Error(`node ${inputs.node}: the Node object from before the move still exists; its IPAM is released only after the delete step`);
  }
  const list = async (plural: string) =>
    ((await run.api(`listing Calico ${plural}`, () => run.c.custom.listClusterCustomObject({ ...CALICO, plural }))) as { items: Array<Record<string, never>> }).items;
  const [blocks, affinities] = await Promise.all([list("ipamblocks"), list("blockaffinities")]);
  const release = calicoObjectsToRelease(inputs.node, inputs.oldPoolCidrs ?? [], blocks, affinities);
  for (const [plural, names] of [["blockaffinities", release.affinities], ["ipamblocks", release.blocks]] as const) {
    for (const name of names) {
      await run.optional(`deleting Calico ${plural} ${name}`, () => run.c.custom.deleteClusterCustomObject({ ...CALICO, plural, name }));
      run.log(`released ${plural} ${name}`);
    }
  }
  return { releasedBlocks: release.blocks, releasedAffinities: release.affinities, elapsedSeconds: run.elapsedSeconds() };
}

// ---------------------------------------------------------------------------------------------- delete

async function deleteNode(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const { record, phase } = await run.requireBackup();
  const node = await run.readNode();
  const state = registrationState(node, record.nodeUid);
  if (state === "re-registered") {
    run.log("the Node has re-registered already (new uid); not deleting it again");
    await run.setPhase(phase, "node-deleted");
    return { result: "already-re-registered", elapsedSeconds: run.elapsedSeconds() };
  }
  if (state === "old-object") {
    // fail closed: a Node that still runs evictable pods was not drained
    const left = planDrain(await run.podsOnNode(), "evict");
    if (left.evict.length > 0 || left.wait.length > 0) {
      throw new Error(`node ${inputs.node}: still runs ${[...left.evict, ...left.wait].map(podKey).join(", ")}; the drain did not finish, so the Node is not deleted`);
    }
    await run.optional(`deleting Node ${inputs.node}`, () => run.c.core.deleteNode({ name: inputs.node, body: { preconditions: { uid: record.nodeUid } } }));
    await run.within(60, "the Node's deletion", async () => (registrationState(await run.readNode(), record.nodeUid) === "old-object" ? undefined : true), "the Node object is still there (a finalizer?)");
    run.log(`deleted Node (uid ${record.nodeUid}); the kubelet registers it again when it starts`);
  }
  await run.setPhase(phase, "node-deleted");
  return { result: state === "old-object" ? "deleted" : "already-deleted", deletedUid: record.nodeUid, elapsedSeconds: run.elapsedSeconds() };
}

// ---------------------------------------------------------------------------------------------- rejoin

async function rejoin(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const timeout = inputs.rejoinTimeoutSeconds ?? DEFAULT_REJOIN_TIMEOUT_SECONDS;
  const planned = inputs.plannedPodCIDR!;
  const { record, phase } = await run.requireBackup();
  if (record.plannedPodCIDR !== planned) {
    throw new Error(`node ${inputs.node}: the backup of run "${inputs.runId}" was taken for podCIDR ${record.plannedPodCIDR}, this step plans ${planned}; re-plan or use a new snapshot.trigger`);
  }

  // 1. the kubelet's re-registration: a Node of the same name with a new uid
  let fresh = await run.within(timeout, "re-registration of the Node by its kubelet", async () => {
    const node = await run.readNode();
    const state = registrationState(node, record.nodeUid);
    if (state === "old-object") throw new Error(`node ${inputs.node}: the Node object from before the move still exists; the delete step must run before this one`);
    return state === "re-registered" ? node : undefined;
  }, "no Node of that name has registered; check the kubelet on the node (journalctl -u kubelet)");
  run.log("re-registered (new uid)");

  // 2. podCIDR and metadata in one patch, guarded by resourceVersion: a concurrent kubelet or controller update
  //    makes it conflict and it is recomputed from the newer object. The node stays cordoned until verified.
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
      spec: { ...patch.spec, ...(cidr.action === "assign" ? { podCIDR: cidr.podCIDR, podCIDRs: [cidr.podCIDR] } : {}) },
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

  // 3. the DaemonSet pods of the old Node (CNI agent, kube-proxy, ...) are replaced, then Ready, then back to the
  //    backed-up schedulability
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

  // 4. its DaemonSet pods back and Ready, every pod address in the new subnet
  let last = podsBack([], record.daemonSets, planned);
  await run.within(timeout, "the node's pods coming back in the new subnet", async () => {
    last = podsBack(await run.podsOnNode(), record.daemonSets, planned);
    return last.done ? true : undefined;
  }, () => [
    last.missingDaemonSets.length ? `no Ready pod yet of DaemonSet ${last.missingDaemonSets.join(", ")}` : "",
    last.outside.length ? `pods outside ${planned}: ${last.outside.map((o) => `${o.pod} ${o.podIP}`).join(", ")} (the CNI still hands out old addresses: check its cleanup)` : "",
  ].filter(Boolean).join("; "));

  // 5. verify what the move promised
  const final = await run.readNode();
  if (!final) throw new Error(`node ${inputs.node}: disappeared during verification`);
  if (final.spec?.podCIDR !== planned) throw new Error(`node ${inputs.node}: spec.podCIDR is ${final.spec?.podCIDR ?? "empty"}, planned ${planned}`);
  // The node lifecycle controller lifts the not-ready taint by patching the whole taint list computed from its
  // cached Node, which can predate the restore above: a stale write can drop restored taints. Re-apply the restore
  // until the Node matches its backup, and fail closed naming what still differs.
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
  await run.setPhase(phase, "restored");
  run.log(`verified: podCIDR ${planned}, metadata as before the move, ${record.daemonSets.length} DaemonSet pod(s) back`);
  return { podCIDR: planned, assignedPodCIDR: assigned, daemonSets: record.daemonSets, replacedPods: [...replaced].sort(), backupConfigMap: run.backupName(), elapsedSeconds: run.elapsedSeconds() };
}

// ---------------------------------------------------------------------------------------------- provider

const STEPS: Record<NodeApiStepName, (run: StepRun) => Promise<Record<string, unknown>>> = {
  drain,
  "release-calico-ipam": releaseCalicoIpam,
  "delete-node": deleteNode,
  rejoin,
};

async function runStep(news: Record<string, unknown>): Promise<Record<string, unknown>> {
  const inputs = asInputs(news);
  const run = new StepRun(clientsFor(inputs.kubeconfig), inputs);
  run.log("started");
  const outs = await STEPS[inputs.step](run);
  return { ...recordedInputs(inputs), ...outs };
}

export const nodeApiStepsProvider: pulumi.dynamic.ResourceProvider = {
  async check(_olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.CheckResult> {
    return checkInputs(news);
  },

  async diff(_id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.DiffResult> {
    return diffInputs(olds, news);
  },

  async create(news: Record<string, unknown>): Promise<pulumi.dynamic.CreateResult> {
    const outs = await runStep(news);
    return { id: `${news.runId}/${news.node}/${news.step}`, outs };
  },

  async update(_id: string, olds: Record<string, unknown>, news: Record<string, unknown>): Promise<pulumi.dynamic.UpdateResult> {
    // only IN_PLACE inputs reach here (diff replaces on the rest): record them, touch nothing
    return { outs: { ...olds, ...recordedInputs(asInputs(news)) } };
  },

  async delete(): Promise<void> {
    // Nothing to undo: the node stays where it moved (moving it back is another migration). The backup ConfigMaps
    // stay too, the record of what each node carried; remove them after verification with
    // `kubectl -n kube-system delete configmap -l cidr-migration.io/backup=node-metadata`.
  },
};

// ---------------------------------------------------------------------------------------------- resources

interface CommonArgs {
  /** Content of an admin kubeconfig; stored as a secret, never in the outputs. */
  kubeconfig: pulumi.Input<string>;
  /** The Node's name. */
  node: pulumi.Input<string>;
  /** Names this migration run (config snapshot.trigger): the backup is keyed by it. */
  runId: pulumi.Input<string>;
  /** Provider behaviour version recorded with the step. Default NODE_API_STEPS_VERSION. */
  version?: pulumi.Input<string>;
}

export interface NodeDrainArgs extends CommonArgs {
  /** The node's subnet in the new pod range (plan.nodes[].newPodCIDR), recorded in the backup. */
  plannedPodCIDR: pulumi.Input<string>;
  oldPodCIDR?: pulumi.Input<string>;
  /** Fail the drain (nothing forced, the node stays cordoned) after this many seconds. Default 300. */
  drainTimeoutSeconds?: pulumi.Input<number>;
  /** Pause between eviction attempts refused by a PodDisruptionBudget. Default 5. */
  evictionRetrySeconds?: pulumi.Input<number>;
  /** Pods without a controller: "refuse" (default, the drain fails naming them) or "evict". */
  unmanagedPods?: pulumi.Input<UnmanagedPodPolicy>;
}

export interface CalicoIpamReleaseArgs extends CommonArgs {
  /** CIDRs of the old Calico IPPool(s). */
  oldPoolCidrs: pulumi.Input<pulumi.Input<string>[]>;
}

export interface NodeRejoinArgs extends CommonArgs {
  plannedPodCIDR: pulumi.Input<string>;
  /** Limit for each wait (re-registration, Ready, pods back). Default 600. */
  rejoinTimeoutSeconds?: pulumi.Input<number>;
}

function stepProps(step: NodeApiStepName, args: CommonArgs, extra: Record<string, unknown>, outputs: string[]): Record<string, unknown> {
  const props: Record<string, unknown> = {
    step,
    kubeconfig: pulumi.secret(args.kubeconfig),
    node: args.node,
    runId: args.runId,
    version: args.version ?? NODE_API_STEPS_VERSION,
    ...extra,
  };
  for (const name of [...outputs, "elapsedSeconds"]) props[name] = undefined;
  return props;
}

/** The kubeconfig is never returned; listed so that a future output of that name could not be stored in the clear. */
const SECRET_OUTPUTS = ["kubeconfig"];
const withSecrets = (opts?: pulumi.CustomResourceOptions): pulumi.CustomResourceOptions => withSecretOutputs(opts, SECRET_OUTPUTS);

export class NodeDrain extends pulumi.dynamic.Resource {
  declare readonly backupConfigMap: pulumi.Output<string>;
  declare readonly evicted: pulumi.Output<string[]>;
  declare readonly ignored: pulumi.Output<string[]>;
  declare readonly daemonSets: pulumi.Output<string[]>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeDrainArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("drain", args, {
      plannedPodCIDR: args.plannedPodCIDR,
      oldPodCIDR: args.oldPodCIDR,
      drainTimeoutSeconds: args.drainTimeoutSeconds,
      evictionRetrySeconds: args.evictionRetrySeconds,
      unmanagedPods: args.unmanagedPods,
    }, ["backupConfigMap", "evicted", "ignored", "daemonSets"]), withSecrets(opts), "cidr-migration", "NodeDrain");
  }
}

export class CalicoIpamRelease extends pulumi.dynamic.Resource {
  declare readonly releasedBlocks: pulumi.Output<string[]>;
  declare readonly releasedAffinities: pulumi.Output<string[]>;

  constructor(name: string, args: CalicoIpamReleaseArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("release-calico-ipam", args, { oldPoolCidrs: args.oldPoolCidrs }, ["releasedBlocks", "releasedAffinities"]), withSecrets(opts), "cidr-migration", "CalicoIpamRelease");
  }
}

export class NodeDeregister extends pulumi.dynamic.Resource {
  declare readonly result: pulumi.Output<string>;

  constructor(name: string, args: CommonArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("delete-node", args, {}, ["result", "deletedUid"]), withSecrets(opts), "cidr-migration", "NodeDeregister");
  }
}

export class NodeRejoin extends pulumi.dynamic.Resource {
  declare readonly podCIDR: pulumi.Output<string>;
  declare readonly assignedPodCIDR: pulumi.Output<boolean>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeRejoinArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("rejoin", args, {
      plannedPodCIDR: args.plannedPodCIDR,
      rejoinTimeoutSeconds: args.rejoinTimeoutSeconds,
    }, ["podCIDR", "assignedPodCIDR", "daemonSets", "backupConfigMap"]), withSecrets(opts), "cidr-migration", "NodeRejoin");
  }
}
