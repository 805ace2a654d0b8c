import { ConfigError } from "./errors";
import { Inventory } from "../plan/inventory";
import { Cni, DEFAULT_SERVICE_PARALLELISM, Platform, MigrationConfig, NodeAddressChange, NodeRole, SecondFamily, NodeTarget, RolloutStrategy, ServiceStrategy } from "./migrationConfig";
import { hostProblem, nodeNameProblem, PREFLIGHT_CHECK, userNameProblem } from "./nodeIdentity";
import { closest } from "fastest-levenshtein";
import { ConfigSource, Reader, isEncrypted, setCommand, show } from "./configReader";
import { FamilyRanges, readFamilyRanges } from "./familyRanges";
import { checkFamilyRanges } from "./rangeChecks";
import { readNodeAddresses } from "./nodeAddresses";
import { readHostAddress } from "./hostAddress";


/**
 * Turns raw stack config (the `cidr-migration:` namespace, keys without the prefix) into a typed MigrationConfig,
 * or throws a ConfigError listing every problem with the key, the bad value and what to do.
 * index.ts feeds it from pulumi.Config, the CLI from a Pulumi.<stack>.yaml file: one validator for both.
 */

export interface ValidationContext {
  /** Known once discovery ran: enables the capacity and node-address checks against the live cluster. */
  inventory?: Inventory;
  /**
   * The caller only shows the plan and changes nothing (`cidr-migration plan`): hostAddress may then be absent, and
   * a platform that is planned only (openshift) is accepted.
   */
  planOnly?: boolean;
}

const SCHEMA: Record<string, readonly string[] | null> = {
  serviceCidr: ["from", "to"],
  podCidr: ["from", "to", "nodeMaskSize"],
  cni: null,
  platform: null,
  kubeconfig: null,
  etcd: ["endpoints", "caCert", "cert", "key"],
  nodes: null,
  nodeAddresses: null,
  hostAddress: null,
  ssh: ["user", "privateKey"],
  dns: ["service"],
  nodeRollout: ["strategy", "maxUnavailable", "canary", "drainTimeoutSeconds", "ignorePreflightErrors", "dnsDisruptionBudget"],
  services: ["strategy", "parallelism", "allowLoadBalancerRecreate", "bridgeOldIps", "routeNewIpsFirst", "moveInPlace"],
  snapshot: ["directory", "trigger"],
};
const NODE_KEYS = ["name", "host", "port", "user", "role"];
const CNIS: readonly Cni[] = ["calico", "flannel", "cilium", "ovn-kubernetes", "none", "auto"];
const PLATFORMS: readonly Platform[] = ["kubeadm", "openshift"];
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

  // nodeAddresses without serviceCidr and podCidr: a run that changes node addresses only, and moves no range
  const addressOnly = source.values.serviceCidr === undefined && source.values.podCidr === undefined
    && Array.isArray(source.values.nodeAddresses) && source.values.nodeAddresses.length > 0;
  const families = addressOnly ? [] : readFamilyRanges(r, r.object("serviceCidr") ?? {}, r.object("podCidr") ?? {});

  const cni = r.oneOf("cni", r.raw("cni"), CNIS, "auto");
  const platform = r.oneOf("platform", r.raw("platform"), PLATFORMS, "kubeadm");
  checkPlatform(r, platform, cni, context.planOnly === true);
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
    // the re-create strategy's swaps: kube-proxy forwards each new address before DNS hands it out
    routeNewIpsFirst: r.boolean("services.routeNewIpsFirst", servicesRaw.routeNewIpsFirst, serviceStrategy === "recreate"),
    // a name that never stops resolving: re-created, a Service is absent from DNS between its delete and create
    moveInPlace: r.boolean("services.moveInPlace", servicesRaw.moveInPlace, serviceStrategy === "recreate"),
  };
  const snapshotRaw = r.object("snapshot") ?? {};
  const snapshot = {
    directory: r.string("snapshot.directory", snapshotRaw.directory, { required: false, example: "/var/backups/cidr-migration" }) ?? "./etcd-snapshots",
    trigger: r.string("snapshot.trigger", snapshotRaw.trigger, { required: false, example: "2026-12-01" }) ?? "initial",
  };

  for (const family of families ?? []) checkFamilyRanges(r, family, families!.length > 1, nodes, context.inventory);
  checkRollout(r, nodeRollout, nodes);
  checkStrategies(r, services.strategy, nodeRollout.strategy);
  if (services.moveInPlace && services.strategy !== "recreate") {
    r.fail("services.moveInPlace", `true needs services.strategy "recreate": the etcd rewrite moves every Service in one apiserver stop, with no stand-ins; remove services.moveInPlace or set it to false`);
  }
  const { changes: nodeAddresses, settings: hostAddress } = readHostAddress(r, readNodeAddresses(r, nodes, families, context.inventory), context.planOnly);
  // last, and only on an otherwise valid config: every other problem is reported first
  if (r.problems.length === 0 && !context.planOnly) refuseAddressChangesWithRewrite(r, nodeAddresses, nodeRollout.strategy);
  if (addressOnly) refuseRangeOnlyKeys(r, servicesRaw);

  if (r.problems.length > 0) throw new ConfigError(r.problems);
  const primary = families?.[0];
  return {
    ...(primary ? {
      serviceCidr: { from: primary.service.from!, to: primary.service.to },
      podCidr: { from: primary.pod.from!, to: primary.pod.to, nodeMaskSize: primary.pod.nodeMaskSize },
    } : {}),
    ...(families!.length > 1 ? { secondFamily: secondFamilyOf(families![1]) } : {}),
    platform,
    cni,
    kubeconfig,
    etcd,
    nodes,
    nodeAddresses,
    ...(hostAddress ? { hostAddress } : {}),
    ssh,
    dns,
    nodeRollout,
    services,
    snapshot,
  };
}

