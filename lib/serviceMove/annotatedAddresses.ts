/**
 * Our externalIP annotations (the old-ClusterIP bridge, the new address routed first) name one address per family,
 * comma-separated, primary first ("10.96.0.10,fd00:10:96::a"): a dual-stack Service is bridged and routed ahead in
 * both families. A value written by an earlier release holds one address, which reads the same way.
 */
/** Anything with metadata: a KubeObject, or a client-node V1Service. */
export interface Annotated {
  metadata?: { annotations?: Record<string, string> };
}

export function annotatedAddresses(service: Annotated, key: string): string[] | undefined {
  const value = service.metadata?.annotations?.[key];
  if (value === undefined) return undefined;
  return value.split(",").map((ip) => ip.trim()).filter((ip) => ip !== "");
}

export function annotationOf(ips: readonly string[]): string {
  return ips.join(",");
}
