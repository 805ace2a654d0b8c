import { Reader, Writer } from "protobufjs/minimal";

/**
 * A protobuf message as its sequence of fields, each with its exact byte span, so that a rewrite can replace the
 * few fields it means to change and copy every other byte as it was. No schema: field numbers come from the
 * caller (k8s.io/api's generated.proto).
 */

export const LENGTH_DELIMITED = 2;

export interface WireField {
  number: number;
  wireType: number;
  /** The field's first byte (its tag). */
  start: number;
  /** One past its last byte. */
  end: number;
  /** For length-delimited fields: where the payload starts (after tag and length). */
  payloadStart: number;
}

export function readFields(message: Uint8Array): WireField[] {
  const reader = Reader.create(message);
  const fields: WireField[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const number = tag >>> 3;
    const wireType = tag & 7;
    if (number === 0) throw new Error(`not a protobuf message: field number 0 at byte ${start}`);
    let payloadStart = reader.pos;
    if (wireType === LENGTH_DELIMITED) {
      const length = reader.uint32();
      payloadStart = reader.pos;
      if (payloadStart + length > reader.len) throw new Error(`not a protobuf message: field ${number} at byte ${start} runs past the end`);
      reader.pos = payloadStart + length;
    } else {
      reader.skipType(wireType);
    }
    fields.push({ number, wireType, start, end: reader.pos, payloadStart });
  }
  return fields;
}

export function payloadOf(message: Uint8Array, field: WireField): Uint8Array {
  return message.subarray(field.payloadStart, field.end);
}

export function stringOf(message: Uint8Array, field: WireField): string {
  return Buffer.from(payloadOf(message, field)).toString("utf8");
}

/** The payloads of every occurrence of a length-delimited field (a repeated field has one per entry). */
export function payloadsOf(message: Uint8Array, number: number): Uint8Array[] {
  return readFields(message)
    .filter((f) => f.number === number && f.wireType === LENGTH_DELIMITED)
    .map((f) => payloadOf(message, f));
}

export function stringsOf(message: Uint8Array, number: number): string[] {
  return payloadsOf(message, number).map((p) => Buffer.from(p).toString("utf8"));
}

export function firstPayload(message: Uint8Array, number: number): Uint8Array | undefined {
  return payloadsOf(message, number)[0];
}

export function lengthDelimited(number: number, payload: Uint8Array): Uint8Array {
  return Writer.create().uint32(((number << 3) | LENGTH_DELIMITED) >>> 0).bytes(payload).finish();
}

export function stringField(number: number, value: string): Uint8Array {
  return lengthDelimited(number, Buffer.from(value, "utf8"));
}

export function varintField(number: number, value: number): Uint8Array {
  return Writer.create().uint32((number << 3) >>> 0).int64(value).finish();
}

/**
 * What to do with one field: undefined keeps its bytes; a payload replaces it (same number, length-delimited);
 * null drops it.
 */
export type FieldEdit = (field: WireField, payload: Uint8Array) => Uint8Array | null | undefined;

/**
 * The message with `edit` applied field by field, in the original order. A replacement equal to the original
 * payload keeps the original bytes, so an edit that changes nothing returns a byte-identical message.
 */
export function rewriteFields(message: Uint8Array, edit: FieldEdit, appended: Uint8Array[] = []): Uint8Array {
  const parts: Uint8Array[] = [];
  let changed = appended.length > 0;
  for (const field of readFields(message)) {
    const original = message.subarray(field.start, field.end);
    const payload = field.wireType === LENGTH_DELIMITED ? payloadOf(message, field) : original;
    const replacement = edit(field, payload);
    if (replacement === undefined || (replacement !== null && Buffer.compare(replacement, payload) === 0)) {
      parts.push(original);
      continue;
    }
    changed = true;
    if (replacement !== null) parts.push(lengthDelimited(field.number, replacement));
  }
  return changed ? Buffer.concat([...parts, ...appended]) : message;
}

/** Applies `edit` to the payload of each occurrence of field `number` (a nested message or a string). */
export function editField(message: Uint8Array, number: number, edit: (payload: Uint8Array) => Uint8Array | null | undefined): Uint8Array {
  return rewriteFields(message, (field, payload) => (field.number === number && field.wireType === LENGTH_DELIMITED ? edit(payload) : undefined));
}

/** Replaces string values of field `number` through `map` (a value the map leaves alone keeps its bytes). */
export function editStrings(message: Uint8Array, number: number, map: (value: string) => string): Uint8Array {
  return editField(message, number, (payload) => {
    const value = Buffer.from(payload).toString("utf8");
    const next = map(value);
    return next === value ? undefined : Buffer.from(next, "utf8");
  });
}
