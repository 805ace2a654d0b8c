import { Plan } from "../plan/planModel";
import { FamilyMove } from "./moveTypes";
import { serviceRefKey } from "./serviceRef";

/**
 * The Plan's Service moves in the shape the Service resources take: the bulk moves (every re-created Service
 * except default/kubernetes and the DNS Service), the kubernetes Service (re-created by the apiserver), and the
 * DNS move with its stand-in (components/dnsContinuity.ts). Pure; index.ts passes the result on.
 */

export interface PlannedServiceMove {
  fromIP: string;
  toIP: string;
  type: string;
  /** A dual-stack Service's second ClusterIP, when it moves too (issue 17). */
  otherFamily?: FamilyMove;
}

export interface PlannedDnsMove {
  namespace: string;
  name: string;
  fromIP: string;
  toIP: string;
  /** The temporary Service that holds toIP from before the node rollout until the final swap. */
  standIn: { namespace: string; name: string };
}

export interface PlannedServiceMoves {
  /** Keyed "namespace/name". */
  moves: Record<string, PlannedServiceMove>;
  kubernetesService?: { fromIP: string; toIP: string };
  dns?: PlannedDnsMove;
}

const STAND_IN_SUFFIX = "-cidr-migration-temp";
/** A Service name is a DNS-1035 label: at most 63 characters. */
const MAX_SERVICE_NAME = 63;

export function standInName(dnsServiceName: string): string {
  const name = `${dnsServiceName}${STAND_IN_SUFFIX}`;
  return name.length <= MAX_SERVICE_NAME ? name : `dns${STAND_IN_SUFFIX}`;
}

export function serviceMovesFromPlan(plan: Plan): PlannedServiceMoves {
  const dnsKey = serviceRefKey(plan.dns);
  const moves: Record<string, PlannedServiceMove> = {};
  for (const s of plan.services) {
    const key = serviceRefKey(s);
    if (s.action !== "recreate" || key === "default/kubernetes" || key === dnsKey) continue;
    if (!s.oldClusterIP || !s.newClusterIP) continue;
    const other = s.oldClusterIPs && s.newClusterIPs && s.oldClusterIPs[1] !== s.newClusterIPs[1] ? { fromIP: s.oldClusterIPs[1], toIP: s.newClusterIPs[1] } : undefined;
    moves[key] = { fromIP: s.oldClusterIP, toIP: s.newClusterIP, type: s.type, ...(other ? { otherFamily: other } : {}) };
  }
  const kubernetes = plan.kubernetesService;
  const result: PlannedServiceMoves = { moves };
  if (kubernetes.oldClusterIP && kubernetes.oldClusterIP !== kubernetes.newClusterIP) {
    result.kubernetesService = { fromIP: kubernetes.oldClusterIP, toIP: kubernetes.newClusterIP };
  }
  const dnsMove = plan.services.find((s) => serviceRefKey(s) === dnsKey);
  if (dnsMove?.action === "recreate" && plan.dns.oldClusterIP && plan.dns.oldClusterIP !== plan.dns.newClusterIP) {
    result.dns = {
      namespace: plan.dns.namespace,
      name: plan.dns.name,
      fromIP: plan.dns.oldClusterIP,
      toIP: plan.dns.newClusterIP,
      standIn: { namespace: plan.dns.namespace, name: standInName(plan.dns.name) },
    };
  }
  return result;
}
