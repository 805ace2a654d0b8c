import { isCidr, isIpAddress } from "../net/cidr";
import { UserError } from "../config/errors";
import { Inventory } from "./inventory";
import { serviceRefKey } from "../serviceMove/serviceRef";

/**
 * An inventory read from a file (`--inventory`), checked before anything plans from it: discovery always writes a
 * well-formed one, a hand-edited or foreign file may not. The first problem is one line naming the field, the bad
 * value and what to do; the planner never sees a value of the wrong type.
 */
export function checkInventory(data: unknown, what: string): Inventory {
  const problems: string[] = [];
  const fail = (field: string, message: string) => problems.push(`${field} ${message}`);
  const fix = "; write the inventory again with: cidr-migration inventory --kubeconfig FILE";
  const inv = data as Partial<Inventory> | null;
  if (!isObject(inv) || !Array.isArray(inv.services) || !Array.isArray(inv.nodes) || !isObject(inv.cni) || !isObject(inv.serverVersion)) {
    throw new UserError(`${what}: not an inventory (needs serverVersion, services, nodes, cni)${fix}`);
  }

  for (const field of ["major", "minor", "gitVersion"] as const) {
    if (typeof inv.serverVersion[field] !== "string") fail(`serverVersion.${field}`, `is ${show(inv.serverVersion[field])}, not a string`);
  }

  const serviceKeys = new Map<string, number>();
  inv.services.forEach((s, i) => {
    const at = `services[${i}]`;
    if (!isObject(s)) {
      fail(at, `is ${show(s)}, not a Service`);
      return;
    }
    if (typeof s.namespace !== "string" || s.namespace === "" || typeof s.name !== "string" || s.name === "") {
      fail(at, `has namespace ${show(s.namespace)} and name ${show(s.name)}; both must be non-empty strings`);
      return;
    }
    const key = serviceRefKey(s);
    const label = `${at} (${key})`;
    const first = serviceKeys.get(key);
    if (first !== undefined) fail(label, `lists the Service again (first at services[${first}])`);
    else serviceKeys.set(key, i);
    if (!["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].includes(s.type as string)) {
      fail(`${label} type`, `is ${show(s.type)}, not ClusterIP, NodePort, LoadBalancer or ExternalName`);
    }
    if (s.clusterIP !== undefined && s.clusterIP !== "None" && s.clusterIP !== "" && !isIpAddress(s.clusterIP)) {
      fail(`${label} clusterIP`, `is ${show(s.clusterIP)}, not an IP address, "None" or absent`);
    } else if (key === "default/kubernetes" && !isIpAddress(s.clusterIP)) {
      fail(`${label} clusterIP`, `is ${show(s.clusterIP)}; the apiserver always gives this Service the first IP of its range`);
    }
    for (const list of ["clusterIPs", "externalIPs"] as const) {
      const value = s[list];
      if (value !== undefined && (!Array.isArray(value) || !value.every((ip) => ip === "None" || isIpAddress(ip)))) {
        fail(`${label} ${list}`, `is ${show(value)}, not a list of IP addresses`);
      }
    }
    if (s.hasSelector !== undefined && typeof s.hasSelector !== "boolean") fail(`${label} hasSelector`, `is ${show(s.hasSelector)}, not true or false`);
  });

  const nodeNames = new Map<string, number>();
  inv.nodes.forEach((n, i) => {
    const at = `nodes[${i}]`;
    if (!isObject(n)) {
      fail(at, `is ${show(n)}, not a Node`);
      return;
    }
    if (typeof n.name !== "string" || n.name === "") {
      fail(`${at} name`, `is ${show(n.name)}, not a non-empty string`);
      return;
    }
    const label = `${at} (${n.name})`;
    const first = nodeNames.get(n.name);
    if (first !== undefined) fail(label, `lists Node ${n.name} again (first at nodes[${first}]); a node name is unique`);
    else nodeNames.set(n.name, i);
    if (n.podCIDR !== undefined && !isCidr(n.podCIDR)) fail(`${label} podCIDR`, `is ${show(n.podCIDR)}, not a CIDR`);
    if (n.podCIDRs !== undefined && (!Array.isArray(n.podCIDRs) || !n.podCIDRs.every((c) => isCidr(c)))) fail(`${label} podCIDRs`, `is ${show(n.podCIDRs)}, not a list of CIDRs`);
    if (!Array.isArray(n.internalIPs) || !n.internalIPs.every((ip) => isIpAddress(ip))) fail(`${label} internalIPs`, `is ${show(n.internalIPs)}, not a list of IP addresses`);
    if (typeof n.controlPlane !== "boolean") fail(`${label} controlPlane`, `is ${show(n.controlPlane)}, not true or false`);
    if (n.labels !== undefined && !isObject(n.labels)) fail(`${label} labels`, `is ${show(n.labels)}, not an object`);
  });

  if (!["calico", "flannel", "cilium", "none"].includes(inv.cni.detected as string)) fail("cni.detected", `is ${show(inv.cni.detected)}, not calico, flannel, cilium or none`);
  if (!Array.isArray(inv.cni.calicoPools)) fail("cni.calicoPools", `is ${show(inv.cni.calicoPools)}, not a list`);
  else inv.cni.calicoPools.forEach((p, i) => {
    if (!isObject(p) || typeof p.name !== "string" || !isCidr(p.cidr)) fail(`cni.calicoPools[${i}]`, `is ${show(p)}, not {name, cidr}`);
  });
  const operator = inv.cni.calicoOperator;
  if (operator !== undefined) {
    if (!isObject(operator) || typeof operator.v3Served !== "boolean") fail("cni.calicoOperator", `is ${show(operator)}, not {ipPools, apiServerState, v3Served}`);
    else if (operator.ipPools !== undefined && !Array.isArray(operator.ipPools)) fail("cni.calicoOperator.ipPools", `is ${show(operator.ipPools)}, not a list`);
    else operator.ipPools?.forEach((p: unknown, i: number) => {
      if (!isObject(p) || !isCidr(p.cidr)) fail(`cni.calicoOperator.ipPools[${i}]`, `is ${show(p)}, not {name, cidr, ...}`);
    });
  }
  for (const [field, value] of [
    ["kubeProxy.clusterCIDR", inv.kubeProxy?.clusterCIDR],
    ["kubeadmConfig.podSubnet", inv.kubeadmConfig?.podSubnet],
    ["kubeadmConfig.serviceSubnet", inv.kubeadmConfig?.serviceSubnet],
  ] as const) {
    if (value !== undefined && typeof value !== "string") fail(field, `is ${show(value)}, not a string`);
  }
  if (inv.kubeletConfig !== undefined && (!isObject(inv.kubeletConfig) || !Array.isArray(inv.kubeletConfig.clusterDNS))) {
    fail("kubeletConfig", `is ${show(inv.kubeletConfig)}, not {configMapName, clusterDNS: [...]}`);
  }
  if (inv.serviceCidrs !== undefined && (!Array.isArray(inv.serviceCidrs) || !inv.serviceCidrs.every((c) => isObject(c) && Array.isArray(c.cidrs)))) {
    fail("serviceCidrs", `is ${show(inv.serviceCidrs)}, not a list of {name, cidrs, terminating}`);
  }

  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : "";
    throw new UserError(`${what}: ${problems[0]}${more}${fix}`);
  }
  return inv as Inventory;
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A value as the file holds it, cut short: one line, however large. */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
