import { createHash } from "crypto";
import { KubeObject } from "./kubeRest";
import { FamilyMove } from "./moveTypes";
import { serviceRefKey } from "./serviceRef";

/**
 * The journal of a Service move: the original objects, written durably before anything is deleted.
 *
 * Where: Secrets in the cluster itself (default namespace kube-system), not a file on the machine running
 * `pulumi up`. The apiserver answers a create only after etcd has committed it (a quorum,
 * fsynced), so the entry outlives this process and this machine: a re-run from a CI runner or a colleague's
 * laptop finds it. A Secret rather than a ConfigMap because the journal holds whole objects that depend on the
 * Service, of any kind; it must not widen who can read them.
 *
 * What: the Service exactly as read, its hand-made Endpoints (selector-less Services: v1.20 deletes them with
 * the Service), every object that names the Service or those Endpoints as owner (the garbage collector would
 * delete them), the planned IP, and for the DNS swap the stand-in Service to remove just before the create.
 * The entry is removed only after the re-created Service and everything restored were verified.
 *
 * Entries are packed several to a Secret (see packJournal); each is under a data key hashed from namespace/name
 * (a data key is at most 253 characters, a Service key can be longer), and names its Service itself.
 */

export const JOURNAL_FORMAT = "cidr-migration.io/service-move/v1";
export const JOURNAL_LABEL = "cidr-migration.io/journal";
export const JOURNAL_LABEL_VALUE = "service-move";
export const JOURNAL_SECRET_TYPE = "cidr-migration.io/journal";
export const DEFAULT_JOURNAL_NAMESPACE = "kube-system";
/** A Secret holds at most 1 MiB of data, base64-encoded here: about 760 KiB of JSON, less some room for metadata. */
const MAX_ENTRY_BYTES = 700 * 1024;
const MAX_SECRET_BYTES = 700 * 1024;
const MAX_ENTRIES_PER_SECRET = 100;

export type MoveKind = "recreate" | "apiserver-recreates";

export interface JournalEntry {
  format: typeof JOURNAL_FORMAT;
  kind: MoveKind;
  namespace: string;
  name: string;
  fromIP: string;
  toIP: string;
  /** A dual-stack Service's second ClusterIP and where it goes. */
  otherFamily?: FamilyMove;
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


export function journalName(namespace: string, name: string): string {
  return `cidr-migration-svc-${createHash("sha256").update(serviceRefKey({ namespace, name })).digest("hex").slice(0, 24)}`;
}

/** The data key of a Service's entry inside a journal Secret. */
export function entryDataKey(namespace: string, name: string): string {
  return `${journalName(namespace, name)}.json`;
}

function encodedSize(entry: JournalEntry): { json: string; bytes: number } {
  const json = JSON.stringify(entry);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_ENTRY_BYTES) {
    throw new Error(`Service ${serviceRefKey(entry)}: its journal entry would be ${bytes} bytes, more than a Secret can hold; nothing was changed. Move it by hand, or remove large annotations first`);
  }
  return { json, bytes };
}

/**
 * Packs entries into as few Secrets as fit (at most MAX_SECRET_BYTES of JSON and MAX_ENTRIES_PER_SECRET entries
 * each): 500 moves are journaled with a handful of writes instead of 500, which is most of a run's API load
 * besides the moves themselves. Names are `cidr-migration-journal-<token>-<n>`; the token is per run.
 */
export function packJournal(entries: JournalEntry[], journalNamespace: string, token: string): KubeObject[] {
  const secrets: KubeObject[] = [];
  let data: Record<string, string> = {};
  let bytes = 0;
  const flush = () => {
    if (Object.keys(data).length === 0) return;
    secrets.push(journalSecret(`cidr-migration-journal-${token}-${secrets.length}`, journalNamespace, data));
    data = {};
    bytes = 0;
  };
  for (const entry of entries) {
    const encoded = encodedSize(entry);
    if (bytes + encoded.bytes > MAX_SECRET_BYTES || Object.keys(data).length >= MAX_ENTRIES_PER_SECRET) flush();
    data[entryDataKey(entry.namespace, entry.name)] = Buffer.from(encoded.json).toString("base64");
    bytes += encoded.bytes;
  }
  flush();
  return secrets;
}

export function journalSecret(name: string, journalNamespace: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: JOURNAL_SECRET_TYPE,
    metadata: {
      name,
      namespace: journalNamespace,
      labels: { [JOURNAL_LABEL]: JOURNAL_LABEL_VALUE, "app.kubernetes.io/managed-by": "cidr-migration" },
    },
    data,
  };
}

/** The same Secret with `entries` written into it and the entries under `removeKeys` taken out. */
export function withEntries(secret: KubeObject, entries: JournalEntry[], removeKeys: string[] = []): KubeObject {
  const data: Record<string, string> = { ...((secret.data ?? {}) as Record<string, string>) };
  for (const key of removeKeys) delete data[key];
  for (const entry of entries) data[entryDataKey(entry.namespace, entry.name)] = Buffer.from(encodedSize(entry).json).toString("base64");
  return { ...secret, data };
}

/** Reads a journal Secret's entries; a Secret that is not one of ours, or of another format version, is an error. */
export function entriesFromSecret(secret: KubeObject): JournalEntry[] {
  const where = `journal Secret ${secret.metadata?.namespace}/${secret.metadata?.name}`;
  const data = (secret.data ?? {}) as Record<string, string>;
  const keys = Object.keys(data);
  if (keys.length === 0 || keys.some((k) => !k.endsWith(".json"))) {
    throw new Error(`${where} is labelled ${JOURNAL_LABEL}=${JOURNAL_LABEL_VALUE} but holds no journal entries; it was not written by cidr-migration: remove the label or the Secret`);
  }
  return keys.map((key) => {
    let entry: JournalEntry;
    try {
      entry = JSON.parse(Buffer.from(data[key], "base64").toString("utf8")) as JournalEntry;
    } catch {
      throw new Error(`${where}: ${key} is not JSON; it holds an original Service, recover it by hand`);
    }
    if (entry.format !== JOURNAL_FORMAT) {
      throw new Error(`${where} has format ${JSON.stringify(entry.format)}, this cidr-migration reads ${JOURNAL_FORMAT}; finish it with the version that wrote it`);
    }
    return entry;
  });
}
