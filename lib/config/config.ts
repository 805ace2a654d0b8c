import {
  cidrContains,
  cidrSize,
  cidrsOverlap,
  familyOf,
  isIpAddress,
  parseCidr,
} from "../net/cidr";
import { subnetCount } from "../net/nodeSubnets";
import { ConfigError } from "./errors";
import { Inventory } from "../plan/inventory";
import { Cni, DEFAULT_SERVICE_PARALLELISM, MigrationConfig, NodeRole, NodeTarget, RolloutStrategy, ServiceStrategy } from "./migrationConfig";
import { hostProblem, nodeNameProblem, PREFLIGHT_CHECK, userNameProblem } from "./nodeIdentity";
import { closest } from "fastest-levenshtein";
import { ConfigSource, Reader, isEncrypted, setCommand, show } from "./configReader";


/**
 * Turns raw stack config (the `cidr-migration:` namespace, keys without the prefix) into a typed MigrationConfig,
 * or throws a ConfigError listing every problem with the key, the bad value and what to do.
 * index.ts feeds it from pulumi.Config, the CLI from a Pulumi.<stack>.yaml file: one validator for both.
 */

export interface ValidationContext {
  /** Known once discovery ran: enables the capacity and node-address checks against the live cluster. */
  inventory?: Inventory;
}

/** Kubernetes refuses Service ranges with more than 20 host bits (/12 for IPv4, /108 for IPv6). */
const MAX_SERVICE_HOST_BITS = 20;
/** kube-controller-manager refuses a node mask more than 16 bits longer than the cluster CIDR. */
const MAX_NODE_MASK_DELTA = 16;

const SCHEMA: Record<string, readonly string[] | null> = {
  serviceCidr: ["from", "to"],
  podCidr: ["from", "to", "nodeMaskSize"],
  cni: null,
  kubeconfig: null,
  etcd: ["endpoints", "caCert", "cert", "key"],
  nodes: null,
  ssh: ["user", "privateKey"],
  dns: ["service"],
  nodeRollout: ["strategy", "maxUnavailable", "canary", "drainTimeoutSeconds", "ignorePreflightErrors", "dnsDisruptionBudget"],
  services: ["strategy", "parallelism", "allowLoadBalancerRecreate", "bridgeOldIps"],
  snapshot: ["directory", "trigger"],
};
const NODE_KEYS = ["name", "host", "port", "user", "role"];
const CNIS: readonly Cni[] = ["calico", "flannel", "cilium", "none", "auto"];
const ROLES: readonly NodeRole[] = ["control-plane", "worker"];
const STRATEGIES: readonly RolloutStrategy[] = ["reregister", "kubeadm-rejoin", "etcd-rewrite"];
const SERVICE_STRATEGIES: readonly ServiceStrategy[] = ["recreate", "etcd-rewrite"];

