import { V1Service } from "@kubernetes/client-node";
import { cidrContains, isIpAddress } from "../net/cidr";
import { Finding } from "../report/findings";
import { objectLabel, PreflightInput, rangeInput } from "./checkInput";
import { keyOf } from "./clusterObjects";
import { bridgedIpsOf } from "../serviceMove/oldIpBridge";
import { routedAheadIpsOf } from "../serviceMove/newIpAhead";

/**
 * Services that need a decision before they are re-created in the new range: LoadBalancers (a new cloud address),
 * NodePorts (a short gap), pinned ClusterIPs (someone's manifest holds the old IP), selector-less Services (hand-made
 * Endpoints the migration never touches) and externalIPs.
 */

const inRange = (cidr: string, ip: string) => isIpAddress(ip) && cidrContains(cidr, ip);

/**
 * A ClusterIP the client chose: the field manager that wrote spec.clusterIP is not the apiserver's allocator (a
 * create without it leaves the field unowned), or kubectl's last-applied-configuration carries one.
 */
export function isPinnedClusterIP(svc: V1Service): boolean {
  const ip = svc.spec?.clusterIP;
  if (!ip || ip === "None") return false;
  const ownedByClient = (svc.metadata?.managedFields ?? []).some((m) => {
    const spec = (m.fieldsV1 as Record<string, Record<string, unknown>> | undefined)?.["f:spec"];
    return m.manager !== "kube-apiserver" && spec !== undefined && "f:clusterIP" in spec;
  });
  if (ownedByClient) return true;
  const applied = svc.metadata?.annotations?.["kubectl.kubernetes.io/last-applied-configuration"];
  if (!applied) return false;
  try {
    const pinned = (JSON.parse(applied) as { spec?: { clusterIP?: string } }).spec?.clusterIP;
    return typeof pinned === "string" && pinned !== "" && pinned !== "None";
  } catch {
    return false;
  }
}

export function checkServices(input: PreflightInput): Finding[] {
  // no range moves (node addresses only): no Service moves either
  const config = rangeInput(input)?.config;
  if (!config) return [];
  const findings: Finding[] = [];
  const dnsKey = `${config.dns.namespace}/${config.dns.name}`;
  const oldRanges = [config.serviceCidr.from, config.podCidr.from];
  const newRanges = [config.serviceCidr.to, config.podCidr.to];

  for (const svc of input.cluster.services) {
    const key = keyOf(svc.metadata);
    if (key === "default/kubernetes") continue; // the apiserver re-creates it itself
    const object = objectLabel("Service", svc.metadata);
    const spec = svc.spec ?? {};
    const type = spec.type ?? "ClusterIP";
    const clusterIP = spec.clusterIP ?? "";
    const moves = inRange(config.serviceCidr.from, clusterIP) && !inRange(config.serviceCidr.to, clusterIP);

    if (type === "LoadBalancer" && moves) {
      const external = (svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip ?? i.hostname).filter(Boolean).join(", ");
      const current = external ? ` (now ${external})` : "";
      findings.push(
        config.services.allowLoadBalancerRecreate
          ? {
              code: "LOADBALANCER_RECREATE",
              severity: "warning",
              object,
              message: `a LoadBalancer Service is re-created to move its ClusterIP; the cloud can give it a new external address${current}`,
              action: "update DNS records and firewall rules that name the external address after the move",
            }
          : {
              code: "LOADBALANCER_NEEDS_CONSENT",
              severity: "blocker",
              object,
              message: `a LoadBalancer Service must be re-created to move its ClusterIP ${clusterIP}, and can get a new external address${current}`,
              action: "set cidr-migration:services.allowLoadBalancerRecreate to true once DNS and firewall owners agree, or pin the address with spec.loadBalancerIP",
            },
      );
    }
    if (type === "NodePort" && moves) {
      const ports = (spec.ports ?? []).map((p) => p.nodePort).filter((p) => p !== undefined).join(", ");
      findings.push({
        code: "NODEPORT_SERVICE",
        severity: "info",
        object,
        message: `re-created with the same nodePorts (${ports}); connections through them drop for a moment during the move`,
        action: "none; schedule the migration when a short gap on these ports is acceptable",
      });
    }
    if (moves && key !== dnsKey && isPinnedClusterIP(svc)) {
      findings.push({
        code: "PINNED_CLUSTER_IP",
        severity: "warning",
        object,
        path: "spec.clusterIP",
        message: `ClusterIP ${clusterIP} was set by hand; the move keeps its offset in ${config.serviceCidr.to} where it is free`,
        action: "change spec.clusterIP in the manifest or chart that creates it to the planned address (cidr-migration plan), or the next apply fails on the immutable field",
      });
    }
    if (type !== "ExternalName" && Object.keys(spec.selector ?? {}).length === 0) {
      findings.push({
        code: "SELECTORLESS_SERVICE",
        severity: "info",
        object,
        message: "has no selector: its Endpoints are written by hand or by an operator, and the migration leaves them as they are",
        action: "check its Endpoints (preflight reports any address in the old ranges there)",
      });
    }
    (spec.externalIPs ?? []).forEach((ip, i) => {
      // the old-ClusterIP bridge, or a planned IP routed first, of an interrupted run is ours, and goes at its end
      if (bridgedIpsOf(svc)?.includes(ip) || routedAheadIpsOf(svc)?.includes(ip)) return;
      const path = `spec.externalIPs[${i}]`;
      if (newRanges.some((r) => inRange(r, ip))) {
        findings.push({
          code: "EXTERNAL_IP_IN_NEW_RANGE",
          severity: "blocker",
          object,
          path,
          message: `externalIP ${ip} lies in a new range (${newRanges.join(", ")}): it would collide with a ClusterIP or a Pod IP after the move`,
          action: "choose other new ranges, or move the externalIP out of them first",
        });
      } else if (oldRanges.some((r) => inRange(r, ip))) {
        findings.push({
          code: "EXTERNAL_IP_IN_OLD_RANGE",
          severity: "warning",
          object,
          path,
          message: `externalIP ${ip} lies in an old range (${oldRanges.join(", ")}) and is kept as it is on re-create`,
          action: "replace it with an address outside the cluster's ranges",
        });
      } else {
        findings.push({
          code: "EXTERNAL_IPS",
          severity: "info",
          object,
          path,
          message: `externalIP ${ip} is kept on re-create; traffic to it drops for a moment during the move`,
          action: "none",
        });
      }
    });
  }
  return findings;
}
