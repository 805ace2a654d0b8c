/**
 * What the program plans from: the live cluster until a run has begun, then the cluster as that run found it.
 *
 * Once an `up` of a snapshot.trigger has passed its preflight, it records the cluster beside the snapshot
 * (lib/plan/discoveryRecord.ts). A later run of the same trigger is that run resumed, and plans from the record:
 * - recreate: always. A re-plan from the live cluster would see the moved Services and nodes as done and change
 *   the inputs of steps already applied (the kubernetes Service's move, verify's plan), so the resumed run and its
 *   preview would no longer be the change that was reviewed: `fleet up` refuses such a stack (found on the node
 *   lab). The moves themselves still read the live cluster, and finish or skip what is done. Objects created since
 *   are not in the plan: verify reports them, and a new trigger plans afresh.
 * - etcd-rewrite: when the live cluster has no API (killed between the stop and the start) or nothing left to
 *   move (after the rewrite, before the nodes roll): the rewrite flips every address at once while the apiservers
 *   are stopped, so both re-runs must plan the run as it began.
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
  /** Call once the graph is declared: records the cluster once this `up`, planned from it live, passes `preflight`. */
  finish: (preflightPassed: pulumi.Output<unknown>) => void;
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
  return { inventory: record.inventory, apiWasDown, reader, finish: () => undefined };
}

export async function discoverForRun(kc: KubeConfig, config: MigrationConfig): Promise<RunDiscovery> {
  const liveReader: ConfigMapReader = (namespace, name) => readConfigMapData(kc, namespace, name);
  const file = discoveryRecordPath(expandHome(config.snapshot.directory), config.snapshot.trigger);
  const record = loadDiscoveryRecord(file, config.snapshot.trigger);
  if (record && config.services.strategy !== "etcd-rewrite") {
    return fromRecord(record, file, `run "${config.snapshot.trigger}" began already (change cidr-migration:snapshot.trigger to plan afresh)`, false);
  }
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
  const finish = (preflightPassed: pulumi.Output<unknown>) => {
    if (pulumi.runtime.isDryRun()) return;
    // not before: a run that preflight stopped changed nothing, and its re-run plans from the cluster as fixed
    preflightPassed.apply(async () => {
      const configMaps: DiscoveryRecord["configMaps"] = {};
      for (const [key, read] of reads) configMaps[key] = (await read.catch(() => undefined)) ?? null;
      saveDiscoveryRecord(file, { trigger: config.snapshot.trigger, writtenAt: new Date().toISOString(), inventory: live, configMaps });
    });
  };
  return { inventory: live, apiWasDown: false, reader, finish };
}
