import { createHash } from "crypto";
import { KubeObject } from "./kubeRest";

/**
 * The journal of a Service move: the original objects, written durably before anything is deleted.
 *
 * Where: one Secret per moving Service in the cluster itself (default namespace kube-system), not a file on the
 * machine running `pulumi up`. The apiserver answers a create only after etcd has committed it (a quorum,
 * fsynced), so the entry outlives this process and this machine: a re-run from a CI runner or a colleague's
 * laptop finds it. A Secret rather than a ConfigMap because the journal holds whole objects that depend on the
 * Service, of any kind; it must not widen who can read them.
 *
 * What: the Service exactly as read, its hand-made Endpoints (selector-less Services: v1.20 deletes them with
 * the Service), every object that names the Service or those Endpoints as owner (the garbage collector would
 * delete them), the planned IP, and for the DNS swap the stand-in Service to remove just before the create.
 * The entry is removed only after the re-created Service and everything restored were verified.
 *
 * Names are a hash of namespace/name (a Secret name is at most 253 characters, a Service key can be longer);
 * the key itself is in an annotation and in the entry.
 */

export const JOURNAL_FORMAT = "cidr-migration.io/service-move/v1";
export const JOURNAL_LABEL = "cidr-migration.io/journal";
export const JOURNAL_LABEL_VALUE = "service-move";
export const JOURNAL_SERVICE_ANNOTATION = "cidr-migration.io/service";
export const JOURNAL_SECRET_TYPE = "cidr-migration.io/journal";
export const JOURNAL_DATA_KEY = "entry.json";
export const DEFAULT_JOURNAL_NAMESPACE = "kube-system";
/** A Secret holds at most 1 MiB; leave room for metadata. */
const MAX_ENTRY_BYTES = 900 * 1024;

export type MoveKind = "recreate" | "apiserver-recreates";

export interface JournalEntry {
  format: typeof JOURNAL_FORMAT;
  kind: MoveKind;
  namespace: string;
  name: string;
  fromIP: string;
  toIP: string;
  /** ISO time the entry was first written. */
  recordedAt: string;
  /** The Service as read from the apiserver before the move. */
  service: KubeObject;
  /** Its Endpoints when the Service has no selector (hand-made, not re-created by any controller). */
  endpoints?: KubeObject;
  /** Objects whose ownerReferences name the Service or its Endpoints, as they were before the move. */
  dependents: JournaledDependent[];
  /** A Service (the DNS stand-in) that holds toIP and goes just before the create. */
  vacate?: { namespace: string; name: string; service?: KubeObject };
}

export interface JournaledDependent {
  /** REST path of the object's collection, e.g. /apis/example.com/v1/namespaces/ns/widgets. */
  collection: string;
  object: KubeObject;
}

export function serviceKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function journalName(namespace: string, name: string): string {
  return `cidr-migration-svc-${createHash("sha256").update(serviceKey(namespace, name)).digest("hex").slice(0, 24)}`;
}

export function journalSecret(entry: JournalEntry, journalNamespace: string, resourceVersion?: string): KubeObject {
  const json = JSON.stringify(entry);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_ENTRY_BYTES) {
    throw new Error(`Service ${serviceKey(entry.namespace, entry.name)}: its journal entry would be ${bytes} bytes, more than a Secret can hold; nothing was changed. Move it by hand, or remove large annotations first`);
  }
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: JOURNAL_SECRET_TYPE,
    metadata: {
      name: journalName(entry.namespace, entry.name),
      namespace: journalNamespace,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: { [JOURNAL_LABEL]: JOURNAL_LABEL_VALUE, "app.kubernetes.io/managed-by": "cidr-migration" },
      annotations: { [JOURNAL_SERVICE_ANNOTATION]: serviceKey(entry.namespace, entry.name) },
    },
    data: { [JOURNAL_DATA_KEY]: Buffer.from(json).toString("base64") },
  };
}

/** Reads an entry back; a Secret that is not one of ours, or of another format version, is an error. */
export function entryFromSecret(secret: KubeObject): JournalEntry {
  const where = `journal Secret ${secret.metadata?.namespace}/${secret.metadata?.name}`;
  const data = (secret.data ?? {}) as Record<string, string>;
  const encoded = data[JOURNAL_DATA_KEY];
  if (typeof encoded !== "string") throw new Error(`${where} has no ${JOURNAL_DATA_KEY}; it was not written by cidr-migration, leave it and check by hand`);
  let entry: JournalEntry;
  try {
    entry = JSON.parse(Buffer.from(encoded, "base64").toString("utf8")) as JournalEntry;
  } catch {
    throw new Error(`${where}: ${JOURNAL_DATA_KEY} is not JSON; it holds the original Service, recover it by hand`);
  }
  if (entry.format !== JOURNAL_FORMAT) {
    throw new Error(`${where} has format ${JSON.stringify(entry.format)}, this cidr-migration reads ${JOURNAL_FORMAT}; finish it with the version that wrote it`);
  }
  return entry;
}
