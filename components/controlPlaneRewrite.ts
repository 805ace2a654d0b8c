/**
 * The control plane around an etcd rewrite (services.strategy etcd-rewrite), in the plan's order:
 *
 *   ControlPlaneBackup  per node: /etc/kubernetes/manifests and /etc/kubernetes/pki → <backupDir>
 *   (ApiserverCerts, while every apiserver still runs: the new kubernetes Service IP as a SAN, the old kept)
 *   ControlPlaneStop    per node: read kube-controller-manager.yaml and kube-apiserver.yaml, then move both out of
 *                       the manifests directory and wait until neither runs (lib/remote/scripts/stopStaticPods)
 *   (EtcdRewrite, which refuses while any apiserver answers)
 *   ControlPlaneStart   per node, one after another: kube-apiserver, then kube-controller-manager, each written back
 *                       from what was read with its new flags, and waited for until healthy on them
 *                       (lib/remote/scripts/startHeldManifest). KCM starts with --allocate-node-cidrs=true: the
 *                       rewrite moved every Node's podCIDR, so none is left in the old range for it to exit on.
 *
 * Preview: the start scripts are computed from what the stop step read, so a first preview shows them as unknown;
 * each start step's `triggers` carries the planned flags, so the change is visible before anything runs.
 */
import * as pulumi from "@pulumi/pulumi";
import { RemoteScript } from "../dynamic-providers/remoteScript";
import { CidrMove, PodCidrMove } from "../lib/config/migrationConfig";
import { FlagValue } from "../lib/controlPlane/manifestFlags";
import { apiserverRangeFlags, controllerManagerRangeFlags, RangeTargets } from "../lib/controlPlane/rangeFlags";
import { heldManifestsDir, nodeBackupDir } from "../lib/controlPlane/nodeBackupDir";
import { backupControlPlane } from "../lib/remote/scripts/backupControlPlane";
import { readFile, readNodeFile } from "../lib/remote/scripts/readFile";
import { startHeldManifest } from "../lib/remote/scripts/startHeldManifest";
import { stopStaticPods } from "../lib/remote/scripts/stopStaticPods";
import { ControlPlaneComponent } from "../lib/remote/scripts/waitComponentHealthy";
import {
  DEFAULT_APISERVER_HEALTH_URL,
  DEFAULT_HEALTH_TIMEOUT_SECONDS,
  DEFAULT_KCM_HEALTH_URL,
  NodeAccessArgs,
  checkCidr,
  checkNodeAccess,
} from "./controlPlane";
import { After, oneNodeAtATime } from "./oneNodeAtATime";
import { withParentDependsOn } from "./parentDependsOn";
import { fromReadStep } from "./readStepOutput";
import { connectionFor } from "./remoteConnection";

const MANIFESTS_DIR = "/etc/kubernetes/manifests";
const manifestPath = (component: ControlPlaneComponent) => `${MANIFESTS_DIR}/${component}.yaml`;

export class ControlPlaneBackup extends pulumi.ComponentResource {
  readonly steps: Record<string, RemoteScript> = {};
  readonly done: RemoteScript;
  readonly backupDir: string;

  constructor(name: string, args: NodeAccessArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlane:ControlPlaneBackup", name, {}, opts);
    checkNodeAccess(args, this);
    this.backupDir = nodeBackupDir(args.runId);
    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      this.steps[node.name] = new RemoteScript(`${name}-${node.name}`, {
        connection: connectionFor(node, args.ssh, args.connection),
        script: backupControlPlane({ backupDir: this.backupDir, root: args.root }),
        triggers: [args.runId],
      }, { parent: this, dependsOn: after });
      return { steps: this.steps[node.name], last: this.steps[node.name] };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name];
    this.registerOutputs({ backupDir: this.backupDir });
  }
}

/** One node's stop: the two manifests as read before it, and the stop itself. */
export interface StopSteps {
  reads: Record<ControlPlaneComponent, RemoteScript>;
  stop: RemoteScript;
}

export class ControlPlaneStop extends pulumi.ComponentResource {
  readonly steps: Record<string, StopSteps> = {};
  readonly done: RemoteScript;

