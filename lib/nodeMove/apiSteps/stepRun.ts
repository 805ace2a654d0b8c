/**
 * What every API step of a node move shares (dynamic-providers/nodeApiSteps.ts runs them): the step's inputs, the
 * kube clients, and StepRun, which reads the Node and its backup record, logs progress (node, step, elapsed) and
 * turns API failures into one-line errors. The steps themselves are one file each beside this one.
 * No Pulumi import: the provider hands in the clients and the log.
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, V1Node, V1Pod } from "@kubernetes/client-node";
import { describeKubeError, isNotFound } from "../../config/kubeClient";
import { BACKUP_NAMESPACE, BackupPhase, NodeBackupRecord, PHASE_DATA_KEY, backupConfigMapName, decodeBackup, laterPhase } from "../backupRecord";
import { UnmanagedPodPolicy } from "../drainDecision";
import { sleep } from "../../concurrency/sleep";

export const NODE_API_STEPS = ["drain", "release-calico-ipam", "delete-node", "rejoin", "address-reported", "address-follow", "address-agents"] as const;
export type NodeApiStepName = (typeof NODE_API_STEPS)[number];

export const POLL_MS = 250;

export interface StepInputs {
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
  /** drain: the cluster's DNS Service; the drain takes its evicted pods out of it while they still answer (dnsHandoff.ts) */
  dnsService?: { namespace: string; name: string };
  /** release-calico-ipam */
  oldPoolCidrs?: string[];
  /** rejoin: applies to each wait (registration, Ready, pods back) */
  rejoinTimeoutSeconds?: number;
  /** rejoin: the Node was never deleted (nodeRollout.strategy etcd-rewrite): its kubelet restarted, no re-registration */
  nodeKept?: boolean;
  /**
   * rejoin: kube-controller-manager gives the re-registered Node its subnet (a run that changes node addresses only
   * keeps allocation on); plannedPodCIDR is then the pod range it must lie in
   */
  podCidrFromController?: boolean;
  /** rejoin: the node's address moved (nodeAddresses): the re-registered Node must report this InternalIP */
  internalIP?: string;
  /** address-reported, address-follow, address-agents: the node's address before the move (a control-plane node keeps its Node object) */
  oldInternalIP?: string;
}

export interface Clients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  kc: KubeConfig;
  server: string | undefined;
}

export const mergePatch = () => setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** One step of one node move: logs progress (node, step, elapsed) and turns API failures into one-line errors. */
export class StepRun {
  readonly started: number;
  // assigned in the constructor, not as a field initializer: Pulumi's closure serializer drops class field
  // initializers when it copies this class into the provider host
  constructor(readonly c: Clients, readonly inputs: StepInputs, private readonly logLine: (line: string) => void) {
    this.started = Date.now();
  }

  elapsedSeconds(): number {
    return Math.round((Date.now() - this.started) / 100) / 10;
  }

  log(message: string): void {
    this.logLine(`node ${this.inputs.node} ${this.inputs.step} +${this.elapsedSeconds()}s: ${message}`);
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