export function validateConfig(source: ConfigSource, context: ValidationContext = {}): MigrationConfig {
  const r = new Reader(source);
  r.unknownKeys("", source.values, Object.keys(SCHEMA));
  for (const [key, nested] of Object.entries(SCHEMA)) {
    const value = source.values[key];
    if (nested && value && typeof value === "object" && !Array.isArray(value) && !isEncrypted(value)) {
      r.unknownKeys(key, value as Record<string, unknown>, nested);
    }
  }

  const svc = r.object("serviceCidr") ?? {};
  const pod = r.object("podCidr") ?? {};
  const serviceFrom = r.cidr("serviceCidr.from", svc.from, "10.96.0.0/12");
  const serviceTo = r.cidr("serviceCidr.to", svc.to, "10.112.0.0/12");
  const podFrom = r.cidr("podCidr.from", pod.from, "10.244.0.0/16");
  const podTo = r.cidr("podCidr.to", pod.to, "10.48.0.0/16");
  const nodeMaskSize = r.integer("podCidr.nodeMaskSize", pod.nodeMaskSize, { min: 1, max: 128, fallback: 0 });
  if (pod.nodeMaskSize === undefined) r.fail("podCidr.nodeMaskSize", `is required; set it with: ${setCommand("podCidr.nodeMaskSize", "24")}`);

  const cni = r.oneOf("cni", r.raw("cni"), CNIS, "auto");
  const kubeconfig = readKubeconfig(r);
  const etcd = readEtcd(r);
  const ssh = readSsh(r);
  const nodes = readNodes(r, ssh.user);
  const dns = readDns(r);
  const rollout = r.object("nodeRollout") ?? {};
  const servicesRaw = r.object("services") ?? {};
  const serviceStrategy = r.oneOf("services.strategy", servicesRaw.strategy, SERVICE_STRATEGIES, "recreate");
  const nodeRollout = {
    // the rewrite moves Services and Node podCIDRs in one apiserver stop: the nodes follow the Services' strategy
    strategy: r.oneOf("nodeRollout.strategy", rollout.strategy, STRATEGIES, serviceStrategy === "etcd-rewrite" ? "etcd-rewrite" : "reregister"),
    maxUnavailable: r.integer("nodeRollout.maxUnavailable", rollout.maxUnavailable, { min: 1, fallback: 1 }),
    canary: r.string("nodeRollout.canary", rollout.canary, { required: false, example: "worker-1" }),
    drainTimeoutSeconds: r.integer("nodeRollout.drainTimeoutSeconds", rollout.drainTimeoutSeconds, { min: 1, fallback: 300 }),
    ...readIgnorePreflightErrors(r, rollout.ignorePreflightErrors),
    dnsDisruptionBudget: r.boolean("nodeRollout.dnsDisruptionBudget", rollout.dnsDisruptionBudget, true),
  };
  const services = {
    strategy: serviceStrategy,
    parallelism: r.integer("services.parallelism", servicesRaw.parallelism, { min: 1, max: 500, fallback: DEFAULT_SERVICE_PARALLELISM }),
    allowLoadBalancerRecreate: r.boolean("services.allowLoadBalancerRecreate", servicesRaw.allowLoadBalancerRecreate, false),
    // the rewrite leaves every pod holding old addresses until it restarts: bridged unless the operator says no
    bridgeOldIps: r.boolean("services.bridgeOldIps", servicesRaw.bridgeOldIps, serviceStrategy === "etcd-rewrite"),
  };
  const snapshotRaw = r.object("snapshot") ?? {};
  const snapshot = {
    directory: r.string("snapshot.directory", snapshotRaw.directory, { required: false, example: "/var/backups/cidr-migration" }) ?? "./etcd-snapshots",
    trigger: r.string("snapshot.trigger", snapshotRaw.trigger, { required: false, example: "2026-12-01" }) ?? "initial",
  };

  if (podTo) checkNodeMask(r, podTo, nodeMaskSize);
  if (serviceFrom && serviceTo && podFrom && podTo) {
    checkRanges(r, { serviceFrom, serviceTo, podFrom, podTo });
    checkNodeAddresses(r, [serviceFrom, serviceTo, podFrom, podTo], nodes, context.inventory);
    checkCapacity(r, { serviceFrom, serviceTo, podTo, nodeMaskSize }, nodes, context.inventory);
  }
  checkRollout(r, nodeRollout, nodes);
  checkStrategies(r, services.strategy, nodeRollout.strategy);

  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return {
    serviceCidr: { from: serviceFrom!, to: serviceTo! },
    podCidr: { from: podFrom!, to: podTo!, nodeMaskSize },
    cni,
    kubeconfig,
    etcd,
    nodes,
    ssh,
    dns,
    nodeRollout,
    services,
    snapshot,
  };
}

function readKubeconfig(r: Reader): MigrationConfig["kubeconfig"] {
  const value = r.raw("kubeconfig");
  if (value === undefined || value === null || value === "") return {};
  if (isEncrypted(value)) {
    const content = r.encrypted("kubeconfig", value);
    return content ? { content } : {};
  }
  if (typeof value !== "string") {
    r.fail("kubeconfig", `expected a file path or the kubeconfig content as a secret, got ${show(value)}`);
    return {};
  }
  const looksLikeContent = value.includes("\n") || value.includes("apiVersion");
  if (!looksLikeContent) return { path: value };
  const content = r.secret("kubeconfig", "kubeconfig", value);
  return content ? { content } : {};
}

