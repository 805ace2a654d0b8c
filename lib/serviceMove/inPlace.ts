import { createHash } from "node:crypto";
import { formatIp, parseCidr } from "../net/cidr";
import { rangeForFamilyOf } from "../net/rangeList";
import { hasSelector } from "./dependents";
import { KubeObject } from "./kubeRest";
import { ServiceMoveRequest, StandInRequest } from "./moveTypes";
import { clusterIpsOf, spec } from "./recreateBody";
import { ServiceRef } from "./serviceRef";

/**
 * The in-place move (config services.moveInPlace): a Service keeps its object (uid, EndpointSlices, owners) and its
 * name never stops resolving. kube-apiserver lets a ClusterIP change only through a type without one, so the move is
 * two writes: to ExternalName, naming a stand-in (a temporary ClusterIP Service with the same selector and ports,
 * created and routed before), and back to ClusterIP at the planned IP. Between them CoreDNS answers the name with a
 * CNAME to the stand-in and its ClusterIP, where a re-create answered NXDOMAIN (seen on the node lab: a lookup in the
 * 28–45 ms between delete and create failed). The endpoint controllers leave an ExternalName Service's slices alone,
 * so kube-proxy has the Service's endpoints the moment it is back. The stand-in also answers at the planned IP (an
 * externalIP, with services.routeNewIpsFirst) until after the move, and stays a DNS TTL longer, for clients that
 * resolved the name during the hop.
 */

export const HOP_STAND_IN_LABEL = "cidr-migration.io/hop-stand-in";
/** On a Service between the two writes: the planned IP it goes back to ClusterIP at. */
export const HOPPING_ANNOTATION = "cidr-migration.io/moving-in-place-to";

/**
 * Whether a move can go in place: a single-stack ClusterIP Service with a selector. NodePort and LoadBalancer
 * Services would lose their node ports (and load balancer) as ExternalName; a selector-less one has no pods a
 * stand-in could select; a dual-stack one would lose its second family's answer while it hops.
 */
export function movesInPlace(service: KubeObject, request: ServiceMoveRequest): boolean {
  return canMoveInPlace(spec(service).type as string | undefined, hasSelector(service), clusterIpsOf(service).length) && !request.otherFamily && !request.vacate;
}

/** The same rule on a Service's shape alone, for the plan. */
export function canMoveInPlace(type: string | undefined, selector: boolean, clusterIpCount: number): boolean {
  return (type ?? "ClusterIP") === "ClusterIP" && selector && clusterIpCount === 1;
}

/** The stand-in's name: the Service's, shortened to fit, with a hash of the full name so shortened names stay apart. */
export function hopStandInName(name: string): string {
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 5);
  return `${name.slice(0, 50).replace(/-+$/, "")}-hop-${hash}`;
}

/**
 * Addresses for the stand-ins: from the top of the new range down, skipping the broadcast address, the first
 * address (the kubernetes Service's, once the apiserver re-creates it) and every address a Service holds or a move
 * is planned at. Undefined when the range has too few left.
 */
export function pickStandInIps(newRange: string, familyOfIp: string, taken: ReadonlySet<string>, count: number): string[] | undefined {
  const range = rangeForFamilyOf(newRange, familyOfIp);
  if (!range || count === 0) return count === 0 ? [] : undefined;
  const { network, size, family } = parseCidr(range);
  const picked: string[] = [];
  // IPv4's broadcast address is never allocated; the network address and the first are never reached
  for (let offset = size - 2n; offset > 1n && picked.length < count; offset--) {
    const ip = formatIp(family, network + offset);
    if (!taken.has(ip)) picked.push(ip);
  }
  return picked.length === count ? picked : undefined;
}

/** The stand-in request for a Service's hop. */
export function hopStandInRequest(of: ServiceRef, ip: string): StandInRequest {
  return { namespace: of.namespace, name: hopStandInName(of.name), of: { namespace: of.namespace, name: of.name }, ip };
}

/** The name CoreDNS answers the stand-in at. */
export function standInHostName(standIn: ServiceRef, clusterDomain: string): string {
  return `${standIn.name}.${standIn.namespace}.svc.${clusterDomain}`;
}

/**
 * The first write: ExternalName, pointing at the stand-in. Only the live object's resourceVersion lets it through,
 * so an edit made since the journal is never lost. The apiserver drops the ClusterIP, its IP families and policy
 * itself; every other field stays on the object.
 */
export function hopOutPatch(resourceVersion: string | undefined, hostName: string, toIP: string): Record<string, unknown> {
  return {
    metadata: { resourceVersion, annotations: { [HOPPING_ANNOTATION]: toIP } },
    spec: { type: "ExternalName", externalName: hostName },
  };
}

/** Whether a live Service is between the two writes of its in-place move to `toIP`. */
export function isHoppedOut(live: KubeObject | undefined, toIP: string): boolean {
  return spec(live ?? {}).type === "ExternalName" && live?.metadata?.annotations?.[HOPPING_ANNOTATION] === toIP;
}

/**
 * The second write: the re-create body (the journaled original at its planned IP) put over the hopped object,
 * with its uid and resourceVersion: the externalName and the hop annotation go, everything else is the original's.
 */
export function hopInBody(recreateBody: KubeObject, live: KubeObject): KubeObject {
  return { ...recreateBody, metadata: { ...recreateBody.metadata, uid: live.metadata?.uid, resourceVersion: live.metadata?.resourceVersion } };
}
