import * as pulumi from "@pulumi/pulumi";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { isIpAddress, normalizeCidr, normalizeIp } from "../lib/net/cidr";
import { isRangeList } from "../lib/net/rangeList";
import { UnmanagedPodPolicy } from "../lib/nodeMove/drainDecision";
import { releaseCalicoIpam } from "../lib/nodeMove/apiSteps/calicoIpamRelease";
import { deleteNode } from "../lib/nodeMove/apiSteps/deregister";
import { drain } from "../lib/nodeMove/apiSteps/drain";
import { rejoin } from "../lib/nodeMove/apiSteps/rejoin";
import { addressAgents, addressFollow, addressReported } from "../lib/nodeMove/apiSteps/addressFollow";
import { Clients, NODE_API_STEPS, NodeApiStepName, StepInputs, StepRun } from "../lib/nodeMove/apiSteps/stepRun";
import { containsUnknown, kubeConfigFrom, sameAsRecorded, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The API side of a node move (issue 7), as six resources that share one dynamic provider:
 *
 *   NodeDrain          back up the Node's labels/taints/annotations/unschedulable to a kube-system ConfigMap,
 *                      cordon, evict its pods through the Eviction API (PDBs respected, DaemonSet and mirror pods
 *                      left, emptyDir allowed), fail after drainTimeoutSeconds. Never forces anything.
 *   CalicoIpamRelease  delete the node's IPAMBlocks and BlockAffinities in the old pool (Calico only).
 *   NodeDeregister     delete the Node object (only the backed-up one, by uid precondition).
 *   NodeRejoin         wait for the kubelet's re-registration, set the planned podCIDR (kube-controller-manager
 *                      runs with --allocate-node-cidrs=false meanwhile), restore the metadata exactly while still
 *                      cordoned, evict the DaemonSet pods left from the old Node (CNI agent, kube-proxy, ...:
 *                      they survive the re-registration on the old network), wait Ready, uncordon (back to the
 *                      backed-up unschedulable), wait for the node's DaemonSet pods to be Ready in the new subnet,
 *                      verify podCIDR and metadata.
 *   NodeAddressReported, NodeAddressFollow   a control-plane node whose address moves (its Node kept): the new
 *                      InternalIP reported, then its host-network pods off the old address (lib/nodeMove/apiSteps/addressFollow).
 *   NodeAddressAgents  any node whose address moved, once the old one is gone: its CNI agent and kube-proxy restarted
 *                      to detect the new address, the CNI's address annotations on the Node naming it.
 *
 * Each step is one file in lib/nodeMove/apiSteps/, run by its StepRun; this file checks, diffs and dispatches.
 * Remote steps (CNI cleanup, kubelet stop/start, clusterDNS) run between them as RemoteScripts
 * (components/nodeRollout.ts). Every step is idempotent and keyed by (runId, node): a re-run after a crash reads
 * the backup from the cluster, never from memory, and recognises the re-registered Node by its new uid, so it
 * neither deletes it again nor loses the labels. check and diff are read-only. The kubeconfig is an input only
 * (a secret); it is never in the outputs, the log or an error.
 */

export const NODE_API_STEPS_VERSION = "1";

/** Changing one of these is another action on the cluster: a replacement. The rest is recorded in place. */
const IDENTITY = ["step", "node", "runId", "plannedPodCIDR", "oldPoolCidrs", "nodeKept", "podCidrFromController", "internalIP", "oldInternalIP"] as const;
const IN_PLACE = ["version", "oldPodCIDR", "drainTimeoutSeconds", "evictionRetrySeconds", "unmanagedPods", "rejoinTimeoutSeconds", "dnsService"] as const;

type StepWire = Wire<StepInputs>;

/** What the state holds: the step's inputs but the kubeconfig, then what the step reports (its own fields). */
type StepOutputs = Partial<Omit<StepInputs, "kubeconfig">> & Record<string, unknown>;