  constructor(name: string, args: NodeAccessArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlane:ControlPlaneStop", name, {}, opts);
    checkNodeAccess(args, this);
    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      const connection = connectionFor(node, args.ssh, args.connection);
      // Once per run: a re-run reuses what was read before the stop (the manifests are held by then).
      const read = (component: ControlPlaneComponent) => new RemoteScript(`${name}-${node.name}-read-${component}`, {
        connection,
        script: readFile({ path: manifestPath(component), root: args.root }),
        triggers: [args.runId, manifestPath(component)],
      }, { parent: this, dependsOn: after });
      const reads = { "kube-controller-manager": read("kube-controller-manager"), "kube-apiserver": read("kube-apiserver") };
      const stop = new RemoteScript(`${name}-${node.name}`, {
        connection,
        script: stopStaticPods({ components: ["kube-apiserver", "kube-controller-manager"], heldDir: heldManifestsDir(args.runId), timeoutSeconds: args.healthTimeoutSeconds, root: args.root }),
        triggers: [args.runId],
      }, { parent: this, dependsOn: Object.values(reads) });
      this.steps[node.name] = { reads, stop };
      return { steps: this.steps[node.name], last: stop };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name].stop;
    this.registerOutputs({});
  }
}

export interface ControlPlaneStartArgs extends NodeAccessArgs {
  /** What ControlPlaneStop read on each node. */
  stopped: Record<string, StopSteps>;
  serviceCidr: CidrMove;
  podCidr: PodCidrMove;
  kcmHealthUrl?: string;
  apiserverHealthUrl?: string;
}

export class ControlPlaneStart extends pulumi.ComponentResource {
  readonly steps: Record<string, Record<ControlPlaneComponent, RemoteScript>> = {};
  readonly done: RemoteScript;

  constructor(name: string, args: ControlPlaneStartArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlane:ControlPlaneStart", name, {}, opts);
    checkNodeAccess(args, this);
    const serviceCidr = checkCidr(args.serviceCidr?.to, "serviceCidr.to", this);
    const podCidr = checkCidr(args.podCidr?.to, "podCidr.to", this);
    // the etcd rewrite moves one address family
    const targets: RangeTargets = [{ serviceCidr, podCidr, nodeMaskSize: args.podCidr.nodeMaskSize }];
    const flags: Record<ControlPlaneComponent, Record<string, FlagValue | null>> = {
      "kube-apiserver": apiserverRangeFlags(targets),
      "kube-controller-manager": controllerManagerRangeFlags(targets, true),
    };
    const healthUrl = { "kube-apiserver": args.apiserverHealthUrl ?? DEFAULT_APISERVER_HEALTH_URL, "kube-controller-manager": args.kcmHealthUrl ?? DEFAULT_KCM_HEALTH_URL };
    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      const stopped = args.stopped[node.name];
      if (!stopped) throw new pulumi.ResourceError(`node ${node.name} has no stop step; ControlPlaneStop must cover every control-plane node`, this);
      const connection = connectionFor(node, args.ssh, args.connection);
      const start = (component: ControlPlaneComponent, dependsOn: After) => {
        const path = manifestPath(component);
        const script = fromReadStep(stopped.reads[component].stdout, (stdout) => startHeldManifest({
          component,
          path,
          heldDir: heldManifestsDir(args.runId),
          heldContent: readNodeFile(stdout, { node: node.name, path, step: "read" }),
          flags: flags[component],
          healthUrl: healthUrl[component],
          timeoutSeconds: args.healthTimeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_SECONDS,
          root: args.root,
        }).script);
        return new RemoteScript(`${name}-${node.name}-${component}`, {
          connection,
          script,
          // the planned values, known at preview time while the script itself is not
          triggers: [args.runId, path, Object.entries(flags[component]).map(([flag, value]) => `--${flag}=${value}`).join(" ")],
        }, { parent: this, dependsOn });
      };
      const apiserver = start("kube-apiserver", after);
      const controllerManager = start("kube-controller-manager", [apiserver]);
      this.steps[node.name] = { "kube-apiserver": apiserver, "kube-controller-manager": controllerManager };
      return { steps: this.steps[node.name], last: controllerManager };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name]["kube-controller-manager"];
    this.registerOutputs({});
  }
}
