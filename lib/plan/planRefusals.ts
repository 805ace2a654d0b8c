import { isIpAddress, kubernetesServiceIP, normalizeCidr, normalizeIp } from "../net/cidr";
import { configProblem } from "../config/configReader";
import { ConfigProblem } from "../config/errors";
import { Inventory } from "./inventory";
import { RangeMigrationConfig } from "../config/migrationConfig";
import { Plan, ServiceMove } from "./planModel";
import { calicoPoolRefusals } from "./calicoPools";
import { dualStackRefusals } from "./dualStackRefusals";
import { standInName } from "../serviceMove/planMoves";
import { serviceRefKey } from "../serviceMove/serviceRef";

/**
 * What buildPlan refuses (exit 2), one problem per config key: a config the cluster contradicts, or a migration that
 * could not finish. Pure. Each check accepts the cluster both before and part-way through a migration, because the
 * graph plans again from the live cluster on every `pulumi up`: the old range or the new one, never a third.
 */
export function planRefusals(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  return [...dnsService(config, plan), ...cni(config, inventory), ...calicoOperator(config, inventory, plan), ...serviceRange(config, inventory, plan), ...unlistedNodes(config, inventory, plan), ...dualStackRefusals(config, inventory, plan), ...addressChangesWithoutMove(config, inventory, plan)];
}


/** dns.service must name a Service the cluster has, with a ClusterIP: the stand-in and the final swap copy it. */
function dnsService(config: RangeMigrationConfig, plan: Plan): ConfigProblem[] {
  const dnsKey = serviceRefKey(config.dns);
  const row = plan.services.find((s) => s.namespace === config.dns.namespace && s.name === config.dns.name);
  if (row && isIpAddress(row.oldClusterIP)) return [];
  if (!row) {
    // Between the final swap's delete and its create only the stand-in stands: a re-run finishes the swap.
    const standInService = standInName(config.dns.name);
    const standIn = plan.services.find((s) => s.namespace === config.dns.namespace && s.name === standInService);
    if (standIn && isIpAddress(standIn.oldClusterIP)) return [];
  }
  const what = row ? `has no ClusterIP (${row.type === "ExternalName" ? "ExternalName" : row.oldClusterIP === "None" ? "headless" : "none set"})` : "does not exist in the cluster";
  const hint = dnsCandidate(plan.services, config, row);
  return [configProblem("dns.service", `Service ${dnsKey} ${what}; set cidr-migration:dns.service to the cluster DNS Service as NAMESPACE/NAME${hint}`)];
}

/** The Service most likely meant: the usual DNS Service names in kube-system, when the cluster has one. */
function dnsCandidate(services: ServiceMove[], config: RangeMigrationConfig, wrong: ServiceMove | undefined): string {
  const candidates = ["kube-system/kube-dns", "kube-system/coredns", "kube-system/rke2-coredns-rke2-coredns"];
  const found = candidates
    .map((c) => services.find((s) => s.namespace === c.split("/")[0] && s.name === c.split("/")[1] && s !== wrong && isIpAddress(s.oldClusterIP)))
    .find((s) => s !== undefined && serviceRefKey(s) !== serviceRefKey(config.dns));
  return found ? `, e.g. ${serviceRefKey(found)} (it holds ${found.oldClusterIP})` : "";
}

/** A configured CNI that discovery contradicts would leave the real one's pod range unchanged. */
function cni(config: RangeMigrationConfig, inventory: Inventory): ConfigProblem[] {
  const detected = inventory.cni.detected;
  if (config.cni === "auto" || config.cni === detected) return [];
  const c = inventory.cni;
  const seen =
    detected === "calico"
      ? `Calico (IPPool ${c.calicoPools.map((p) => `${p.name} ${p.cidr}`).join(", ")})`
      : detected === "flannel"
        ? `flannel (ConfigMap kube-flannel-cfg${c.flannelNetwork ? `, Network ${c.flannelNetwork}` : ""})`
        : detected === "cilium"
          ? `Cilium (ConfigMap kube-system/cilium-config${c.ciliumClusterPoolCidr ? `, cluster-pool-ipv4-cidr ${c.ciliumClusterPoolCidr}` : ""})`
          : "no CNI that discovery knows (no Calico IPPool, kube-flannel-cfg or cilium-config)";
  return [configProblem("cni", `is "${config.cni}" but discovery finds ${seen}, so the pod network would not be switched; set it to "${detected}" or "auto"`)];
}

/** Installation pools the Tigera operator could not move as planned (lib/podNetwork/calicoInstallation.ts). */
function calicoOperator(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  if (plan.cni !== "calico") return [];
  return calicoPoolRefusals(inventory.cni, config.podCidr, config.secondFamily).map((message) => configProblem("podCidr", message));
}