function checkInputs(news: StepWire): pulumi.dynamic.CheckResult<StepWire> {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const fail = (property: string, reason: string) => failures.push({ property, reason });
  const known = (key: keyof StepInputs) => news[key] !== undefined && !containsUnknown(news[key]);
  const step = news.step as NodeApiStepName;
  if (!known("step") || !NODE_API_STEPS.includes(step)) fail("step", `step ${JSON.stringify(news.step)} is not one of ${NODE_API_STEPS.join(", ")}`);
  for (const key of ["node", "runId"] as const) {
    if (news[key] === undefined) fail(key, `${key} is required`);
    else if (known(key) && (typeof news[key] !== "string" || (news[key] as string) === "")) fail(key, `${key} must be a non-empty string; got ${JSON.stringify(news[key])}`);
  }
  // never echo the kubeconfig: it holds credentials
  if (news.kubeconfig === undefined) fail("kubeconfig", "kubeconfig is required: the content of an admin kubeconfig, as a secret");
  else if (known("kubeconfig") && (typeof news.kubeconfig !== "string" || !/\bclusters\b/.test(news.kubeconfig))) fail("kubeconfig", "kubeconfig must be the content of a kubeconfig file (the value given is not)");
  if (step === "drain" || step === "rejoin") {
    if (news.plannedPodCIDR === undefined) fail("plannedPodCIDR", "plannedPodCIDR is required: the node's subnet in the new pod range (plan.nodes[].newPodCIDR)");
    else if (known("plannedPodCIDR")) {
      // one subnet, or a dual-stack node's pair comma-separated (plan.nodes[].newPodCIDRs)
      try {
        const normal = String(news.plannedPodCIDR).split(",").map(normalizeCidr).join(",");
        if (normal !== news.plannedPodCIDR) fail("plannedPodCIDR", `plannedPodCIDR ${JSON.stringify(news.plannedPodCIDR)} is not in normal form; pass ${normal}`);
        else if (!isRangeList(normal)) fail("plannedPodCIDR", `plannedPodCIDR ${normal} is neither one subnet nor a dual-stack pair of one IPv4 and one IPv6 subnet`);
      } catch (err) {
        fail("plannedPodCIDR", (err as Error).message);
      }
    }
  }
  if (step === "release-calico-ipam" && known("oldPoolCidrs") && (!Array.isArray(news.oldPoolCidrs) || news.oldPoolCidrs.length === 0)) {
    fail("oldPoolCidrs", "oldPoolCidrs must list the old IPPool CIDRs, e.g. [\"10.244.0.0/16\"]");
  }
  for (const key of ["drainTimeoutSeconds", "evictionRetrySeconds", "rejoinTimeoutSeconds"] as const) {
    if (known(key) && (!Number.isFinite(news[key]) || (news[key] as number) <= 0)) fail(key, `${key} ${JSON.stringify(news[key])} must be a positive number of seconds`);
  }
  for (const key of ["internalIP", "oldInternalIP"] as const) {
    if ((step === "address-follow" || step === "address-reported" || step === "address-agents") && news[key] === undefined) fail(key, `${key} is required: the node's ${key === "internalIP" ? "new" : "old"} address`);
    if (known(key) && (typeof news[key] !== "string" || !isIpAddress(news[key] as string) || normalizeIp(news[key] as string) !== news[key])) {
      fail(key, `${key} ${JSON.stringify(news[key])} must be the node's ${key === "internalIP" ? "new" : "old"} address in normal form, e.g. 192.168.20.21`);
    }
  }
  if (known("unmanagedPods") && news.unmanagedPods !== "refuse" && news.unmanagedPods !== "evict") fail("unmanagedPods", `unmanagedPods ${JSON.stringify(news.unmanagedPods)} must be "refuse" or "evict"`);
  const dns = news.dnsService as { namespace?: unknown; name?: unknown } | undefined;
  if (known("dnsService") && (typeof dns?.namespace !== "string" || typeof dns?.name !== "string")) fail("dnsService", `dnsService ${JSON.stringify(news.dnsService)} must name the DNS Service, e.g. { namespace: "kube-system", name: "kube-dns" }`);
  return { inputs: news, failures };
}

function diffInputs(olds: StepOutputs, news: StepWire): pulumi.dynamic.DiffResult {
  const same = (key: keyof StepOutputs & keyof StepWire) => sameAsRecorded(news[key], olds[key]);
  const replaces = IDENTITY.filter((key) => !same(key));
  const updates = IN_PLACE.filter((key) => !same(key));
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}

/** The inputs once check passes on them (so each holds its type); or every failure in one error. */
function asInputs(news: StepWire): StepInputs {
  const failures = checkInputs(news).failures ?? [];
  if (failures.length > 0) throw new Error(failures.map((f) => `${f.property}: ${f.reason}`).join("; "));
  return { ...(news as StepInputs), version: typeof news.version === "string" ? news.version : NODE_API_STEPS_VERSION };
}

/** The inputs kept in the outputs (diff compares against them); never the kubeconfig. */
function recordedInputs(inputs: StepInputs): Partial<Omit<StepInputs, "kubeconfig">> {
  const kept: Partial<Omit<StepInputs, "kubeconfig">> = {};
  for (const key of [...IDENTITY, ...IN_PLACE]) if (inputs[key] !== undefined) Object.assign(kept, { [key]: inputs[key] });
  return kept;
}

function clientsFor(kubeconfig: string): Clients {
  const kc = kubeConfigFrom(kubeconfig);
  return { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), kc, server: kc.getCurrentCluster()?.server };
}

// ---------------------------------------------------------------------------------------------- provider

