/**
 * ControlPlane: moves the control plane's flags to the new ranges, one control-plane node at a time.
 *
 * Per node, a RemoteScript chain (each step waits for the previous one; node N+1 starts after node N's last):
 *   backup       /etc/kubernetes/manifests and /etc/kubernetes/pki → <backupDir> (lib/remote/scripts/backupControlPlane)
 *   read-kcm     kube-controller-manager.yaml as base64 (lib/remote/scripts/readFile)
 *   kcm          --cluster-cidr=<new pod range> --service-cluster-ip-range=<new Service range>
 *                --node-cidr-mask-size=<mask> --allocate-node-cidrs=false, written with a checksum guard, then
 *                wait until KCM is healthy running those flags; on failure the previous manifest is restored in
 *                the same script and the step fails (lib/remote/scripts/flagEditStep → guardedManifestEdit)
 *   read-apiserver, apiserver   the same for kube-apiserver.yaml: --service-cluster-ip-range=<new Service range>
 * KCM goes first: a failing KCM hurts less than a failing apiserver (DESIGN.md).
 *
 * Why --allocate-node-cidrs=false: KCM exits at start when any Node's podCIDR lies outside --cluster-cidr, and
 * every node still holds an old-range podCIDR until the node rollout moves it. With allocation off, KCM's node
 * IPAM controller does not run, so KCM stays healthy on the new --cluster-cidr while the rollout assigns each
 * re-registered Node its planned podCIDR. `EnableCidrAllocation` (below) turns allocation back on once no Node is
 * left in the old range; from then on KCM hands out new-range subnets that cannot collide with the planned ones
 * (it marks existing podCIDRs as taken at start). Proven on the test bed by
 * test/integration/controlPlaneSequence.test.ts.
 *
 * Preview: the read steps run during `up`, so a first preview shows the write scripts as unknown; each write
 * step's `triggers` carries the planned flag values, so the change is visible before anything runs.
 */
import * as pulumi from "@pulumi/pulumi";
import { RemoteScript } from "../dynamic-providers/remoteScript";
import { checkRunId, nodeBackupDir } from "../lib/controlPlane/nodeBackupDir";
import { CidrMove, NodeTarget, PodCidrMove, SecondFamily } from "../lib/config/migrationConfig";
import { backupControlPlane } from "../lib/remote/scripts/backupControlPlane";
import { flagEditStep } from "../lib/remote/scripts/flagEditStep";
import { readFile, readNodeFile } from "../lib/remote/scripts/readFile";
import { ControlPlaneComponent } from "../lib/remote/scripts/waitComponentHealthy";
import { FlagValue } from "../lib/controlPlane/manifestFlags";
import { apiserverRangeFlags, controllerManagerRangeFlags, FamilyTarget, RangeTargets } from "../lib/controlPlane/rangeFlags";
import { normalizeCidr } from "../lib/net/cidr";
import { isRangeList } from "../lib/net/rangeList";
import { ConnectionOptions, SshCredentials, connectionFor } from "./remoteConnection";
import { oneNodeAtATime } from "./oneNodeAtATime";
import { fromReadStep } from "./readStepOutput";
import { withParentDependsOn } from "./parentDependsOn";

export const DEFAULT_KCM_HEALTH_URL = "https://127.0.0.1:10257/healthz";
export const DEFAULT_APISERVER_HEALTH_URL = "https://127.0.0.1:6443/healthz";
export const DEFAULT_HEALTH_TIMEOUT_SECONDS = 300;
const MANIFESTS_DIR = "/etc/kubernetes/manifests";

/** What every node-side control-plane component needs to reach and address a node. */
export interface NodeAccessArgs {
  /** Control-plane nodes in the order they are changed, one at a time (config `nodes` with role control-plane). */
  nodes: NodeTarget[];
  /** SSH user and private key (the key is stored as a secret). */
  ssh: SshCredentials;
  /** Dial limits and host keys for RemoteScript (defaults in components/remoteConnection). */
  connection?: ConnectionOptions;
  /** The migration run id (config `snapshot.trigger`): names the backup dir /var/lib/cidr-migration/backup/<runId>. */
  runId: string;
  /** Seconds to wait for a component to be healthy after a change (default 300). */
  healthTimeoutSeconds?: number;
  /** Directory standing in for `/` on the node; only tests set it (default "": the real root). */
  root?: string;
}

export interface ControlPlaneArgs extends NodeAccessArgs {
  /** Service range move: apiserver and KCM get `to` as --service-cluster-ip-range. */
  serviceCidr: CidrMove;
  /** Pod range move: KCM gets `to` as --cluster-cidr and `nodeMaskSize` as --node-cidr-mask-size. */
  podCidr: PodCidrMove;
  /** A dual-stack run's second family (issue 17): each range flag lists its `to` after the first family's. */
  secondFamily?: SecondFamily;
  /** KCM health endpoint on each node (default https://127.0.0.1:10257/healthz). */
  kcmHealthUrl?: string;
  /** apiserver health endpoint on each node (default https://127.0.0.1:6443/healthz). */
  apiserverHealthUrl?: string;
}

