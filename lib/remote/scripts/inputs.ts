/**
 * Validation of generator inputs. A bad input fails at generation time (during `pulumi preview`), with one line
 * naming the field, the bad value and what to pass instead, never as a broken script on a node.
 * Secret inputs are validated with `hidden` so their value never appears in a message.
 */
import { UserError } from "../../config/errors";
import { checkHostPath } from "../remoteScript";

export function nodePath(value: string, field: string): string {
  try {
    return checkHostPath(value, field);
  } catch (error) {
    throw new UserError((error as Error).message);
  }
}

/** A path two steps agree on must not be `/` or sit inside another directory the step copies or deletes. */
export function notInside(path: string, field: string, other: string, otherField: string): void {
  if (path === "/" || path === other || path.startsWith(`${other}/`) || other.startsWith(`${path}/`)) {
    throw new UserError(`${field} "${path}" must not be / or overlap ${otherField} "${other}"; pick a separate directory such as /var/backups/cidr-migration/<date>`);
  }
}

export function sha256Hex(value: string, field: string): string {
  if (!/^[0-9a-f]{64}$/.test(value)) throw new UserError(`${field} "${value}" is not a sha256 (64 lower-case hex digits); pass the hash of the file content`);
  return value;
}

export function canonicalBase64(value: string, field: string): Buffer {
  const bytes = Buffer.from(value, "base64");
  if (bytes.toString("base64") !== value) throw new UserError(`${field} is not canonical base64; encode the content with Buffer.from(text).toString("base64")`);
  return bytes;
}

export function positiveInteger(value: number, field: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new UserError(`${field} ${value} is not a positive whole number of seconds; pass e.g. 300`);
  return value;
}

export function matching(value: string, pattern: RegExp, field: string, expected: string, hidden = false): string {
  if (!pattern.test(value)) throw new UserError(`${field} ${hidden ? "(value hidden)" : `"${value}"`} is not ${expected}`);
  return value;
}

export function oneOf<T extends string>(value: string, allowed: readonly T[], field: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new UserError(`${field} "${value}" is not one of ${allowed.join(", ")}`);
  return value as T;
}