const STEPS: Record<NodeApiStepName, (run: StepRun) => Promise<Record<string, unknown>>> = {
  drain,
  "release-calico-ipam": releaseCalicoIpam,
  "delete-node": deleteNode,
  rejoin,
  "address-reported": addressReported,
  "address-follow": addressFollow,
  "address-agents": addressAgents,
};

async function runStep(news: StepWire): Promise<StepOutputs> {
  const inputs = asInputs(news);
  const run = new StepRun(clientsFor(inputs.kubeconfig), inputs, (line) => void pulumi.log.info(line));
  run.log("started");
  const outs = await STEPS[inputs.step](run);
  return { ...recordedInputs(inputs), ...outs };
}

export const nodeApiStepsProvider: TypedProvider<StepInputs, StepOutputs> = {
  async check(_olds, news) {
    return checkInputs(news);
  },

  async diff(_id, olds, news) {
    return diffInputs(olds, news);
  },

  async create(news) {
    const outs = await runStep(news);
    return { id: `${outs.runId}/${outs.node}/${outs.step}`, outs };
  },

  async update(_id, olds, news) {
    // only IN_PLACE inputs reach here (diff replaces on the rest): record them, touch nothing
    return { outs: { ...olds, ...recordedInputs(asInputs(news)) } };
  },

  async delete(): Promise<void> {
    // Nothing to undo: the node stays where it moved (moving it back is another migration). The backup ConfigMaps
    // stay too, the record of what each node carried; remove them after verification with
    // `kubectl -n kube-system delete configmap -l cidr-migration.io/backup=node-metadata`.
  },
};

// ---------------------------------------------------------------------------------------------- resources

interface CommonArgs {
  /** Content of an admin kubeconfig; stored as a secret, never in the outputs. */
  kubeconfig: pulumi.Input<string>;
  /** The Node's name. */
  node: pulumi.Input<string>;
  /** Names this migration run (config snapshot.trigger): the backup is keyed by it. */
  runId: pulumi.Input<string>;
  /** Provider behaviour version recorded with the step. Default NODE_API_STEPS_VERSION. */
  version?: pulumi.Input<string>;
}

export interface NodeDrainArgs extends CommonArgs {
  /** The node's subnet in the new pod range (plan.nodes[].newPodCIDR), or a dual-stack pair comma-separated; recorded in the backup. */
  plannedPodCIDR: pulumi.Input<string>;
  oldPodCIDR?: pulumi.Input<string>;
  /** Fail the drain (nothing forced, the node stays cordoned) after this many seconds. Default 300. */
  drainTimeoutSeconds?: pulumi.Input<number>;
  /** Pause between eviction attempts refused by a PodDisruptionBudget. Default 5. */
  evictionRetrySeconds?: pulumi.Input<number>;
  /** Pods without a controller: "refuse" (default, the drain fails naming them) or "evict". */
  unmanagedPods?: pulumi.Input<UnmanagedPodPolicy>;
  /** The cluster's DNS Service: its evicted pods are taken out of it while they still answer. */
  dnsService?: pulumi.Input<{ namespace: string; name: string }>;
}

export interface CalicoIpamReleaseArgs extends CommonArgs {
  /** CIDRs of the old Calico IPPool(s). */
  oldPoolCidrs: pulumi.Input<pulumi.Input<string>[]>;
}

export interface NodeRejoinArgs extends CommonArgs {
  plannedPodCIDR: pulumi.Input<string>;
  /** Limit for each wait (re-registration, Ready, pods back). Default 600. */
  rejoinTimeoutSeconds?: pulumi.Input<number>;
  /** nodeRollout.strategy etcd-rewrite: the Node is kept (restarted, never deleted), so no re-registration is awaited. */
  nodeKept?: pulumi.Input<boolean>;
  /** The node's new address (nodeAddresses): the re-registered Node must report it as its InternalIP. */
  internalIP?: pulumi.Input<string>;
  /** kube-controller-manager allocates the re-registered Node's subnet, inside plannedPodCIDR (the pod range). */
  podCidrFromController?: pulumi.Input<boolean>;
}

function stepProps(step: NodeApiStepName, args: CommonArgs, extra: Record<string, unknown>, outputs: string[]): Record<string, unknown> {
  const props: Record<string, unknown> = {
    step,
    kubeconfig: pulumi.secret(args.kubeconfig),
    node: args.node,
    runId: args.runId,
    version: args.version ?? NODE_API_STEPS_VERSION,
    ...extra,
  };
  for (const name of [...outputs, "elapsedSeconds"]) props[name] = undefined;
  return props;
}

/** The kubeconfig is never returned; listed so that a future output of that name could not be stored in the clear. */
const SECRET_OUTPUTS = ["kubeconfig"];
const withSecrets = (opts?: pulumi.CustomResourceOptions): pulumi.CustomResourceOptions => withSecretOutputs(opts, SECRET_OUTPUTS);

