/**
 * Whole-address replacement in opaque text: each occurrence of the exact old IP as a whole address becomes the new
 * one ("10.96.0.1" inside "10.96.0.10" is not an occurrence; "[fd00::1]:53" and "https://10.0.0.5:6443" are). Used
 * for a moved Service's annotations and a node's own files after its address change.
 */
function isAddressChar(code: number, ipv6: boolean): boolean {
  const digit = code >= 48 && code <= 57;
  if (!ipv6) return digit || code === 46; // 0-9 .
  const hex = (code >= 97 && code <= 102) || (code >= 65 && code <= 70);
  return digit || hex || code === 58 || code === 46; // hex digits, ':' and '.' (IPv4-mapped tails)
}

/** Replaces whole-address occurrences of `oldIp` in `text`; returns the text unchanged when there are none. */
export function replaceAddress(text: string, oldIp: string, newIp: string): string {
  if (oldIp === "" || !text.includes(oldIp)) return text;
  const ipv6 = oldIp.includes(":");
  let out = "";
  let from = 0;
  for (let at = text.indexOf(oldIp); at !== -1; at = text.indexOf(oldIp, at + 1)) {
    if (at < from) continue;
    const before = at > 0 ? text.charCodeAt(at - 1) : -1;
    const afterIndex = at + oldIp.length;
    const after = afterIndex < text.length ? text.charCodeAt(afterIndex) : -1;
    // A trailing "." is allowed when no address character follows it (end of a sentence).
    const afterIsSentenceDot = after === 46 && !(afterIndex + 1 < text.length && isAddressChar(text.charCodeAt(afterIndex + 1), ipv6));
    const bounded = !(before !== -1 && isAddressChar(before, ipv6)) && !(after !== -1 && isAddressChar(after, ipv6) && !afterIsSentenceDot);
    if (!bounded) continue;
    out += text.slice(from, at) + newIp;
    from = afterIndex;
  }
  return from === 0 ? text : out + text.slice(from);
}
