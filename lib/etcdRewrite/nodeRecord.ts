import { AddressChange, mapThrough } from "./addressChange";
import { rewriteSpecStrings, SpecString, specStrings } from "./specStrings";
import { StoredValue } from "./storedValue";

/** A stored Node with its pod ranges moved: NodeSpec {podCIDR = 1, podCIDRs = 7} (k8s.io/api core/v1). */

const POD_CIDR: SpecString = { number: 1, json: "podCIDR" };
const POD_CIDRS: SpecString = { number: 7, json: "podCIDRs" };

export function rewriteNode(value: Buffer, stored: StoredValue, changes: AddressChange[]): Buffer {
  return rewriteSpecStrings(value, stored, [POD_CIDR, POD_CIDRS], mapThrough(changes));
}

export function storedPodCidrs(stored: StoredValue): string[] {
  const listed = specStrings(stored, POD_CIDRS);
  return listed.length > 0 ? listed : specStrings(stored, POD_CIDR).filter((c) => c !== "");
}