/**
 * OpenShift is planned, never run: its nodes, etcd and certificates belong to its operators, and it cannot run on
 * this project's test bed, so nothing would prove a run there. `cidr-migration plan` prints the oc runbook instead.
 */
function checkPlatform(r: Reader, platform: Platform, cni: Cni, planOnly: boolean): void {
  if (platform === "openshift" && !["ovn-kubernetes", "auto"].includes(cni)) {
    r.fail("cni", `is "${cni}" but platform is "openshift", whose pod network is OVN-Kubernetes; set cni to "ovn-kubernetes" or "auto"`);
  }
  if (platform !== "openshift" && cni === "ovn-kubernetes") {
    r.fail("cni", `"ovn-kubernetes" is planned only on OpenShift; set platform to "openshift" for its runbook (\`cidr-migration plan\`), or set cni to the cluster's CNI`);
  }
  if (platform === "openshift" && !planOnly) {
    r.fail("platform", `"openshift" is planned only: cidr-migration does not run on OpenShift (it cannot run on this project's test bed, so no step of it is tested there); run \`cidr-migration plan\` for the oc runbook and carry it out by hand, or remove platform for a kubeadm cluster`);
  }
}

function secondFamilyOf(f: FamilyRanges): SecondFamily {
  return {
    family: f.family,
    role: f.role === "add" ? "add" : "move",
    serviceCidr: { ...(f.service.from ? { from: f.service.from } : {}), to: f.service.to },
    podCidr: { ...(f.pod.from ? { from: f.pod.from } : {}), to: f.pod.to, nodeMaskSize: f.pod.nodeMaskSize },
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

/**
 * A run that changes node addresses only moves no Service: the Service move's settings would do nothing, and a
 * setting that does nothing is more likely a config meant for another stack.
 */
function refuseRangeOnlyKeys(r: Reader, services: Record<string, unknown>): void {
  for (const key of Object.keys(services)) {
    r.fail(`services.${key}`, `is set, but this run moves no Service (nodeAddresses without serviceCidr and podCidr: node addresses only); remove services.${key}, or set serviceCidr and podCidr for a range move`);
  }
}

/**
 * A worker's address changes while the node rollout re-registers it, which the etcd rewrite's rollout does not do
 * (it keeps every Node registered): refused before any change.
 */
function refuseAddressChangesWithRewrite(r: Reader, changes: NodeAddressChange[], strategy: RolloutStrategy): void {
  if (changes.length > 0 && strategy === "etcd-rewrite") {
    r.fail("nodeRollout.strategy", `is "etcd-rewrite", which keeps every Node registered, but a worker's address changes while the rollout re-registers it (nodeAddresses); use "reregister", or remove nodeAddresses`);
  }
}
