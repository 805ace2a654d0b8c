import { AddressChange, mapThrough } from "./addressChange";
import { rewriteSpecStrings, SpecString, specStrings } from "./specStrings";
import { StoredValue } from "./storedValue";

/**
 * The default ServiceCIDR ("kubernetes", networking.k8s.io/v1) with its range moved: ServiceCIDRSpec {cidrs = 1}.
 * Its spec is immutable through the API; rewritten while the apiservers are down, it matches the new
 * --service-cluster-ip-range when they start, so the apiserver neither reports it inconsistent nor needs it
 * deleted and re-created (which the re-create strategy has to do).
 */

const CIDRS: SpecString = { number: 1, json: "cidrs" };

export function rewriteServiceCidr(value: Buffer, stored: StoredValue, changes: AddressChange[]): Buffer {
  return rewriteSpecStrings(value, stored, [CIDRS], mapThrough(changes));
}

export function storedServiceCidrRanges(stored: StoredValue): string[] {
  return specStrings(stored, CIDRS);
}
