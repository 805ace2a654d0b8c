import { configProblem } from "../config/configReader";
import { ConfigProblem } from "../config/errors";
import { RangeMigrationConfig } from "../config/migrationConfig";
import { cidrContains, cidrsOverlap, familyOf } from "../net/cidr";
import { serviceRefKey } from "../serviceMove/serviceRef";
import { Inventory } from "./inventory";
import { Plan } from "./planModel";

/**
 * What a dual-stack run (config.secondFamily, issue 17) cannot carry out yet, refused before any change with what to
 * do instead. Each names a part of the run that would otherwise move one family and leave the other behind.
 */
export function dualStackRefusals(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  const second = config.secondFamily;
  if (!second) return [];
  const problems: ConfigProblem[] = [];
  const fail = (key: string, message: string) => problems.push(configProblem(key, message));
  const pair = `the ${familyOf(config.podCidr.to)} + ${second.family} run`;

  if (config.services.strategy === "etcd-rewrite") {
    fail("services.strategy", `is "etcd-rewrite", which rewrites one ClusterIP per Service; ${pair} moves Services through the API: set services.strategy to "recreate" (or remove it)`);
  }
  if (plan.cni === "cilium") {
    fail("cni", `is Cilium, whose cluster-pool ${second.family} range (cluster-pool-ipv6-cidr) this version does not edit; move a dual-stack Cilium cluster's pod ranges by hand, or run single-stack`);
  }
  if (plan.cni === "calico") {
    // Calico's dual-stack layout is one pool per family: the second family's pool in its old range, or (a re-run, or an
    // added family) in its new one
    const { from, to } = second.podCidr;
    const hasPool = inventory.cni.calicoPools.some((p) => familyOf(p.cidr) === second.family && (cidrContains(to, p.cidr) || (from !== undefined && cidrsOverlap(from, p.cidr))));
    if (!hasPool && second.role === "add") {
      fail("podCidr.to", `adds ${second.family} pod range ${to}, but Calico has no ${second.family} IPPool there; enable ${second.family} in Calico first (FELIX_IPV6SUPPORT and CALICO_IPV6POOL_CIDR=${to} on calico-node, or the Installation's ipPools), then re-run`);
    } else if (!hasPool) {
      fail("podCidr.from", `lists ${second.family} pod range ${from}, but Calico has no ${second.family} IPPool in it (or in ${to}), so Calico does not hand out ${second.family} pod addresses; check podCidr.from against \`kubectl get ippools\`, or run single-stack`);
    }
  }
  if (plan.cni === "flannel" && second.family === "IPv6" && !inventory.cni.flannelIpv6Network) {
    fail("podCidr.to", `gives an IPv6 pod range, but flannel's net-conf.json (ConfigMap kube-flannel-cfg) has no "IPv6Network", so flannel serves no IPv6 pods; set "EnableIPv6": true and "IPv6Network" there (and IPv6 forwarding on the nodes) before the run`);
  }

  const dns = plan.services.find((s) => s.namespace === config.dns.namespace && s.name === config.dns.name);
  const dnsSecond = dns?.oldClusterIPs?.[1];
  if (dns?.action === "recreate" && dnsSecond && dns.newClusterIPs?.[1] !== dnsSecond) {
    const first = dns.oldClusterIP;
    fail("dns.service", `Service ${serviceRefKey(dns)} holds ${dns.oldClusterIPs!.join(" and ")}; the DNS stand-in and final swap keep one ClusterIP (kubelets' clusterDNS), so make it single-stack first: kubectl -n ${dns.namespace} patch service ${dns.name} -p '{"spec":{"ipFamilyPolicy":"SingleStack","ipFamilies":["${familyOf(first!)}"],"clusterIPs":["${first}"]}}'`);
  }
  return problems;
}
