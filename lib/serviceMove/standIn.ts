import { KubeObject } from "./kubeRest";
import { hasSelector } from "./dependents";
import { StandInRequest } from "./moveTypes";
import { serviceRefKey } from "./serviceRef";

/**
 * The DNS stand-in: a temporary ClusterIP Service at the final DNS IP that selects the DNS pods on the DNS
 * Service's ports, so nodes can switch clusterDNS to the final IP before the real Service moves there.
 *
 * It copies selector, ports (name, protocol, port, targetPort; no nodePort: it is a ClusterIP Service),
 * sessionAffinity and publishNotReadyAddresses. It does not copy the DNS Service's labels: tools that find
 * Services by label (a ServiceMonitor on k8s-app=kube-dns) must not see a second DNS Service.
 */

export const STAND_IN_LABEL = "cidr-migration.io/stand-in-for";
export const STAND_IN_ANNOTATION = "cidr-migration.io/stand-in-for";

/** What a stand-in carries besides the copy: extra labels (a kind of stand-in), and addresses it also answers at. */
export interface StandInExtras {
  labels?: Record<string, string>;
  externalIPs?: string[];
}

export function buildStandInBody(source: KubeObject, request: StandInRequest, extras: StandInExtras = {}): KubeObject {
  const of = serviceRefKey(request.of);
  if (!hasSelector(source)) {
    throw new Error(`Service ${of} has no selector: a stand-in at ${request.ip} could not select its pods; give the DNS Service a selector or move it by hand`);
  }
  const sourceSpec = (source.spec ?? {}) as Record<string, unknown>;
  const ports = ((sourceSpec.ports ?? []) as Array<Record<string, unknown>>).map((port) => {
    const copy: Record<string, unknown> = { ...port };
    delete copy.nodePort;
    return copy;
  });
  const spec: Record<string, unknown> = {
    type: "ClusterIP",
    clusterIP: request.ip,
    clusterIPs: [request.ip],
    selector: { ...(sourceSpec.selector as Record<string, string>) },
    ports,
    ...(extras.externalIPs?.length ? { externalIPs: [...extras.externalIPs] } : {}),
  };
  for (const key of ["sessionAffinity", "sessionAffinityConfig", "publishNotReadyAddresses"]) {
    if (sourceSpec[key] !== undefined) spec[key] = structuredClone(sourceSpec[key]);
  }
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: request.name,
      namespace: request.namespace,
      labels: { "app.kubernetes.io/managed-by": "cidr-migration", [STAND_IN_LABEL]: request.of.name, ...extras.labels },
      annotations: { [STAND_IN_ANNOTATION]: of },
    },
    spec,
  };
}
