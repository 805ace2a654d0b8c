/**
 * What the program plans from: the live cluster, except while an etcd rewrite is under way.
 *
 * The rewrite flips every Service's and Node's address at once, while the apiservers are stopped. A re-run after a
 * kill in that window finds no API to discover, and a re-run after it finds a cluster with nothing left to move,
 * although the nodes have not restarted yet. Both must plan the run as it began, or its done steps would change
 * (and the rewrite refuse to run again while the API answers) and the nodes never roll. So the first `up` of a
 * rewrite records the cluster beside the snapshot (lib/plan/discoveryRecord.ts), and a later run of the same
 * snapshot.trigger plans from that record when the live cluster has no API or nothing left to move.
 */
import { KubeConfig } from "@kubernetes/client-node";
import * as pulumi from "@pulumi/pulumi";
import { UnreachableError, UserError } from "../lib/config/errors";
import { readConfigMapData } from "../lib/config/kubeClient";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { expandHome } from "../lib/config/paths";
import { discoverInventory } from "../lib/plan/discovery";
import { DiscoveryRecord, discoveryRecordPath, loadDiscoveryRecord, saveDiscoveryRecord } from "../lib/plan/discoveryRecord";
import { Inventory } from "../lib/plan/inventory";
import { buildPlan } from "../lib/plan/plan";
import { ConfigMapReader } from "./liveConfigMaps";
import { readStackConfig } from "./stackConfig";

export interface RunDiscovery {
  inventory: Inventory;
  /** The cluster did not answer: a re-run inside an etcd rewrite's window, planned from the record. */
  apiWasDown: boolean;
  reader: ConfigMapReader;
  /** Call once the graph is declared: records the cluster when this `up` planned from it live. */
  finish: () => Promise<void>;
}

function hasMoves(inventory: Inventory): boolean {
  try {
    const plan = buildPlan(readStackConfig({ inventory }), inventory);
    return plan.services.some((s) => s.action === "recreate") || plan.nodes.some((n) => n.action === "move");
  } catch {
    return true; // the program refuses it with its own message
  }
}

function fromRecord(record: DiscoveryRecord, file: string, why: string, apiWasDown: boolean): RunDiscovery {
  void pulumi.log.info(`${why}: planning run "${record.trigger}" from the cluster as it was at ${record.writtenAt} (${file})`);
  const reader: ConfigMapReader = async (namespace, name) => {
    const key = `${namespace}/${name}`;
    if (!(key in record.configMaps)) throw new UserError(`ConfigMap ${key} is not in ${file}, and the cluster cannot be read now; start the apiservers or re-run once they answer`);
    return record.configMaps[key] ?? undefined;
  };
  return { inventory: record.inventory, apiWasDown, reader, finish: async () => undefined };
}

export async function discoverForRun(kc: KubeConfig, config: MigrationConfig): Promise<RunDiscovery> {
  const liveReader: ConfigMapReader = (namespace, name) => readConfigMapData(kc, namespace, name);
  if (config.services.strategy !== "etcd-rewrite") {
    return { inventory: await discoverInventory(kc), apiWasDown: false, reader: liveReader, finish: async () => undefined };
  }
  const file = discoveryRecordPath(expandHome(config.snapshot.directory), config.snapshot.trigger);
  const record = loadDiscoveryRecord(file, config.snapshot.trigger);
  let live: Inventory;
  try {
    live = await discoverInventory(kc);
  } catch (err) {
    if (record && err instanceof UnreachableError) return fromRecord(record, file, `the cluster does not answer (${err.message}); a run stopped the apiservers for the etcd rewrite`, true);
    throw err;
  }
  if (record && !hasMoves(live)) return fromRecord(record, file, "the cluster has nothing left to move: the etcd rewrite is done, the rest of the run goes on", false);

  // live: each ConfigMap read is kept, and an `up` records them with the inventory once the graph is declared
  const reads = new Map<string, Promise<Record<string, string> | undefined>>();
  const reader: ConfigMapReader = (namespace, name) => {
    const key = `${namespace}/${name}`;
    if (!reads.has(key)) reads.set(key, liveReader(namespace, name));
    return reads.get(key)!;
  };
  const finish = async () => {
    if (pulumi.runtime.isDryRun()) return;
    const configMaps: DiscoveryRecord["configMaps"] = {};
    for (const [key, read] of reads) configMaps[key] = (await read.catch(() => undefined)) ?? null;
    saveDiscoveryRecord(file, { trigger: config.snapshot.trigger, writtenAt: new Date().toISOString(), inventory: live, configMaps });
  };
  return { inventory: live, apiWasDown: false, reader, finish };
}
