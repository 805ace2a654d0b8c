import { StoredValue, withJson, withRaw } from "./storedValue";
import { editField, editStrings, firstPayload, stringsOf } from "./wireMessage";

/**
 * String fields inside an object's spec (field 2 of every top-level kind here), named both ways: the protobuf
 * field number from k8s.io/api's generated.proto, and the JSON name.
 */
export interface SpecString {
  number: number;
  json: string;
}

const SPEC = 2;

export type JsonWithSpec = { spec?: Record<string, unknown> };

export function rewriteSpecMessage(raw: Uint8Array, fields: SpecString[], map: (value: string) => string): Uint8Array {
  return editField(raw, SPEC, (spec) => fields.reduce((message, field) => editStrings(message, field.number, map), spec));
}

export function rewriteSpecJson(object: JsonWithSpec, fields: SpecString[], map: (value: string) => string): JsonWithSpec {
  const copy = structuredClone(object) as JsonWithSpec;
  const spec = copy.spec;
  if (!spec) return copy;
  for (const field of fields) {
    const value = spec[field.json];
    if (typeof value === "string") spec[field.json] = map(value);
    else if (Array.isArray(value)) spec[field.json] = value.map((v) => (typeof v === "string" ? map(v) : v));
  }
  return copy;
}

/** The stored object with the named spec strings mapped; everything else copied. */
export function rewriteSpecStrings(value: Buffer, stored: StoredValue, fields: SpecString[], map: (value: string) => string): Buffer {
  if (stored.format === "protobuf") return withRaw(value, rewriteSpecMessage(stored.raw, fields, map));
  if (stored.format === "json") return withJson(rewriteSpecJson(stored.object as JsonWithSpec, fields, map));
  throw new Error(`an object stored as ${stored.format} cannot be rewritten`);
}

/** The values of one spec string field (all entries of a repeated one). */
export function specStrings(stored: StoredValue, field: SpecString): string[] {
  if (stored.format === "protobuf") {
    const spec = firstPayload(stored.raw, SPEC);
    return spec ? stringsOf(spec, field.number) : [];
  }
  if (stored.format === "json") {
    const value = (stored.object as JsonWithSpec).spec?.[field.json];
    if (typeof value === "string") return [value];
    if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string");
  }
  return [];
}
