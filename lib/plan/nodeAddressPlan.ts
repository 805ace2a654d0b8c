import { configProblem } from "../config/configReader";
import { ConfigError, ConfigProblem, UserError } from "../config/errors";
import { MigrationConfig, NodeAddressChange, NodeRole } from "../config/migrationConfig";
import { endpointHost, urlHost } from "../net/cidr";
import { Inventory } from "./inventory";

/**
 * Pure: the node IP changes (nodeAddresses, issue 16) → their order, what must follow each address, and an estimate.
 * Workers go first (the canary alone, then batches of nodeRollout.maxUnavailable), control-plane nodes last and one
 * at a time: each carries an etcd member, and etcd keeps quorum only while at most one member is away.
 * A worker's change runs with the node rollout (components/nodeRollout, in the rollout's own waves); a control-plane
 * node's after it, one node at a time (components/controlPlaneAddress).
 */

/** One place that holds the node's address and must follow it. */
export interface NodeAddressReference {
  /** A file on the node, an object in the cluster, or an etcd member. */
  where: string;
  /** What in it holds the address. */
  what: string;
}

export interface NodeAddressStep {
  name: string;
  role: NodeRole;
  from: string;
  to: string;
  /** The interface prefix length, when the config gives one (the entry's own, else hostAddress.prefix). */
  prefix?: number;
  /** 0 is the first batch; a control-plane node and the canary are always alone in theirs. */
  batch: number;
  canary: boolean;
  references: NodeAddressReference[];
  estimateSeconds: number;
}

export interface NodeAddressPlan {
  steps: NodeAddressStep[];
  /** Ours (batches run one after another; a batch costs its slowest node) beside the manual runbook's. */
  estimate: { oursSeconds: number; manualMinutes: { min: number; max: number } };
  warnings: string[];
}

/**
 * The published manual runbook (OpenShift's "changing the IP addresses of nodes"): 2 to 6 hours for the cluster,
 * whatever the number of nodes, with the cluster's API unavailable for much of it.
 */
export const NODE_ADDRESS_MANUAL_MINUTES = { min: 120, max: 360 } as const;

/** Our estimates per node, in seconds. */
export const NODE_ADDRESS_ESTIMATE_SECONDS = {
  /** Cordon and drain, kubelet flags, CNI state, kubelet restart, Ready with the new InternalIP. */
  worker: 300,
  /** The worker's steps plus etcd member update, certificates re-issued, manifests and kubeconfigs edited, healthy again. */
  controlPlane: 600,
} as const;


/** The references every node holds, then the ones a control-plane node adds. */
export function nodeAddressReferences(change: Pick<NodeAddressChange, "name" | "role" | "from">): NodeAddressReference[] {
  const { name, from } = change;
  const refs: NodeAddressReference[] = [
    { where: "/var/lib/kubelet/kubeadm-flags.env", what: `kubelet --node-ip ${from} (KUBELET_KUBEADM_ARGS)` },
    { where: `Node ${name}`, what: `status.addresses InternalIP ${from} (the kubelet reports the new one once restarted)` },
    { where: "/var/lib/cni", what: "CNI state: IPAM leases and the node address the CNI recorded; cleaned so the CNI re-detects it" },
  ];
  if (change.role !== "control-plane") return refs;
  return [
    ...refs,
    { where: `etcd member ${name}`, what: `peer URL https://${urlHost(from)}:2380 (etcdctl member update) and client URL https://${urlHost(from)}:2379` },
    { where: "/etc/kubernetes/manifests/etcd.yaml", what: "--advertise-client-urls, --listen-client-urls, --initial-advertise-peer-urls, --listen-peer-urls, --initial-cluster, and the advertise-client-urls annotation" },
    { where: "/etc/kubernetes/pki/etcd/server.crt, /etc/kubernetes/pki/etcd/peer.crt", what: `SAN ${from}: re-issued with the new address` },
    { where: "/etc/kubernetes/pki/apiserver.crt", what: `SAN ${from}: re-issued with the new address` },
    { where: "/etc/kubernetes/manifests/kube-apiserver.yaml", what: `--advertise-address ${from}, --etcd-servers when it names ${from}, and the advertise-address.endpoint annotation` },
    { where: "/etc/kubernetes/{admin,super-admin,controller-manager,scheduler,kubelet}.conf", what: `server: https://${urlHost(from)}:6443 where it names this node` },
    { where: "ConfigMap kube-system/kubeadm-config", what: `controlPlaneEndpoint, certSANs and API endpoints naming ${from}` },
  ];
}

/** This tool's own etcd endpoints that name the old address: the stack config must follow it too. */
function ownEndpoints(config: MigrationConfig, from: string): NodeAddressReference[] {
  const naming = config.etcd.endpoints.filter((e) => endpointHost(e) === from);
  return naming.length > 0 ? [{ where: "cidr-migration:etcd.endpoints", what: `${naming.join(", ")}: this stack's own etcd endpoint` }] : [];
}

/** Control-plane nodes of the cluster: those listed with role control-plane, and (when known) the live ones. */
export function controlPlaneNames(config: MigrationConfig, inventory?: Inventory): Set<string> {
  const names = new Set(config.nodes.filter((n) => n.role === "control-plane").map((n) => n.name));
  for (const n of inventory?.nodes ?? []) if (n.controlPlane) names.add(n.name);
  return names;
}

