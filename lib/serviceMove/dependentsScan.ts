import { JournaledDependent } from "./journal";
import { KubeObject, KubeRest } from "./kubeRest";
import { isRederivedByController } from "./dependents";

/**
 * Finds the objects the garbage collector would delete along with the moving Services: any namespaced object,
 * of any kind the apiserver serves, whose ownerReferences name one of the given uids. It asks the way the
 * garbage collector itself knows about kinds (API discovery), and lists each kind once for the whole cluster as
 * metadata only; only the few matches are read in full (for the journal).
 *
 * Events are skipped: they point at objects through involvedObject, never through ownerReferences, and are the
 * largest lists. A kind that cannot be listed (an aggregated API that is down) becomes a warning naming it.
 */

export interface ResourceType {
  /** "" for the core group. */
  group: string;
  version: string;
  /** Plural resource name, e.g. "configmaps". */
  resource: string;
  kind: string;
}

interface ApiResource { name: string; namespaced: boolean; kind: string; verbs: string[] }
interface ApiGroup { name: string; preferredVersion?: { groupVersion: string; version: string } }

const SKIPPED = ["events", "events.events.k8s.io"];

function groupVersionPath(group: string, version: string): string {
  return group === "" ? `/api/${version}` : `/apis/${group}/${version}`;
}

export function collectionPath(type: ResourceType, namespace?: string): string {
  const base = groupVersionPath(type.group, type.version);
  return namespace === undefined ? `${base}/${type.resource}` : `${base}/namespaces/${encodeURIComponent(namespace)}/${type.resource}`;
}

function usable(r: ApiResource, group: string): boolean {
  const key = group === "" ? r.name : `${r.name}.${group}`;
  return r.namespaced && !r.name.includes("/") && !SKIPPED.includes(key) && ["list", "get", "patch"].every((v) => r.verbs.includes(v));
}

/** Every namespaced kind that can be listed and patched, at its group's preferred version. */
export async function namespacedResourceTypes(rest: KubeRest): Promise<{ types: ResourceType[]; warnings: string[] }> {
  const warnings: string[] = [];
  const groups = ((await rest.get("/apis")).groups ?? []) as ApiGroup[];
  const versions: Array<{ group: string; version: string }> = [
    { group: "", version: "v1" },
    ...groups.filter((g) => g.preferredVersion).map((g) => ({ group: g.name, version: g.preferredVersion!.version })),
  ];
  const lists = await Promise.all(versions.map(async ({ group, version }) => {
    try {
      const list = await rest.get(groupVersionPath(group, version));
      return ((list.resources ?? []) as ApiResource[]).filter((r) => usable(r, group)).map((r) => ({ group, version, resource: r.name, kind: r.kind }));
    } catch (err) {
      warnings.push(`could not discover ${group || "core"}/${version} (${(err as Error).message.split("\n")[0]}); objects of its kinds owned by a moving Service were not checked`);
      return [];
    }
  }));
  return { types: lists.flat(), warnings };
}

/**
 * Objects in `namespaces` owned by any of `ownerUids`, except those a controller derives again by itself.
 * Keyed by owner uid. The same object served by two groups (e.g. Ingress in extensions and networking.k8s.io)
 * is reported once.
 */
export async function findOwnedObjects(rest: KubeRest, namespaces: ReadonlySet<string>, ownerUids: ReadonlySet<string>): Promise<{ byOwner: Map<string, JournaledDependent[]>; warnings: string[] }> {
  const { types, warnings } = await namespacedResourceTypes(rest);
  const seen = new Set<string>();
  const matches: Array<{ type: ResourceType; namespace: string; name: string }> = [];
  await Promise.all(types.map(async (type) => {
    let items: KubeObject[];
    try {
      items = await rest.listMetadata(collectionPath(type));
    } catch (err) {
      warnings.push(`could not list ${type.resource}${type.group ? `.${type.group}` : ""} (${(err as Error).message.split("\n")[0]}); those owned by a moving Service were not checked`);
      return;
    }
    for (const item of items) {
      const meta = item.metadata ?? {};
      if (!meta.namespace || !namespaces.has(meta.namespace)) continue;
      if (!(meta.ownerReferences ?? []).some((ref) => ownerUids.has(ref.uid))) continue;
      if (isRederivedByController({ kind: type.kind, metadata: meta })) continue;
      if (meta.uid && seen.has(meta.uid)) continue;
      if (meta.uid) seen.add(meta.uid);
      matches.push({ type, namespace: meta.namespace, name: meta.name as string });
    }
  }));
  const byOwner = new Map<string, JournaledDependent[]>();
  await Promise.all(matches.map(async ({ type, namespace, name }) => {
    const collection = collectionPath(type, namespace);
    const object = await rest.getOptional(`${collection}/${encodeURIComponent(name)}`);
    if (!object) return; // gone since the list
    for (const uid of new Set((object.metadata?.ownerReferences ?? []).map((ref) => ref.uid))) {
      if (!ownerUids.has(uid)) continue;
      byOwner.set(uid, [...(byOwner.get(uid) ?? []), { collection, object }]);
    }
  }));
  return { byOwner, warnings };
}
