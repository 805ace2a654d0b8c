import { Writer } from "protobufjs/minimal";
import { StoredValue, withJson, withRaw } from "./storedValue";
import { editField, firstPayload, readFields, stringsOf } from "./wireMessage";

/**
 * IPAddress objects (networking.k8s.io/v1, 1.33+): one per allocated ClusterIP, named by the address, whose parentRef
 * names the Service. A moved ClusterIP needs the object for its new address. It is made from the apiserver's own
 * object for the old address, so labels, parentRef, managedFields and the encoding stay exactly as the apiserver
 * wrote them; only name, uid and creationTimestamp are new. Field numbers: IPAddress {metadata = 1, spec = 2},
 * IPAddressSpec {parentRef = 1}, ParentReference {group = 1, resource = 2, namespace = 3, name = 4};
 * ObjectMeta {name = 1, uid = 5, creationTimestamp = 8}; Time {seconds = 1, nanos = 2}.
 */

const METADATA = 1;
const SPEC = 2;
const META = { name: 1, uid: 5, creationTimestamp: 8 };
const PARENT_REF = 1;
const PARENT = { group: 1, resource: 2, namespace: 3, name: 4 };
const TIME_NANOS = 2;

export interface ParentRef {
  group: string;
  resource: string;
  namespace: string;
  name: string;
}

export interface NewIdentity {
  name: string;
  uid: string;
  created: Date;
}

function timeMessage(created: Date, old: Uint8Array): Uint8Array {
  const writer = Writer.create().uint32(8).int64(Math.floor(created.getTime() / 1000));
  // keep the field layout the apiserver wrote: nanos present (as 0, the precision it stores) only where it was
  if (readFields(old).some((f) => f.number === TIME_NANOS)) writer.uint32(16).int32(0);
  return writer.finish();
}

/** RFC 3339 at whole seconds, as metav1.Time marshals to JSON. */
function rfc3339(created: Date): string {
  return created.toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function ipAddressFrom(value: Buffer, stored: StoredValue, identity: NewIdentity): Buffer {
  if (stored.format === "protobuf") {
    const raw = editField(stored.raw, METADATA, (meta) => {
      let next = editField(meta, META.name, () => Buffer.from(identity.name));
      next = editField(next, META.uid, () => Buffer.from(identity.uid));
      return editField(next, META.creationTimestamp, (old) => timeMessage(identity.created, old));
    });
    return withRaw(value, raw);
  }
  if (stored.format === "json") {
    const copy = structuredClone(stored.object) as { metadata: Record<string, unknown> };
    copy.metadata.name = identity.name;
    copy.metadata.uid = identity.uid;
    copy.metadata.creationTimestamp = rfc3339(identity.created);
    return withJson(copy);
  }
  throw new Error(`an IPAddress stored as ${stored.format} cannot be rewritten`);
}

export function parentRefOf(stored: StoredValue): ParentRef | undefined {
  if (stored.format === "protobuf") {
    const spec = firstPayload(stored.raw, SPEC);
    const ref = spec && firstPayload(spec, PARENT_REF);
    if (!ref) return undefined;
    const read = (n: number) => stringsOf(ref, n)[0] ?? "";
    return { group: read(PARENT.group), resource: read(PARENT.resource), namespace: read(PARENT.namespace), name: read(PARENT.name) };
  }
  if (stored.format === "json") {
    const ref = (stored.object as { spec?: { parentRef?: Partial<ParentRef> } }).spec?.parentRef;
    if (!ref) return undefined;
    return { group: ref.group ?? "", resource: ref.resource ?? "", namespace: ref.namespace ?? "", name: ref.name ?? "" };
  }
  return undefined;
}
