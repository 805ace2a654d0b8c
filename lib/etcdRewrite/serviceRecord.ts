import { correctIpAnnotations } from "../serviceMove/ipAnnotations";
import { AddressChange, mapThrough } from "./addressChange";
import { JsonWithSpec, rewriteSpecJson, rewriteSpecMessage, SpecString, specStrings } from "./specStrings";
import { StoredValue, withJson, withRaw } from "./storedValue";
import { editField, editStrings, stringsOf } from "./wireMessage";

/**
 * A stored Service with its ClusterIPs moved in place. Field numbers from k8s.io/api core/v1 generated.proto:
 * Service {metadata = 1, spec = 2}; ObjectMeta.annotations = 12 (entries {key = 1, value = 2});
 * ServiceSpec {clusterIP = 3, clusterIPs = 18}. The annotations change as the re-create strategy changes them
 * (lib/serviceMove/ipAnnotations.ts). Every other byte is copied.
 */

const METADATA = 1;
const ANNOTATIONS = 12;
const MAP_ENTRY = { key: 1, value: 2 };
const CLUSTER_IP: SpecString = { number: 3, json: "clusterIP" };
const CLUSTER_IPS: SpecString = { number: 18, json: "clusterIPs" };

function correctedAnnotation(key: string, value: string, changes: AddressChange[]): string {
  let corrected = value;
  for (const change of changes) {
    corrected = correctIpAnnotations({ [key]: corrected }, change.from, change.to).annotations[key];
  }
  return corrected;
}

function rewriteAnnotationsMessage(raw: Uint8Array, changes: AddressChange[]): Uint8Array {
  return editField(raw, METADATA, (meta) =>
    editField(meta, ANNOTATIONS, (entry) => {
      const key = stringsOf(entry, MAP_ENTRY.key)[0] ?? "";
      return editStrings(entry, MAP_ENTRY.value, (value) => correctedAnnotation(key, value, changes));
    }),
  );
}

type JsonMeta = { metadata?: { annotations?: Record<string, string> } };

function rewriteAnnotationsJson(object: JsonMeta, changes: AddressChange[]): JsonMeta {
  const copy = structuredClone(object) as JsonMeta;
  const annotations = copy.metadata?.annotations;
  if (annotations) {
    for (const key of Object.keys(annotations)) annotations[key] = correctedAnnotation(key, annotations[key], changes);
  }
  return copy;
}

export function rewriteService(value: Buffer, stored: StoredValue, changes: AddressChange[]): Buffer {
  const map = mapThrough(changes);
  if (stored.format === "protobuf") {
    return withRaw(value, rewriteSpecMessage(rewriteAnnotationsMessage(stored.raw, changes), [CLUSTER_IP, CLUSTER_IPS], map));
  }
  if (stored.format === "json") {
    const annotated = rewriteAnnotationsJson(stored.object as JsonMeta, changes) as JsonWithSpec;
    return withJson(rewriteSpecJson(annotated, [CLUSTER_IP, CLUSTER_IPS], map));
  }
  throw new Error(`a Service stored as ${stored.format} cannot be rewritten`);
}

/** The Service's ClusterIPs as stored (clusterIPs, else clusterIP; none for headless and ExternalName). */
export function storedClusterIPs(stored: StoredValue): string[] {
  const listed = specStrings(stored, CLUSTER_IPS);
  const ips = listed.length > 0 ? listed : specStrings(stored, CLUSTER_IP);
  return ips.filter((ip) => ip !== "" && ip !== "None");
}
