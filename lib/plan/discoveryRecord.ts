import * as fs from "fs";
import * as path from "path";
import { Inventory } from "./inventory";

/**
 * The cluster as the last `pulumi up` of an etcd rewrite discovered it, kept beside the snapshot: the inventory and
 * the system ConfigMaps the graph edits. A run killed between the apiservers' stop and their start leaves no API
 * to discover; the re-run plans from this record instead, so the graph is the same as before the kill, its done steps
 * change nothing, and the start brings the API back. The rewrite itself still checks what etcd holds before writing.
 */

export interface DiscoveryRecord {
  trigger: string;
  writtenAt: string;
  inventory: Inventory;
  /** "namespace/name" → data; null when the ConfigMap did not exist. */
  configMaps: Record<string, Record<string, string> | null>;
}

export function discoveryRecordPath(directory: string, trigger: string): string {
  return path.join(directory, `cluster-${trigger}.json`);
}

/** Written through a temp file and a rename, so a kill never leaves half a record. */
export function saveDiscoveryRecord(file: string, record: DiscoveryRecord): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** The record for `trigger`, or undefined when there is none (or it belongs to another run). */
export function loadDiscoveryRecord(file: string, trigger: string): DiscoveryRecord | undefined {
  let record: DiscoveryRecord;
  try {
    record = JSON.parse(fs.readFileSync(file, "utf8")) as DiscoveryRecord;
  } catch {
    return undefined;
  }
  return record.trigger === trigger && record.inventory && record.configMaps ? record : undefined;
}