/** One node's flag change: read the manifest, then the guarded write computed from what was read. */
export interface FlagChangeSteps {
  read: RemoteScript;
  write: RemoteScript;
}

interface FlagChangeRequest {
  name: string;
  node: NodeTarget;
  component: ControlPlaneComponent;
  flags: Record<string, FlagValue | null>;
  healthUrl: string;
  backupDir: string;
  args: NodeAccessArgs;
  parent: pulumi.Resource;
  dependsOn: pulumi.Input<pulumi.Input<pulumi.Resource>[]>;
}

/** Validates what every node-side component shares; throws ResourceError naming the field. */
export function checkNodeAccess(args: NodeAccessArgs, self: pulumi.Resource): void {
  const fail = (message: string): never => {
    throw new pulumi.ResourceError(message, self);
  };
  if (!Array.isArray(args.nodes) || args.nodes.length === 0) fail("nodes is empty; pass the control-plane nodes (config nodes[] with role control-plane)");
  const seen = new Set<string>();
  for (const node of args.nodes) {
    if (node.role !== "control-plane") fail(`node ${node.name} has role ${node.role}; only control-plane nodes carry the static-pod manifests`);
    if (seen.has(node.name)) fail(`node ${node.name} is listed twice; each control-plane node is changed once`);
    seen.add(node.name);
    try {
      connectionFor(node, args.ssh, args.connection);
    } catch (error) {
      fail((error as Error).message);
    }
  }
  try {
    checkRunId(args.runId);
  } catch (error) {
    fail((error as Error).message);
  }
  const timeout = args.healthTimeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_SECONDS;
  if (!Number.isSafeInteger(timeout) || timeout <= 0) fail(`healthTimeoutSeconds ${timeout} must be a positive whole number of seconds, e.g. 300`);
}

export function checkCidr(value: string, field: string, self: pulumi.Resource): string {
  let cidr: string;
  try {
    cidr = normalizeCidr(value);
  } catch (error) {
    throw new pulumi.ResourceError(`${field} "${value}" is not a CIDR (${(error as Error).message})`, self);
  }
  if (cidr !== value) throw new pulumi.ResourceError(`${field} "${value}" is not in normal form; pass "${cidr}"`, self);
  return cidr;
}

/** The first family's checked ranges, and the second family's, checked the same way. */
function rangeTargets(first: FamilyTarget, second: SecondFamily | undefined, self: pulumi.Resource): RangeTargets {
  if (!second) return [first];
  const serviceCidr = checkCidr(second.serviceCidr.to, "secondFamily.serviceCidr.to", self);
  const podCidr = checkCidr(second.podCidr.to, "secondFamily.podCidr.to", self);
  return [first, { serviceCidr, podCidr, nodeMaskSize: checkMask(second.podCidr.nodeMaskSize, podCidr, self) }];
}

/** One range, or a dual-stack pair comma-separated (as kubeadm's podSubnet and serviceSubnet take them), each in normal form. */
export function checkRangeList(value: string, field: string, self: pulumi.Resource): string {
  const ranges = String(value).split(",").map((range) => checkCidr(range, field, self));
  if (!isRangeList(ranges.join(","))) throw new pulumi.ResourceError(`${field} "${value}" is neither one range nor a dual-stack pair of one IPv4 and one IPv6 range`, self);
  return ranges.join(",");
}

function checkMask(mask: number, podCidr: string, self: pulumi.Resource): number {
  const podPrefix = Number(podCidr.split("/")[1]);
  if (!Number.isInteger(mask) || mask < podPrefix || mask > (podCidr.includes(":") ? 128 : 32)) {
    throw new pulumi.ResourceError(`podCidr.nodeMaskSize ${mask} does not fit the new pod range ${podCidr}; pass a mask from ${podPrefix} up (e.g. 24)`, self);
  }
  return mask;
}

/** Declares read + guarded write for one manifest; shared by ControlPlane and EnableCidrAllocation. */
export function flagChangeSteps(request: FlagChangeRequest): FlagChangeSteps {
  const { node, args } = request;
  const connection = connectionFor(node, args.ssh, args.connection);
  const path = `${MANIFESTS_DIR}/${request.component}.yaml`;
  const timeoutSeconds = args.healthTimeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_SECONDS;
  const read = new RemoteScript(`${request.name}-read`, {
    connection,
    script: readFile({ path, root: args.root }),
    // Once per run: a re-run reuses what was read, and the write step is a no-op once the file has the new content.
    triggers: [args.runId, path],
  }, { parent: request.parent, dependsOn: request.dependsOn });
  const script = fromReadStep(read.stdout, (stdout) => flagEditStep({
    path,
    component: request.component,
    currentContent: readNodeFile(stdout, { node: node.name, path, step: "read" }),
    flags: request.flags,
    healthUrl: request.healthUrl,
    timeoutSeconds,
    backupDir: request.backupDir,
    root: args.root,
  }).script);
  const write = new RemoteScript(`${request.name}-write`, {
    connection,
    script,
    // The planned values, known at preview time even while the script itself is not.
    triggers: [args.runId, path, Object.entries(request.flags).map(([flag, value]) => (value === null ? `no --${flag}` : `--${flag}=${value}`)).join(" ")],
  }, { parent: request.parent, dependsOn: [read] });
  return { read, write };
}

