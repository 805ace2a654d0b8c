/**
 * A Service's identity from the plan to the mover. Where it must be a string (the ServiceRecreation provider's
 * `moves` keys, which `pulumi preview` shows one per line; the journal; plan step ids) it is "namespace/name",
 * written by serviceRefKey and read back by parseServiceRefKey only.
 */
export interface ServiceRef {
  namespace: string;
  name: string;
}

export function serviceRefKey(ref: ServiceRef): string {
  return `${ref.namespace}/${ref.name}`;
}

/** The ref a "namespace/name" key names; undefined for anything else (no slash, two slashes, an empty part). */
export function parseServiceRefKey(key: string): ServiceRef | undefined {
  const parts = key.split("/");
  return parts.length === 2 && parts[0] !== "" && parts[1] !== "" ? { namespace: parts[0], name: parts[1] } : undefined;
}

/** default/kubernetes: the Service the apiserver itself re-creates at the new range's first IP. */
export function isKubernetesService(ref: ServiceRef): boolean {
  return ref.namespace === "default" && ref.name === "kubernetes";
}
