import { LENGTH_DELIMITED, readFields } from "./wireMessage";

/**
 * Where two encodings of one message differ, as field-number paths ("2.3" is field 3 inside field 2). Fields are
 * compared in order; a field in `nested` that differs is compared inside, any other difference is reported at its
 * own path. A rewrite is proven exact when every path reported is one it meant to change.
 */
export function changedPaths(before: Uint8Array, after: Uint8Array, nested: ReadonlySet<string>, at = ""): string[] {
  const a = readFields(before);
  const b = readFields(after);
  if (a.length !== b.length || a.some((f, i) => f.number !== b[i].number)) return [`${at || "(message)"}: field layout`];
  const changed: string[] = [];
  a.forEach((fa, i) => {
    const fb = b[i];
    const bytesA = before.subarray(fa.start, fa.end);
    const bytesB = after.subarray(fb.start, fb.end);
    if (Buffer.compare(bytesA, bytesB) === 0) return;
    const path = at ? `${at}.${fa.number}` : String(fa.number);
    if (nested.has(path) && fa.wireType === LENGTH_DELIMITED) {
      changed.push(...changedPaths(before.subarray(fa.payloadStart, fa.end), after.subarray(fb.payloadStart, fb.end), nested, path));
    } else {
      changed.push(path);
    }
  });
  return changed;
}
