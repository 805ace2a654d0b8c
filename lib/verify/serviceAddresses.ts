import { Finding } from "../report/findings";
import { rangeLists } from "../config/rangeLists";
import { LeftoverTest } from "./leftovers";
import { RangeVerifyInput } from "./verifyInput";
import { ServiceInfo } from "../plan/inventory";

/**
 * Services after the move: no ClusterIP left in the old Service range, `kubernetes` at the new range's first address,
 * the DNS Service at its planned address.
 */
/**
 * What to do about a Service still in the old range. Re-creating without spec.clusterIP fits an ordinary Service only:
 * the DNS Service must come back at its planned address (kubelets hand that address to every pod), and the apiserver
 * re-creates `kubernetes` itself at the new range's first address.
 */
function oldRangeAction(key: string, dnsKey: string, targets: RangeVerifyInput["targets"]): string {
  if (key === "default/kubernetes") {
    return "the apiserver owns this Service: once every kube-apiserver runs with the new --service-cluster-ip-range, delete it and the apiserver re-creates it at the new range's first address; do not re-create it by hand";
  }
  if (key === dnsKey) {
    return `run \`pulumi up\` again to finish the DNS phase; re-created by hand it must keep spec.clusterIP ${targets.dnsServiceIP} (the address kubelets give every pod), never an empty spec.clusterIP`;
  }
  return "run `pulumi up` again to finish the Service moves (it resumes from its journal), or re-create this Service without spec.clusterIP";
}

export function verifyServiceAddresses(input: RangeVerifyInput): Finding[] {
  const { config, inventory, targets } = input;
  const findings: Finding[] = [];
  // both families of a dual-stack run (rangeLists), each address against its own
  const leftover = new LeftoverTest(rangeLists(config).service.from, rangeLists(config).service.to);
  const dnsKey = `${config.dns.namespace}/${config.dns.name}`;

  for (const s of inventory.services) {
    const ips = s.clusterIPs?.length ? s.clusterIPs : s.clusterIP ? [s.clusterIP] : [];
    ips.forEach((ip, i) => {
      if (!leftover.address(ip)) return;
      findings.push({
        code: "SERVICE_IN_OLD_RANGE",
        severity: "blocker",
        object: `Service ${s.namespace}/${s.name}`,
        path: s.clusterIPs?.length ? `spec.clusterIPs[${i}]` : "spec.clusterIP",
        message: `ClusterIP ${ip} is still in the old Service range ${leftover.from}`,
        action: oldRangeAction(`${s.namespace}/${s.name}`, dnsKey, targets),
      });
    });
  }

  // what a run leaves on a Service only while it lasts: each a blocker until a re-run ends it
  const leftBehind: Array<{ code: string; path?: string; message: (s: ServiceInfo) => string | undefined; action: string }> = [
    {
      code: "OLD_IP_BRIDGE_LEFT",
      path: "spec.externalIPs",
      message: (s) => s.bridgedOldIPs && `still answers at its old ClusterIP ${s.bridgedOldIPs.join(" and ")} (the bridge of services.bridgeOldIps, ended only after every pod was re-created)`,
      action: "run `pulumi up` again: its old-ip-bridges step ends every bridge left",
    },
    {
      code: "NEW_IP_FIRST_LEFT",
      path: "spec.externalIPs",
      message: (s) => s.routedAheadIPs && `still answers at ${s.routedAheadIPs.join(" and ")} as an externalIP, routed first for a move that has not happened (services.routeNewIpsFirst)`,
      action: "run `pulumi up` again: the Service moves run removes what it routed first once its moves are done",
    },
    {
      code: "SERVICE_MOVING_IN_PLACE",
      path: "spec.type",
      message: (s) => s.movingInPlaceTo && `is an ExternalName Service naming its stand-in, between the two writes of its in-place move to ${s.movingInPlaceTo} (services.moveInPlace); its name still resolves, through the stand-in`,
      action: "run `pulumi up` again: the Service moves finish it from their journal",
    },
    {
      code: "HOP_STAND_IN_LEFT",
      message: (s) => (s.hopStandIn ? "a temporary stand-in of an in-place move (services.moveInPlace) is still there" : undefined),
      action: "run `pulumi up` again: the Service moves remove their stand-ins once every move is done (or delete it, once no Service names it in spec.externalName)",
    },
  ];
  for (const left of leftBehind) {
    for (const s of inventory.services) {
      const message = left.message(s);
      if (!message) continue;
      findings.push({ code: left.code, severity: "blocker", object: `Service ${s.namespace}/${s.name}`, ...(left.path ? { path: left.path } : {}), message, action: left.action });
    }
  }

  const kubernetes = inventory.services.find((s) => s.namespace === "default" && s.name === "kubernetes");
  if (!kubernetes) {
    findings.push({
      code: "KUBERNETES_SERVICE_MISSING",
      severity: "blocker",
      object: "Service default/kubernetes",
      message: "the Service every in-cluster client uses to reach the apiserver does not exist",
      action: "check the kube-apiserver logs: it re-creates this Service by itself within seconds when it runs",
    });
  } else if (kubernetes.clusterIP !== targets.kubernetesServiceIP) {
    findings.push({
      code: "KUBERNETES_SERVICE_NOT_AT_NEW_FIRST_IP",
      severity: "blocker",
      object: "Service default/kubernetes",
      path: "spec.clusterIP",
      message: `ClusterIP is ${kubernetes.clusterIP}, not the new range's first address ${targets.kubernetesServiceIP}`,
      action: "delete the Service once every apiserver runs with the new --service-cluster-ip-range; the apiserver re-creates it at the first address",
    });
  }

  const dns = inventory.services.find((s) => `${s.namespace}/${s.name}` === dnsKey);
  if (!dns) {
    findings.push({
      code: "DNS_SERVICE_MISSING",
      severity: "blocker",
      object: `Service ${dnsKey}`,
      message: `the cluster DNS Service does not exist (planned at ${targets.dnsServiceIP})`,
      action: "re-create it at the planned address from its backup, or run `pulumi up` again to finish the DNS phase",
    });
  } else if (dns.clusterIP !== targets.dnsServiceIP) {
    findings.push({
      code: "DNS_SERVICE_NOT_AT_PLANNED_IP",
      severity: "blocker",
      object: `Service ${dnsKey}`,
      path: "spec.clusterIP",
      message: `ClusterIP is ${dns.clusterIP}, but ${targets.dnsSource} puts it at ${targets.dnsServiceIP}; kubelets resolve through that address`,
      action: "run `pulumi up` again to finish the DNS phase (dns/final-swap)",
    });
  }
  return findings;
}