export class NodeDrain extends pulumi.dynamic.Resource {
  declare readonly backupConfigMap: pulumi.Output<string>;
  declare readonly evicted: pulumi.Output<string[]>;
  declare readonly ignored: pulumi.Output<string[]>;
  declare readonly daemonSets: pulumi.Output<string[]>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeDrainArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("drain", args, {
      plannedPodCIDR: args.plannedPodCIDR,
      oldPodCIDR: args.oldPodCIDR,
      drainTimeoutSeconds: args.drainTimeoutSeconds,
      evictionRetrySeconds: args.evictionRetrySeconds,
      unmanagedPods: args.unmanagedPods,
      dnsService: args.dnsService,
    }, ["backupConfigMap", "evicted", "ignored", "daemonSets"]), withSecrets(opts), "cidr-migration", "NodeDrain");
  }
}

export class CalicoIpamRelease extends pulumi.dynamic.Resource {
  declare readonly releasedBlocks: pulumi.Output<string[]>;
  declare readonly releasedAffinities: pulumi.Output<string[]>;

  constructor(name: string, args: CalicoIpamReleaseArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("release-calico-ipam", args, { oldPoolCidrs: args.oldPoolCidrs }, ["releasedBlocks", "releasedAffinities"]), withSecrets(opts), "cidr-migration", "CalicoIpamRelease");
  }
}

export class NodeDeregister extends pulumi.dynamic.Resource {
  declare readonly result: pulumi.Output<string>;

  constructor(name: string, args: CommonArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("delete-node", args, {}, ["result", "deletedUid"]), withSecrets(opts), "cidr-migration", "NodeDeregister");
  }
}

export class NodeRejoin extends pulumi.dynamic.Resource {
  declare readonly podCIDR: pulumi.Output<string>;
  declare readonly assignedPodCIDR: pulumi.Output<boolean>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeRejoinArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, stepProps("rejoin", args, {
      plannedPodCIDR: args.plannedPodCIDR,
      rejoinTimeoutSeconds: args.rejoinTimeoutSeconds,
      nodeKept: args.nodeKept,
      internalIP: args.internalIP,
      podCidrFromController: args.podCidrFromController,
    }, ["podCIDR", "assignedPodCIDR", "daemonSets", "backupConfigMap"]), withSecrets(opts), "cidr-migration", "NodeRejoin");
  }
}

export interface NodeAddressFollowArgs extends CommonArgs {
  /** The node's new address: the Node must report it as its InternalIP. */
  internalIP: pulumi.Input<string>;
  /** Its old address: the host-network pods still there get a new one. */
  oldInternalIP: pulumi.Input<string>;
  /** Limit for each wait. Default 600. */
  rejoinTimeoutSeconds?: pulumi.Input<number>;
}

const addressStepProps = (step: "address-reported" | "address-follow" | "address-agents", args: NodeAddressFollowArgs, outputs: string[]) =>
  stepProps(step, args, { internalIP: args.internalIP, oldInternalIP: args.oldInternalIP, rejoinTimeoutSeconds: args.rejoinTimeoutSeconds }, outputs);

/** A control-plane node's Node (kept, not re-registered) reports its new address, once its kubelet restarted. */
export class NodeAddressReported extends pulumi.dynamic.Resource {
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeAddressFollowArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, addressStepProps("address-reported", args, []), withSecrets(opts), "cidr-migration", "NodeAddressReported");
  }
}

/** A control-plane node's host-network pods off its old address, once its static pods restarted. */
export class NodeAddressFollow extends pulumi.dynamic.Resource {
  declare readonly replacedPods: pulumi.Output<string[]>;
  declare readonly leftAtOldAddress: pulumi.Output<string[]>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeAddressFollowArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, addressStepProps("address-follow", args, ["replacedPods", "leftAtOldAddress"]), withSecrets(opts), "cidr-migration", "NodeAddressFollow");
  }
}

/** Once the old address is gone from the node: its CNI agent and kube-proxy restarted, each detecting the new one. */
export class NodeAddressAgents extends pulumi.dynamic.Resource {
  declare readonly replacedPods: pulumi.Output<string[]>;
  declare readonly cniAnnotations: pulumi.Output<string[]>;
  declare readonly elapsedSeconds: pulumi.Output<number>;

  constructor(name: string, args: NodeAddressFollowArgs, opts?: pulumi.CustomResourceOptions) {
    super(nodeApiStepsProvider, name, addressStepProps("address-agents", args, ["replacedPods", "cniAnnotations"]), withSecrets(opts), "cidr-migration", "NodeAddressAgents");
  }
}
