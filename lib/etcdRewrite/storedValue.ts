import { editField, firstPayload, stringsOf } from "./wireMessage";

/**
 * How the apiserver stored one object in etcd, as found:
 * - protobuf: the "k8s\0" magic, then a runtime.Unknown {typeMeta = 1, raw = 2, contentEncoding = 3, contentType = 4}
 *   whose raw holds the object's own message (k8s.io/apimachinery/pkg/runtime/generated.proto);
 * - json: the object as JSON, written by Go's encoder (compact, HTML-escaped, "\n" at the end);
 * - encrypted: "k8s:enc:<provider>:..." from an EncryptionConfiguration, which this tool never decrypts;
 * - unknown: anything else.
 */

// built on each use, not held at module level: dynamic providers are serialized by value, and a Buffer does not survive it
const protobufMagic = () => Buffer.from([0x6b, 0x38, 0x73, 0x00]);
const ENCRYPTED_PREFIX = "k8s:enc:";

export type StoredValue =
  | { format: "protobuf"; apiVersion: string; kind: string; raw: Uint8Array }
  | { format: "json"; object: Record<string, unknown> }
  | { format: "encrypted"; provider: string }
  | { format: "unknown"; reason: string };

/** The same JSON text Go's encoding/json writes for this value (it escapes <, >, & and U+2028/2029). */
export function goJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029") + "\n";
}

export function readStoredValue(value: Buffer): StoredValue {
  const magic = protobufMagic();
  if (value.subarray(0, magic.length).equals(magic)) {
    const unknown = value.subarray(magic.length);
    const typeMeta = firstPayload(unknown, 1);
    const raw = firstPayload(unknown, 2);
    if (!typeMeta || !raw) return { format: "unknown", reason: "a protobuf envelope without typeMeta or raw" };
    const [apiVersion = "", kind = ""] = [stringsOf(typeMeta, 1)[0], stringsOf(typeMeta, 2)[0]];
    const encoding = stringsOf(unknown, 3)[0];
    if (encoding) return { format: "unknown", reason: `a protobuf envelope with contentEncoding ${JSON.stringify(encoding)}` };
    return { format: "protobuf", apiVersion, kind, raw };
  }
  const text = value.toString("utf8");
  if (text.startsWith(ENCRYPTED_PREFIX)) {
    return { format: "encrypted", provider: text.slice(ENCRYPTED_PREFIX.length).split(":")[0] ?? "" };
  }
  if (text.startsWith("{")) {
    let object: unknown;
    try {
      object = JSON.parse(text);
    } catch {
      return { format: "unknown", reason: "text that starts like JSON but does not parse" };
    }
    // A rewrite re-encodes the JSON; refuse any value whose re-encoding would differ in more than our fields.
    if (goJson(object) !== text) return { format: "unknown", reason: "JSON that does not re-encode to the same bytes (not written by the apiserver's encoder)" };
    return { format: "json", object: object as Record<string, unknown> };
  }
  return { format: "unknown", reason: `neither protobuf ("k8s\\0"), JSON nor encrypted (starts with ${JSON.stringify(text.slice(0, 8))})` };
}

/** The stored bytes with the object's message replaced, envelope fields (typeMeta, contentType) kept byte for byte. */
export function withRaw(value: Buffer, raw: Uint8Array): Buffer {
  const magic = protobufMagic();
  return Buffer.concat([magic, editField(value.subarray(magic.length), 2, () => raw)]);
}

export function withJson(object: unknown): Buffer {
  return Buffer.from(goJson(object), "utf8");
}