/** The ranges a kubeadm serviceSubnet or ServiceCIDR lists, normalized; unparsable entries are dropped. */
function ranges(list: string[]): string[] {
  return list.flatMap((r) => {
    try {
      return [normalizeCidr(r.trim())];
    } catch {
      return [];
    }
  });
}

/**
 * serviceCidr.from must be the range the cluster's Services come from. Its witnesses: the kubernetes Service at the
 * first IP of the range, kubeadm-config's serviceSubnet, and (1.33+) the live ServiceCIDR objects. Each may show the
 * old range or, part-way through, the new one.
 */
function serviceRange(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  const { from, to } = config.serviceCidr;
  const known = new Set([from, to]);
  const against: string[] = [];
  const kubernetes = plan.services.find((s) => s.namespace === "default" && s.name === "kubernetes");
  const held = kubernetes?.oldClusterIP;
  const ip = isIpAddress(held) ? normalizeIp(held) : undefined;
  if (ip !== undefined && ip !== kubernetesServiceIP(from) && ip !== kubernetesServiceIP(to)) {
    against.push(`Service default/kubernetes holds ${ip}, not ${kubernetesServiceIP(from)}`);
  }
  const subnet = inventory.kubeadmConfig?.serviceSubnet;
  if (subnet && !ranges(subnet.split(",")).some((r) => known.has(r))) {
    against.push(`kubeadm-config networking.serviceSubnet is ${subnet}`);
  }
  const live = (inventory.serviceCidrs ?? []).filter((c) => !c.terminating);
  if (live.length > 0 && !live.some((c) => ranges(c.cidrs).some((r) => known.has(r)))) {
    against.push(`ServiceCIDR ${live.map((c) => `${c.name} is ${c.cidrs.join(",")}`).join(", ")}`);
  }
  if (against.length === 0) return [];
  const withIp = plan.services.filter((s) => isIpAddress(s.oldClusterIP) && !(s.namespace === "default" && s.name === "kubernetes"));
  const outside = withIp.filter((s) => s.action === "unchanged" && s.newClusterIP === undefined).length;
  if (outside > 0) against.push(`${outside} of ${withIp.length} Services lie outside ${from} and ${to}`);
  return [configProblem("serviceCidr.from", `${from} is not the cluster's Service range: ${against.join("; ")}; set it to the range kube-apiserver's --service-cluster-ip-range holds`)];
}

const MAX_LISTED = 3;

/**
 * Every Node that must move (and every control-plane Node, whose manifests change) must be in cidr-migration:nodes:
 * one that cannot be rolled keeps its old podCIDR, and KCM then refuses to start on the new --cluster-cidr.
 */
function unlistedNodes(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  const listed = new Set(config.nodes.map((n) => n.name));
  const missing = plan.nodes.filter((n) => !listed.has(n.name) && (n.action === "move" || n.role === "control-plane"));
  if (missing.length === 0) return [];
  const ipOf = new Map(inventory.nodes.map((n) => [n.name, n.internalIPs?.[0]]));
  const entry = (n: (typeof missing)[number]) => `{ name: ${n.name}, host: ${ipOf.get(n.name) ?? "HOST"}, role: ${n.role} }`;
  const why = "a node that cannot be rolled leaves the migration unfinishable";
  if (missing.length <= MAX_LISTED) {
    return missing.map((n) =>
      configProblem(
        "nodes",
        `Node ${n.name} is in the cluster but not listed, and ${n.action === "move" ? `its podCIDR ${n.oldPodCIDR ?? "(none)"} must move to ${n.newPodCIDR}` : "its control-plane manifests must change"}; add ${entry(n)} (${why})`,
      ),
    );
  }
  const names = missing.slice(0, MAX_LISTED).map((n) => n.name).join(", ");
  return [configProblem("nodes", `${missing.length} Nodes are in the cluster but not listed and must move: ${names} and ${missing.length - MAX_LISTED} more; add each as ${entry(missing[0])} (${why})`)];
}

/**
 * A worker's address changes while the node rollout re-registers it, so a worker this run does not move (its subnet
 * in the new range already) cannot change address in it, unless it has (a re-run: its Node reports the new address).
 */
function addressChangesWithoutMove(config: RangeMigrationConfig, inventory: Inventory, plan: Plan): ConfigProblem[] {
  return config.nodeAddresses.flatMap((c, i) => {
    if (c.role !== "worker" || plan.nodes.some((n) => n.name === c.name && n.action === "move")) return [];
    const live = inventory.nodes.find((n) => n.name === c.name);
    if (live?.internalIPs.map(normalizeIp).includes(c.to)) return [];
    return [configProblem(`nodeAddresses[${i}].name`, `${c.name}'s address changes while the node rollout re-registers it, but this run does not move ${c.name} (its pod subnet is in the new range already); change its address by hand, or in a run that moves it`)];
  });
}
