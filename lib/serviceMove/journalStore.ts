import { randomBytes } from "crypto";
import {
  entriesFromSecret, entryDataKey, JOURNAL_LABEL, JOURNAL_LABEL_VALUE, JournalEntry, packJournal, withEntries,
} from "./journal";
import { isStatus, KubeRest, retryTransient } from "./kubeRest";
import { retryOnConflict } from "./retryOnConflict";
import { serviceRefKey } from "./serviceRef";

/**
 * The journal in the cluster: which Secret holds which Service's entry, and the writes that keep it so. Each
 * Service has at most one entry in one Secret. Entries are written in packs before the first delete, rewritten
 * one at a time when a move learns something new (the Service was edited meanwhile), and removed in one write
 * per Secret once their moves are verified.
 */

export interface JournalStore {
  /** Every entry found, by "namespace/name". */
  entries: Map<string, JournalEntry>;
  /** "journal Secret <namespace>/<name>" holding the Service's entry, for messages. */
  where(key: string): string;
  /** Writes entries of Services that have none yet in packs, and rewrites the others where they are. */
  writeAll(entries: JournalEntry[]): Promise<void>;
  /** Writes (or rewrites) one entry. */
  write(entry: JournalEntry): Promise<void>;
  /** Removes the entries of these Services; a Secret left empty is deleted. */
  remove(keys: string[]): Promise<void>;
}

export async function loadJournal(rest: KubeRest, namespace: string): Promise<JournalStore> {
  const collection = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  const secrets = await rest.list(collection, { labelSelector: `${JOURNAL_LABEL}=${JOURNAL_LABEL_VALUE}` });
  const entries = new Map<string, JournalEntry>();
  /** Service key → name of the Secret holding its entry. */
  const holder = new Map<string, string>();
  for (const secret of secrets) {
    for (const entry of entriesFromSecret(secret)) {
      const key = serviceRefKey(entry);
      entries.set(key, entry);
      holder.set(key, secret.metadata!.name!);
    }
  }
  const token = randomBytes(4).toString("hex");
  let packs = 0;

  /** Read-modify-write of one Secret, again on a conflict with a concurrent writer; false when it is gone. */
  async function rewrite(name: string, set: JournalEntry[], removeKeys: string[]): Promise<boolean> {
    const path = `${collection}/${encodeURIComponent(name)}`;
    return retryOnConflict(9, () => retryTransient(async () => {
      const secret = await rest.getOptional(path);
      if (!secret) return false;
      const updated = withEntries(secret, set, removeKeys);
      if (Object.keys(updated.data as object).length === 0) {
        await rest.delete(path, { preconditions: { resourceVersion: secret.metadata?.resourceVersion } }).catch((err) => { if (!isStatus(err, 404)) throw err; });
      } else {
        await rest.replace(path, updated);
      }
      return true;
    }));
  }

  const store: JournalStore = {
    entries,
    where: (key) => `journal Secret ${namespace}/${holder.get(key) ?? "(not written)"}`,
    async writeAll(all) {
      const fresh = all.filter((e) => !holder.has(serviceRefKey(e)));
      const existing = all.filter((e) => holder.has(serviceRefKey(e)));
      const secrets = packJournal(fresh, namespace, `${token}-${packs++}`);
      await Promise.all(secrets.map((secret) => retryTransient(async () => {
        try {
          await rest.create(collection, secret);
        } catch (err) {
          // a create whose answer was lost: the Secret is there, with exactly this name (the token is this run's)
          if (!isStatus(err, 409)) throw err;
        }
      })));
      const byDataKey = new Map(fresh.map((e) => [entryDataKey(e.namespace, e.name), e]));
      for (const secret of secrets) {
        for (const dataKey of Object.keys(secret.data as object)) holder.set(serviceRefKey(byDataKey.get(dataKey)!), secret.metadata!.name!);
      }
      const bySecret = groupBy(existing, (e) => holder.get(serviceRefKey(e))!);
      const gone = await Promise.all([...bySecret].map(async ([name, set]) => ((await rewrite(name, set, [])) ? [] : set)));
      for (const e of all) entries.set(serviceRefKey(e), e);
      // Secrets removed meanwhile (by hand?): their entries go into a new pack
      const orphans = gone.flat();
      for (const e of orphans) holder.delete(serviceRefKey(e));
      if (orphans.length > 0) await store.writeAll(orphans);
    },
    async write(entry) {
      await store.writeAll([entry]);
    },
    async remove(keys) {
      const held = keys.filter((key) => holder.has(key));
      const bySecret = groupBy(held, (key) => holder.get(key)!);
      await Promise.all([...bySecret].map(([name, heldKeys]) => rewrite(name, [], heldKeys.map((key) => {
        const [namespace_, name_] = key.split("/");
        return entryDataKey(namespace_, name_);
      }))));
      for (const key of keys) {
        holder.delete(key);
        entries.delete(key);
      }
    },
  };
  return store;
}

/** Items grouped by `keyOf`, in their order; linear (a pack holds up to a hundred entries, a run thousands). */
function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}