/**
 * What the planner refuses, one problem per entry: moving a control-plane node of a two-member etcd. Its quorum is
 * two, so while one member's peer URL changes the other cannot commit anything: the cluster stops, and a member that
 * fails to come back on its new address leaves it stopped.
 */
export function nodeAddressRefusals(config: MigrationConfig, inventory?: Inventory): ConfigProblem[] {
  const controlPlanes = controlPlaneNames(config, inventory);
  if (controlPlanes.size !== 2) return [];
  return config.nodeAddresses.flatMap((c, i) =>
    controlPlanes.has(c.name)
      ? [configProblem(`nodeAddresses[${i}].name`, `${c.name} is one of 2 control-plane nodes: etcd with 2 members needs both for quorum, so it cannot lose one while its address changes; add a third control-plane node first (then change one at a time), or change only worker addresses in this run`)]
      : [],
  );
}

const byName = (a: NodeAddressChange, b: NodeAddressChange) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The plan, or a ConfigError naming each refused entry. */
export function planNodeAddresses(config: MigrationConfig, inventory?: Inventory): NodeAddressPlan {
  const problems = nodeAddressRefusals(config, inventory);
  if (problems.length > 0) throw new ConfigError(problems);
  const controlPlanes = controlPlaneNames(config, inventory);
  const isControlPlane = (c: NodeAddressChange) => c.role === "control-plane" || controlPlanes.has(c.name);
  const changes = [...config.nodeAddresses].sort(byName);
  const workers = changes.filter((c) => !isControlPlane(c));
  const cps = changes.filter(isControlPlane);
  // the configured canary when it changes, else the first worker, else the first control-plane node
  const canary = changes.find((c) => c.name === config.nodeRollout.canary) ?? workers[0] ?? cps[0];

  const batches: NodeAddressChange[][] = [];
  if (canary) batches.push([canary]);
  const rest = workers.filter((c) => c !== canary);
  for (let i = 0; i < rest.length; i += config.nodeRollout.maxUnavailable) batches.push(rest.slice(i, i + config.nodeRollout.maxUnavailable));
  for (const c of cps) if (c !== canary) batches.push([c]);

  const steps = batches.flatMap((batch, b) =>
    batch.map((c): NodeAddressStep => {
      const role: NodeRole = isControlPlane(c) ? "control-plane" : "worker";
      return {
        name: c.name,
        role,
        from: c.from,
        to: c.to,
        ...(c.prefix !== undefined ? { prefix: c.prefix } : {}),
        batch: b,
        canary: c === canary,
        references: [...nodeAddressReferences({ name: c.name, role, from: c.from }), ...ownEndpoints(config, c.from)],
        estimateSeconds: role === "control-plane" ? NODE_ADDRESS_ESTIMATE_SECONDS.controlPlane : NODE_ADDRESS_ESTIMATE_SECONDS.worker,
      };
    }),
  );
  assertNodeAddressBatches(steps);
  const oursSeconds = batches.reduce((sum, _, b) => sum + Math.max(...steps.filter((s) => s.batch === b).map((s) => s.estimateSeconds)), 0);
  const warnings: string[] = [];
  if (controlPlanes.size === 1 && cps.length > 0) {
    warnings.push(`${cps[0].name} is the only control-plane node: the API and etcd are unavailable while its address changes`);
  }
  return { steps, estimate: { oursSeconds, manualMinutes: { ...NODE_ADDRESS_MANUAL_MINUTES } }, warnings };
}

/**
 * The order's rules, checked on any step list before it is used: batches numbered from 0 without gaps, the canary
 * alone and first, a control-plane node alone in its batch, and no worker after a control-plane node.
 */
export function assertNodeAddressBatches(steps: readonly NodeAddressStep[]): void {
  const batches = new Map<number, NodeAddressStep[]>();
  for (const s of steps) batches.set(s.batch, [...(batches.get(s.batch) ?? []), s]);
  const order = [...batches.keys()].sort((a, b) => a - b);
  order.forEach((b, i) => {
    if (b !== i) throw new UserError(`node address batch ${b} follows batch ${order[i - 1] ?? "none"}: batches run 0, 1, 2, ...; re-run the planner`);
  });
  const names = new Set<string>();
  let controlPlaneSeen = false;
  for (const b of order) {
    const batch = batches.get(b)!;
    const cps = batch.filter((s) => s.role === "control-plane");
    if (cps.length > 1) throw new UserError(`node address batch ${b} holds control-plane nodes ${cps.map((s) => s.name).join(", ")}: each goes alone (etcd loses quorum with two members away); re-run the planner`);
    if (batch.length > 1 && (cps.length > 0 || batch.some((s) => s.canary))) {
      throw new UserError(`node address batch ${b} holds ${batch.map((s) => s.name).join(", ")}: ${cps.length > 0 ? "a control-plane node" : "the canary"} goes alone; re-run the planner`);
    }
    if (batch.some((s) => s.canary) && b !== 0) throw new UserError(`node address canary ${batch[0].name} is in batch ${b}; it goes first; re-run the planner`);
    if (controlPlaneSeen && cps.length === 0 && !batch.some((s) => s.canary)) {
      throw new UserError(`node address batch ${b} moves workers ${batch.map((s) => s.name).join(", ")} after a control-plane node: workers go first; re-run the planner`);
    }
    if (cps.length > 0 && !batch.some((s) => s.canary)) controlPlaneSeen = true;
    for (const s of batch) {
      if (names.has(s.name)) throw new UserError(`node address change of ${s.name} is planned twice; re-run the planner`);
      names.add(s.name);
    }
  }
}