export interface ControlPlaneNodeSteps {
  backup: RemoteScript;
  controllerManager: FlagChangeSteps;
  apiserver: FlagChangeSteps;
}

export class ControlPlane extends pulumi.ComponentResource {
  /** Per node (in order), the steps declared for it. */
  readonly steps: Record<string, ControlPlaneNodeSteps> = {};
  /** The last step of the last node: depend on it to run after the whole control plane moved. */
  readonly done: RemoteScript;
  /** The backup directory on every node. */
  readonly backupDir: string;

  constructor(name: string, args: ControlPlaneArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlane:ControlPlane", name, {}, opts);
    checkNodeAccess(args, this);
    const serviceCidr = checkCidr(args.serviceCidr?.to, "serviceCidr.to", this);
    const podCidr = checkCidr(args.podCidr?.to, "podCidr.to", this);
    const mask = checkMask(args.podCidr.nodeMaskSize, podCidr, this);
    const targets = rangeTargets({ serviceCidr, podCidr, nodeMaskSize: mask }, args.secondFamily, this);
    this.backupDir = nodeBackupDir(args.runId);

    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      const backup = new RemoteScript(`${name}-${node.name}-backup`, {
        connection: connectionFor(node, args.ssh, args.connection),
        script: backupControlPlane({ backupDir: this.backupDir, root: args.root }),
        triggers: [args.runId],
      }, { parent: this, dependsOn: after });
      const controllerManager = flagChangeSteps({
        name: `${name}-${node.name}-kcm`,
        node,
        component: "kube-controller-manager",
        // Allocation stays off while Nodes still hold old-range podCIDRs: KCM would exit on them.
        flags: controllerManagerRangeFlags(targets, false),
        healthUrl: args.kcmHealthUrl ?? DEFAULT_KCM_HEALTH_URL,
        backupDir: this.backupDir,
        args,
        parent: this,
        dependsOn: [backup],
      });
      const apiserver = flagChangeSteps({
        name: `${name}-${node.name}-apiserver`,
        node,
        component: "kube-apiserver",
        flags: apiserverRangeFlags(targets),
        healthUrl: args.apiserverHealthUrl ?? DEFAULT_APISERVER_HEALTH_URL,
        backupDir: this.backupDir,
        args,
        parent: this,
        dependsOn: [controllerManager.write],
      });
      this.steps[node.name] = { backup, controllerManager, apiserver };
      return { steps: this.steps[node.name], last: apiserver.write };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name].apiserver.write;
    this.registerOutputs({ backupDir: this.backupDir });
  }
}

export interface EnableCidrAllocationArgs extends NodeAccessArgs {
  /** The new pod range (KCM keeps it as --cluster-cidr). */
  podCidr: string;
  /** The new Service range (KCM keeps it as --service-cluster-ip-range). */
  serviceCidr: string;
  /** --node-cidr-mask-size. */
  nodeMaskSize: number;
  /** A dual-stack cluster's second family: its ranges follow the first in each flag. */
  secondFamily?: SecondFamily;
  /** KCM health endpoint on each node (default https://127.0.0.1:10257/healthz). */
  kcmHealthUrl?: string;
}

/**
 * EnableCidrAllocation: after the node rollout, sets --allocate-node-cidrs=true on every control-plane node's KCM,
 * one node at a time (same read → guarded write → wait → restore-on-failure chain). Its backups go to
 * <backupDir>/enable-cidr-allocation, so a failed step restores the manifest as it was just before this step
 * (allocation off, new ranges), never the pre-migration one (old --cluster-cidr with new-range nodes would
 * crash-loop KCM). Wire it after every node moved: KCM would exit if a Node still held an old-range podCIDR.
 */
export class EnableCidrAllocation extends pulumi.ComponentResource {
  readonly steps: Record<string, FlagChangeSteps> = {};
  readonly done: RemoteScript;

  constructor(name: string, args: EnableCidrAllocationArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlane:EnableCidrAllocation", name, {}, opts);
    checkNodeAccess(args, this);
    const podCidr = checkCidr(args.podCidr, "podCidr", this);
    const serviceCidr = checkCidr(args.serviceCidr, "serviceCidr", this);
    checkMask(args.nodeMaskSize, podCidr, this);
    const targets = rangeTargets({ serviceCidr, podCidr, nodeMaskSize: args.nodeMaskSize }, args.secondFamily, this);
    const backupDir = `${nodeBackupDir(args.runId)}/enable-cidr-allocation`;
    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      const steps = flagChangeSteps({
        name: `${name}-${node.name}-kcm`,
        node,
        component: "kube-controller-manager",
        flags: controllerManagerRangeFlags(targets, true),
        healthUrl: args.kcmHealthUrl ?? DEFAULT_KCM_HEALTH_URL,
        backupDir,
        args,
        parent: this,
        dependsOn: after,
      });
      this.steps[node.name] = steps;
      return { steps, last: steps.write };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name].write;
    this.registerOutputs({});
  }
}