function readEtcd(r: Reader): MigrationConfig["etcd"] {
  const etcd = r.object("etcd") ?? {};
  const endpoints: string[] = [];
  const raw = etcd.endpoints;
  const list = typeof raw === "string" ? raw.split(",") : raw;
  if (!Array.isArray(list) || list.length === 0) {
    r.fail("etcd.endpoints", `expected a list of etcd client URLs, got ${show(raw)}; e.g. ${setCommand("etcd.endpoints[0]", "https://10.0.0.11:2379")}`);
  } else {
    list.forEach((e, i) => {
      if (typeof e !== "string" || !/^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(e.trim())) {
        r.fail(`etcd.endpoints[${i}]`, `${show(e)} is not an etcd client URL like https://10.0.0.11:2379`);
      } else {
        endpoints.push(e.trim());
      }
    });
  }
  const caCert = r.secret("etcd.caCert", "etcd", etcd.caCert);
  const cert = r.secret("etcd.cert", "etcd", etcd.cert);
  const key = r.secret("etcd.key", "etcd", etcd.key);
  if ((cert === undefined) !== (key === undefined)) {
    r.fail(cert ? "etcd.key" : "etcd.cert", "etcd.cert and etcd.key go together: set both (with --secret) or neither");
  }
  if (endpoints.some((e) => e.startsWith("https://")) && !caCert) {
    r.fail("etcd.caCert", `https endpoints need the etcd CA: ${setCommand("etcd.caCert", "< /etc/kubernetes/pki/etcd/ca.crt", true)}`);
  }
  return { endpoints, caCert, cert, key };
}

function readSsh(r: Reader): MigrationConfig["ssh"] {
  const ssh = r.object("ssh") ?? {};
  return {
    user: r.checked("ssh.user", r.string("ssh.user", ssh.user, { required: false, example: "ubuntu" }), userNameProblem, "ubuntu") ?? "root",
    privateKey: r.secret("ssh.privateKey", "ssh", ssh.privateKey),
  };
}

