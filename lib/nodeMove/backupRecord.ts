/**
 * The durable backup of one node move: a ConfigMap in kube-system, written before the Node is cordoned and read
 * back after the Node re-registers.
 *
 * Why a ConfigMap and not the Pulumi state: the state only records a resource once its step returns. A `pulumi up`
 * that dies between the Node's delete and its re-registration (or a step that fails after the delete) would take
 * the only copy of the node's labels and taints with it. The ConfigMap lives in etcd next to the Node, survives a
 * crashed run, and an operator can read it with kubectl.
 *
 * Layout: data `backup.json` (the record below, written once and never overwritten within a run) and `phase`
 * (backed-up → node-deleted → restored, updated as the move goes). The name is derived from the run id and the
 * node name, so a re-run finds the same backup and a new migration run (new run id) takes a new one.
 */
import { createHash } from "crypto";
import { UserError } from "../config/errors";
import { NodeMetadata } from "./nodeMetadata";

export const BACKUP_NAMESPACE = "kube-system";
export const BACKUP_DATA_KEY = "backup.json";
export const PHASE_DATA_KEY = "phase";
export const BACKUP_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/managed-by": "cidr-migration",
  "cidr-migration.io/backup": "node-metadata",
};
export const BACKUP_RECORD_VERSION = 1;

export const BACKUP_PHASES = ["backed-up", "node-deleted", "restored"] as const;
export type BackupPhase = (typeof BACKUP_PHASES)[number];

export interface NodeBackupRecord {
  version: number;
  runId: string;
  node: string;
  /** uid of the Node that was backed up: a Node of the same name with another uid is its re-registration. */
  nodeUid: string;
  takenAt: string;
  metadata: NodeMetadata;
  oldPodCIDR?: string;
  plannedPodCIDR: string;
  /** "namespace/name" of the DaemonSets that had a pod on the node: their pods must come back after the move. */
  daemonSets: string[];
  /** uids of those pods at drain time: still there after the re-registration, they run with the old network. */
  daemonSetPodUids: string[];
}

const PREFIX = "cidr-migration-backup-";
const MAX_NAME = 253;

/** kube-system ConfigMap name for this run and node, e.g. cidr-migration-backup-worker-1-3f2a9c01. */
export function backupConfigMapName(runId: string, node: string): string {
  const hash = createHash("sha256").update(`${runId}\0${node}`).digest("hex").slice(0, 8);
  const room = MAX_NAME - PREFIX.length - hash.length - 1;
  const nodePart = node.slice(0, room).replace(/[.-]+$/, "");
  return `${PREFIX}${nodePart}-${hash}`;
}

export function encodeBackup(record: NodeBackupRecord, phase: BackupPhase): Record<string, string> {
  return { [BACKUP_DATA_KEY]: `${JSON.stringify(record, null, 2)}\n`, [PHASE_DATA_KEY]: phase };
}

function fail(where: string, what: string): never {
  throw new UserError(`ConfigMap ${BACKUP_NAMESPACE}/${where}: ${what}; it holds the node's pre-migration labels and taints, so do not delete it: fix or restore it from the etcd snapshot, then re-run`);
}

/** Reads a backup ConfigMap's data back, refusing anything that is not a complete record for this run and node. */
export function decodeBackup(data: Record<string, string> | undefined, where: string, expect: { runId: string; node: string }): { record: NodeBackupRecord; phase: BackupPhase } {
  const text = data?.[BACKUP_DATA_KEY];
  if (text === undefined) fail(where, `has no ${BACKUP_DATA_KEY} key`);
  let record: NodeBackupRecord;
  try {
    record = JSON.parse(text) as NodeBackupRecord;
  } catch {
    fail(where, `${BACKUP_DATA_KEY} is not JSON`);
  }
  if (record.version !== BACKUP_RECORD_VERSION) fail(where, `${BACKUP_DATA_KEY} has version ${String(record.version)}, this program reads ${BACKUP_RECORD_VERSION}`);
  if (record.runId !== expect.runId || record.node !== expect.node) {
    fail(where, `belongs to run "${record.runId}" node "${record.node}", expected run "${expect.runId}" node "${expect.node}"`);
  }
  const m = record.metadata;
  if (!m || typeof m.labels !== "object" || typeof m.annotations !== "object" || !Array.isArray(m.taints) || typeof m.unschedulable !== "boolean" || !record.nodeUid) {
    fail(where, `${BACKUP_DATA_KEY} is incomplete (labels, annotations, taints, unschedulable and nodeUid are required)`);
  }
  const phase = data?.[PHASE_DATA_KEY] as BackupPhase;
  if (!BACKUP_PHASES.includes(phase)) fail(where, `phase "${String(phase)}" is not one of ${BACKUP_PHASES.join(", ")}`);
  return { record: { ...record, daemonSets: record.daemonSets ?? [], daemonSetPodUids: record.daemonSetPodUids ?? [] }, phase };
}

/** Phases only move forward: a re-run of an earlier step must not set the record back. */
export function laterPhase(a: BackupPhase, b: BackupPhase): BackupPhase {
  return BACKUP_PHASES.indexOf(a) >= BACKUP_PHASES.indexOf(b) ? a : b;
}
