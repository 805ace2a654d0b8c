/**
 * The engine's placeholder for a value not known until `up`: pulumi/pulumi `sdk/go/common/resource/plugin`
 * UnknownStringValue, the same string as pulumi.runtime.unknownValue. It reaches us in three places: the
 * `pulumi preview --json` document the gate reads, the resources a policy pack sees, and the inputs a dynamic
 * provider's check and diff get during preview. One definition here serves all three.
 */
export const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** The value is the placeholder itself. */
export function isUnknown(value: unknown): boolean {
  return value === UNKNOWN_VALUE;
}

/** The placeholder is the value or anywhere inside it (array elements, object values): preview cannot judge it yet. */
export function containsUnknown(value: unknown): boolean {
  if (value === UNKNOWN_VALUE) return true;
  if (Array.isArray(value)) return value.some(containsUnknown);
  if (value !== null && typeof value === "object") return Object.values(value).some(containsUnknown);
  return false;
}