function readNodes(r: Reader, defaultUser: string): NodeTarget[] {
  const raw = r.raw("nodes");
  if (!Array.isArray(raw) || raw.length === 0) {
    r.fail("nodes", `expected a list of nodes [{name, host, role}], got ${show(raw)}; see Pulumi.prod.yaml for an example`);
    return [];
  }
  const nodes: NodeTarget[] = [];
  const seen = new Set<string>();
  raw.forEach((entry, i) => {
    const key = `nodes[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      r.fail(key, `expected {name, host, role}, got ${show(entry)}`);
      return;
    }
    const e = entry as Record<string, unknown>;
    r.unknownKeys(key, e, NODE_KEYS);
    const name = r.checked(`${key}.name`, r.string(`${key}.name`, e.name, { required: true, example: "worker-1" }), nodeNameProblem, "worker-1");
    const host = r.checked(`${key}.host`, r.string(`${key}.host`, e.host, { required: true, example: "10.0.0.21" }), hostProblem, "10.0.0.21");
    const role = e.role === undefined ? undefined : r.oneOf(`${key}.role`, e.role, ROLES, "worker");
    if (e.role === undefined) r.fail(`${key}.role`, `is required: one of ${ROLES.join(", ")}`);
    if (name && seen.has(name)) r.fail(`${key}.name`, `${show(name)} appears twice; each node once`);
    if (name) seen.add(name);
    const port = r.integer(`${key}.port`, e.port, { min: 1, max: 65535, fallback: 22 });
    const user = r.checked(`${key}.user`, r.string(`${key}.user`, e.user, { required: false, example: "ubuntu" }), userNameProblem, "ubuntu") ?? defaultUser;
    if (name && host && role) nodes.push({ name, host, port, user, role });
  });
  if (nodes.length > 0 && !nodes.some((n) => n.role === "control-plane")) {
    r.fail("nodes", "no node has role control-plane; list every control-plane node so its manifests can be edited");
  }
  return nodes;
}

function readDns(r: Reader): MigrationConfig["dns"] {
  const dns = r.object("dns") ?? {};
  const service = r.string("dns.service", dns.service, { required: false, example: "kube-system/kube-dns" }) ?? "kube-system/kube-dns";
  const parts = service.split("/");
  if (parts.length !== 2 || !parts[0] || !parts[1]) {
    r.fail("dns.service", `${show(service)} must be NAMESPACE/NAME, e.g. kube-system/kube-dns`);
    return { namespace: "kube-system", name: "kube-dns" };
  }
  return { namespace: parts[0], name: parts[1] };
}

interface Ranges {
  serviceFrom: string;
  serviceTo: string;
  podFrom: string;
  podTo: string;
}

function checkRanges(r: Reader, x: Ranges): void {
  const families = new Set([x.serviceFrom, x.serviceTo, x.podFrom, x.podTo].map(familyOf));
  if (families.size > 1) {
    r.fail("serviceCidr", `mixed address families (${[x.serviceFrom, x.serviceTo, x.podFrom, x.podTo].join(", ")}); use one family for all four ranges (dual-stack is not supported yet)`);
    return;
  }
  for (const [name, from, to] of [["serviceCidr", x.serviceFrom, x.serviceTo], ["podCidr", x.podFrom, x.podTo]] as const) {
    if (from === to) {
      r.fail(`${name}.to`, `${show(to)} equals ${name}.from; nothing to migrate — set the new range`);
    } else if (cidrsOverlap(from, to) && !cidrContains(to, from)) {
      r.fail(`${name}.to`, `${show(to)} partly overlaps ${name}.from ${from}; the new range must be disjoint from the old one (a move) or contain it (an expansion)`);
    }
  }
  const service = { "serviceCidr.from": x.serviceFrom, "serviceCidr.to": x.serviceTo };
  const pod = { "podCidr.from": x.podFrom, "podCidr.to": x.podTo };
  for (const [sk, sv] of Object.entries(service)) {
    for (const [pk, pv] of Object.entries(pod)) {
      if (cidrsOverlap(sv, pv)) r.fail(sk, `${show(sv)} overlaps ${pk} ${pv}; Service and Pod ranges must not overlap`);
    }
  }
  const bits = parseCidr(x.serviceTo).bits;
  const hostBits = bits - parseCidr(x.serviceTo).prefix;
  if (hostBits > MAX_SERVICE_HOST_BITS) {
    r.fail("serviceCidr.to", `${show(x.serviceTo)} is larger than Kubernetes accepts for a Service range (at most /${bits - MAX_SERVICE_HOST_BITS}); choose a longer prefix`);
  }
}

function checkNodeMask(r: Reader, podTo: string, nodeMaskSize: number): void {
  const { prefix, bits } = parseCidr(podTo);
  if (nodeMaskSize === 0) return;
  if (nodeMaskSize <= prefix) {
    r.fail("podCidr.nodeMaskSize", `${nodeMaskSize} must be longer than the pod prefix /${prefix} of ${podTo}`);
  } else if (nodeMaskSize - prefix > MAX_NODE_MASK_DELTA) {
    r.fail("podCidr.nodeMaskSize", `${nodeMaskSize} is more than ${MAX_NODE_MASK_DELTA} bits longer than /${prefix} (${podTo}); kube-controller-manager refuses it — use at most /${prefix + MAX_NODE_MASK_DELTA}`);
  } else if (nodeMaskSize > bits) {
    r.fail("podCidr.nodeMaskSize", `${nodeMaskSize} is longer than a ${bits}-bit address`);
  }
}

function checkNodeAddresses(r: Reader, ranges: string[], nodes: NodeTarget[], inventory?: Inventory): void {
  const labels = ["serviceCidr.from", "serviceCidr.to", "podCidr.from", "podCidr.to"];
  const addresses: Array<{ ip: string; what: string }> = [];
  nodes.forEach((n, i) => {
    if (isIpAddress(n.host)) addresses.push({ ip: n.host, what: `nodes[${i}].host (${n.name})` });
  });
  for (const node of inventory?.nodes ?? []) {
    for (const ip of node.internalIPs) addresses.push({ ip, what: `Node ${node.name} InternalIP` });
  }
  ranges.forEach((range, i) => {
    const inside = addresses.filter(({ ip }) => familyOf(ip) === familyOf(range) && cidrContains(range, ip));
    if (inside.length === 0) return;
    const listed = inside.slice(0, 3).map(({ ip, what }) => `${what} ${ip}`).join(", ");
    const more = inside.length > 3 ? ` and ${inside.length - 3} more` : "";
    r.fail(labels[i], `${show(range)} contains ${listed}${more}; Service and Pod ranges must not overlap node addresses`);
  });
}

function checkCapacity(
  r: Reader,
  x: { serviceFrom: string; serviceTo: string; podTo: string; nodeMaskSize: number },
  nodes: NodeTarget[],
  inventory?: Inventory,
): void {
  if (x.nodeMaskSize > parseCidr(x.podTo).prefix && x.nodeMaskSize <= parseCidr(x.podTo).bits) {
    const nodeCount = Math.max(nodes.length, inventory?.nodes.length ?? 0);
    const capacity = subnetCount(x.podTo, x.nodeMaskSize);
    if (BigInt(nodeCount) > capacity) {
      r.fail("podCidr.to", `${show(x.podTo)} holds ${capacity} node subnets of /${x.nodeMaskSize} but the cluster has ${nodeCount} nodes; choose a larger range or a longer nodeMaskSize`);
    }
  }
  // The network address, the kubernetes Service's first IP and (IPv4) the broadcast address are never handed out.
  const reserved = familyOf(x.serviceTo) === "IPv4" ? 3n : 2n;
  const size = cidrSize(x.serviceTo);
  const usable = size > reserved ? size - reserved : 0n;
  if (usable === 0n) {
    const { prefix } = parseCidr(x.serviceTo);
    r.fail("serviceCidr.to", `${show(x.serviceTo)} leaves no address for a Service: a /${prefix} holds ${size}, and the network address, the kubernetes Service's first IP${reserved === 3n ? " and the broadcast address" : ""} are reserved; choose a shorter prefix, e.g. /${Math.min(prefix, parseCidr(x.serviceTo).bits - 12)}`);
  } else if (inventory) {
    const moving = inventory.services.filter(
      (s) => s.clusterIP && s.clusterIP !== "None" && isIpAddress(s.clusterIP) && cidrContains(x.serviceFrom, s.clusterIP) && !cidrContains(x.serviceTo, s.clusterIP),
    ).length;
    if (BigInt(moving) > usable) {
      r.fail("serviceCidr.to", `${show(x.serviceTo)} has room for ${usable} Services but ${moving} must move into it; choose a larger range`);
    }
  }
}

/** nodeRollout.ignorePreflightErrors: a list of kubeadm preflight check names, or nothing. */
function readIgnorePreflightErrors(r: Reader, raw: unknown): { ignorePreflightErrors?: string[] } {
  if (raw === undefined) return {};
  const key = "nodeRollout.ignorePreflightErrors";
  if (!Array.isArray(raw)) {
    r.fail(key, `expected a list of kubeadm preflight check names, got ${show(raw)}; e.g. ${setCommand(`${key}[0]`, "SystemVerification")}`);
    return {};
  }
  const checks: string[] = [];
  raw.forEach((check, i) => {
    if (typeof check === "string" && PREFLIGHT_CHECK.test(check)) checks.push(check);
    else r.fail(`${key}[${i}]`, `${show(check)} is not a kubeadm preflight check name such as SystemVerification (letters, digits, . and -)`);
  });
  return { ignorePreflightErrors: checks };
}

/**
 * The etcd rewrite is one apiserver stop that moves Services and Node podCIDRs together: either both keys say
 * etcd-rewrite, or neither does.
 */
function checkStrategies(r: Reader, services: ServiceStrategy, nodes: RolloutStrategy): void {
  if (services === "etcd-rewrite" && nodes !== "etcd-rewrite") {
    r.fail("nodeRollout.strategy", `${show(nodes)} cannot follow services.strategy "etcd-rewrite": the rewrite moves every Node's podCIDR in the same apiserver stop, and the nodes then only restart; remove nodeRollout.strategy or set it to "etcd-rewrite"`);
  }
  if (nodes === "etcd-rewrite" && services !== "etcd-rewrite") {
    r.fail("nodeRollout.strategy", `"etcd-rewrite" needs services.strategy "etcd-rewrite" too: Node podCIDRs are rewritten in the same apiserver stop as the Services; set ${setCommand("services.strategy", "etcd-rewrite")}, or choose "reregister" or "kubeadm-rejoin"`);
  }
}

/**
 * kubeadm-rejoin resets and joins workers only; control-plane nodes re-register under either strategy (a reset
 * would remove their etcd member), so it suits any number of control-plane nodes.
 */
function checkRollout(r: Reader, rollout: MigrationConfig["nodeRollout"], nodes: NodeTarget[]): void {
  if (rollout.canary !== undefined && nodes.length > 0 && !nodes.some((n) => n.name === rollout.canary)) {
    r.fail("nodeRollout.canary", `${show(rollout.canary)} is not in nodes; did you mean "${closest(rollout.canary, nodes.map((n) => n.name))}"?`);
  }
}
