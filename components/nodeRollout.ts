/**
 * NodeRollout: moves every node the plan moves into its planned subnet of the new pod range, wave by wave.
 *
 * Order (lib/nodeMove/rolloutWaves): the canary alone first, then each control-plane node alone, then the workers
 * in waves of nodeRollout.maxUnavailable. Every node of wave N+1 depends on the last step of every node of wave N,
 * so the first failure stops the rollout and `pulumi preview` shows the order as dependsOn chains.
 *
 * Per node, strategy `reregister` (default; always used for control-plane nodes, which kubeadm reset would remove
 * from etcd):
 *   drain             API   back up labels/taints/annotations/unschedulable to a kube-system ConfigMap, cordon,
 *                           evict (PDBs respected, DaemonSet/mirror pods left, emptyDir allowed, never forced)
 *   cni-cleanup       SSH   stale CNI configs; Flannel's cni0/flannel.1, subnet.env, host-local state
 *   kubelet-stop      SSH   stop the kubelet, clear its CPU/memory manager checkpoints
 *   deregister        API   delete the Node object (only the backed-up one, by uid)
 *   calico-ipam       API   Calico only: release the node's IPAM blocks and affinities in the old pool
 *   address-add, kubelet-flags-read, kubelet-node-ip   SSH, only for a worker whose address moves (nodeAddresses):
 *                           the new address beside the old one, and --node-ip in kubeadm-flags.env
 *   kubelet-config-read, kubelet-config-dns   SSH, only when the DNS Service moves: clusterDNS in
 *                           /var/lib/kubelet/config.yaml, while the kubelet is stopped (it reads the file at start)
 *   kubelet-start     SSH   the kubelet registers the Node again
 *   rejoin            API   planned podCIDR (KCM runs with --allocate-node-cidrs=false meanwhile; on a run that
 *                           changes node addresses only KCM allocates, inside the pod range), metadata restored
 *                           exactly, old DaemonSet pods replaced, Ready, uncordon, pods back in the new subnet, verify
 *                           (a worker whose address moves: the new InternalIP too)
 *   address-remove-old SSH  that worker's old address removed, over a session to the new one
 *   address-agents    API   its CNI agent and kube-proxy restarted to detect the new address (they keep the one they
 *                           started with), the CNI's address annotations on the Node naming it; the next wave waits
 * Strategy `etcd-rewrite` (every node; the Node's podCIDR was rewritten in etcd with the Services): drain →
 * cni-cleanup → kubelet-stop → calico-ipam → kubelet-config-read/dns → kubelet-start → rejoin, with no deregister:
 * the Node keeps its uid, and rejoin waits for it rather than for a new registration.
 * With Flannel, every node also gets routes to the subnets its flanneld does not know while nodes are rolled
 * (bridge-routes-before on every node, bridge-routes on each node beside its rejoin, bridge-routes-remove at the end;
 * lib/remote/scripts/flannelBridgeRoutes says why).
 * Strategy `kubeadm-rejoin` (workers): drain → cni-cleanup → join-token (SSH on a control-plane node: a fresh
 * bootstrap token, secret output) → deregister → calico-ipam → kubeadm-rejoin (SSH: reset, clean, join; the join
 * writes config.yaml from the kubelet-config ConfigMap, which carries the new clusterDNS) → rejoin.
 * The same for each control-plane node in `controlPlaneJoins` (where etcd can spare its member, see
 * lib/nodeMove/controlPlaneRejoin; the others re-register), with: etcd-check first (API: every other member answers,
 * leadership handed away), the token made on another control-plane node with the key to the certificates it
 * uploads (`--control-plane --certificate-key`), kubeadm-rejoin as one step that removes its etcd member and then
 * resets and joins it (dynamic-providers/controlPlaneRejoin), and, after the join, kcm-allocation-off (its new KCM
 * gets --allocate-node-cidrs=false, as every KCM has until the rollout ends).
 *
 * Scripts come from lib/remote/scripts and run over SSH through lib/remote/sshExec. Backups on the nodes go under
 * /var/lib/cidr-migration/backup/<runId>. Progress per node (node, step, elapsed) is logged by the API steps; the
 * plan's estimate per node and in total, beside the manual runbook's 5-8 minutes per node, is logged here and
 * returned as `estimate`.
 */
import * as pulumi from "@pulumi/pulumi";
import { RemoteScript, RemoteScriptArgs } from "../dynamic-providers/remoteScript";
import { CalicoIpamRelease, NodeAddressAgents, NodeDeregister, NodeDrain, NodeRejoin } from "../dynamic-providers/nodeApiSteps";
import { HostAddressSettings, MigrationConfig, NodeAddressChange, NodeTarget } from "../lib/config/migrationConfig";
import { nodeBackupDir } from "../lib/controlPlane/nodeBackupDir";
import { UnmanagedPodPolicy } from "../lib/nodeMove/drainDecision";
import { parseJoinCommand } from "../lib/nodeMove/joinCommand";
import { RolloutEstimate, RolloutWave, rolloutEstimate, rolloutWaves } from "../lib/nodeMove/rolloutWaves";
import { NodeMove, Plan } from "../lib/plan/planModel";
import { cleanupCni } from "../lib/remote/scripts/cleanupCni";
import { FlannelSubnets, flannelBridgeRoutes } from "../lib/remote/scripts/flannelBridgeRoutes";
import { kubeadmRejoin } from "../lib/remote/scripts/kubeadmRejoin";
import { kubeletReregister } from "../lib/remote/scripts/kubeletReregister";
import { NodeAddressChangeInput, nodeAddressChange } from "../lib/remote/scripts/nodeAddressChange";
import { writeFileChecked } from "../lib/remote/scripts/writeManifest";
import { KUBEADM_FLAGS_ENV, moveKubeletNodeIp } from "../lib/nodeMove/kubeletNodeIp";
import { readFile, readNodeFile } from "../lib/remote/scripts/readFile";
import { setKubeletClusterDns } from "../lib/remote/scripts/setKubeletClusterDns";
import { ConnectionOptions, SshCredentials, connectionFor } from "./remoteConnection";
import { stepId } from "../lib/plan/stepIds";
import { DEFAULT_REJOIN_TIMEOUT_SECONDS } from "../lib/nodeMove/apiSteps/rejoin";
import { fromReadStep } from "./readStepOutput";
import { EtcdRejoinCheck } from "../dynamic-providers/etcdRejoinCheck";
import { ControlPlaneRejoin } from "../dynamic-providers/controlPlaneRejoin";
import { EtcdAccessArgs } from "../dynamic-providers/etcdPeerMove";
import { ControlPlaneJoinTarget } from "../lib/nodeMove/controlPlaneRejoin";
import { DEFAULT_KCM_HEALTH_URL, FlagChangeSteps, flagChangeSteps } from "./controlPlane";

export const KUBELET_CONFIG_PATH = "/var/lib/kubelet/config.yaml";
export const JOIN_TOKEN_COMMAND = "kubeadm token create --print-join-command --ttl 2h";
/**
 * A control-plane node's join: kubeadm uploads the control-plane certificates, encrypted, to Secret
 * kube-system/kubeadm-certs (for two hours) and prints their key last; the join command then carries it.
 */
export const CONTROL_PLANE_JOIN_TOKEN_SCRIPT = [
  "set -eu",
  "key=$(kubeadm init phase upload-certs --upload-certs | tail -n 1)",
  `case "$key" in ""|*[!0-9a-f]*) echo "kubeadm init phase upload-certs printed no certificate key; run it on this node by hand to see why" >&2; exit 1 ;; esac`,
  `kubeadm token create --print-join-command --ttl 2h --certificate-key "$key"`,
].join("\n");

export interface NodeRolloutArgs {
  /** lib/plan's Plan: node moves (batch, canary, newPodCIDR), podCidr.from, cni, dns, and the "nodes/<name>" estimates. */
  plan: Plan;
  /** The stack's nodes (config `nodes`): SSH host, port and user of every node the plan moves. */
  nodes: NodeTarget[];
  /** SSH user and private key (stored as a secret by connectionFor). */
  ssh: SshCredentials;
  /** Dial limits and host keys for RemoteScript (defaults in components/remoteConnection). */
  connection?: ConnectionOptions;
  /** Content of an admin kubeconfig, for the API steps; stored as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** config `nodeRollout`: strategy, maxUnavailable (already applied by the planner), drainTimeoutSeconds. */
  rollout: MigrationConfig["nodeRollout"];
  /** The migration run id (config `snapshot.trigger`): keys the metadata backups and the node-side backup dir. */
  runId: string;
  /** Pods without a controller: "refuse" (default, the drain fails naming them) or "evict". */
  unmanagedPods?: UnmanagedPodPolicy;
  /** Limit, in seconds, of each wait after a node re-registers (registration, Ready, pods back). Default 600. */
  rejoinTimeoutSeconds?: number;
  /** kubeadm-rejoin: the control-plane node that makes the join tokens. Default: the first control-plane node in `nodes`. */
  tokenNode?: string;
  /**
   * kubeadm-rejoin: the control-plane nodes reset and joined again as control-plane nodes, by name (from
   * lib/nodeMove/controlPlaneRejoin); every other control-plane node re-registers. Needs `etcd`.
   */
  controlPlaneJoins?: Record<string, ControlPlaneJoinTarget>;
  /** How the etcd check before each control-plane node's reset reaches etcd (config etcd). */
  etcd?: EtcdAccessArgs & { endpoints: string[] };
  /** Seconds each KCM edit waits for KCM to be healthy (default 300). */
  healthTimeoutSeconds?: number;
  /**
   * Workers whose address changes while they re-register (config nodeAddresses, issue 16), and how their hosts
   * change it (config hostAddress). Such a worker always re-registers (kubeadm reset would rewrite its kubelet flags).
   */
  addressChanges?: { changes: NodeAddressChange[]; host: HostAddressSettings };
  /** Directory standing in for `/` on the nodes; only tests set it (default "": the real root). */
  root?: string;
}

/** The resources declared for one node, in order. */
export interface NodeMoveSteps {
  move: NodeMove;
  strategy: "reregister" | "kubeadm-rejoin" | "etcd-rewrite";
  drain: NodeDrain;
  cniCleanup: RemoteScript;
  kubeletStop?: RemoteScript;
  joinToken?: RemoteScript;
  deregister?: NodeDeregister;
  calicoIpam?: CalicoIpamRelease;
  kubeletConfigRead?: RemoteScript;
  kubeletConfigDns?: RemoteScript;
  kubeletStart?: RemoteScript;
  kubeadmRejoin?: RemoteScript | ControlPlaneRejoin;
  /** A control-plane node joined again: its etcd checked first, its new KCM's allocation turned off after. */
  etcdCheck?: EtcdRejoinCheck;
  kcmAllocationOff?: FlagChangeSteps;
  rejoin: NodeRejoin;
  /** etcd-rewrite with Flannel: the routes to the nodes not yet rolled, once this node's flanneld restarted. */
  bridgeRoutes?: RemoteScript;
  /** A worker whose address moves: the new address beside the old, and --node-ip, while the kubelet is stopped. */
  addressAdd?: RemoteScript;
  kubeletFlagsRead?: RemoteScript;
  kubeletNodeIp?: RemoteScript;
  /** Once the Node reports the new address: the old one removed, over a session to the new one. */
  addressRemoveOld?: RemoteScript;
  /** Then its CNI agent and kube-proxy restarted, to detect the new address; the CNI's annotations on the Node name it. */
  addressAgents?: NodeAddressAgents;
}

export class NodeRollout extends pulumi.ComponentResource {
  /** Per node, the steps declared for it. */
  readonly steps: Record<string, NodeMoveSteps> = {};
  readonly waves: RolloutWave[];
  readonly estimate: RolloutEstimate;
  /**
   * The rejoin step of every node of the last wave (none moving: what the rollout waited for): depend on them to
   * run after the whole rollout. Depending on the component alone would not wait when it has no children.
   */
  readonly done: pulumi.Resource[];
  /** Node name → its podCIDR after the move, as verified by the rejoin step. */
  readonly podCIDRs: pulumi.Output<Record<string, string>>;

  constructor(name: string, args: NodeRolloutArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:nodeRollout:NodeRollout", name, {}, opts);
    const fail = (message: string): never => {
      throw new pulumi.ResourceError(message, this);
    };
    const guard = <T>(make: () => T): T => {
      try {
        return make();
      } catch (error) {
        return fail((error as Error).message);
      }
    };
    const checked = checkRolloutArgs(args, fail, guard);
    this.waves = checked.waves;
    this.estimate = rolloutEstimateOf(args.plan, this.waves, fail);
    void pulumi.log.info(this.estimate.summary, this);

    // DNS moved: the kubelets must point at the new DNS Service IP
    const { dns } = args.plan;
    const clusterDns = dns.oldClusterIP !== undefined && dns.oldClusterIP !== dns.newClusterIP ? [dns.newClusterIP] : undefined;
    const common = { kubeconfig: args.kubeconfig, runId: args.runId };

    // etcd-rewrite with Flannel: every node routes the subnets its flanneld does not know (flannelBridgeRoutes)
    const bridge = args.rollout.strategy === "etcd-rewrite" && args.plan.cni === "flannel" && this.waves.length > 0
      ? flannelSubnetsOf(args.plan)
      : undefined;
    const bridgeRoutes = (step: string, node: NodeTarget, dependsOn: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource> | undefined, action: "unrolled" | "rolled" | "remove") =>
      new RemoteScript(`${name}-${node.name}-${step}`, {
        connection: connectionFor(node, args.ssh, args.connection),
        script: guard(() => flannelBridgeRoutes({ action, self: node.name, nodes: bridge!, root: args.root })),
      }, { parent: this, dependsOn });
    const bridged = bridge ? bridge.map((n) => checked.targets.get(n.name)).filter((t): t is NodeTarget => t !== undefined) : [];

    // Every node of wave N+1 waits for the end of every node of wave N.
    let previous: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource> | undefined = bridge
      ? bridged.map((node) => bridgeRoutes("bridge-routes-before", node, opts?.dependsOn, "unrolled"))
      : opts?.dependsOn;
    let last: pulumi.Resource[] = [];
    for (const wave of this.waves) {
      // what the next wave waits for: each node's rejoin (and, with the flannel routes, its routes)
      const waveDone = wave.nodes.flatMap((move) => {
        const moving = checked.addressChanges.get(move.name);
        const strategy = args.rollout.strategy === "etcd-rewrite"
          ? "etcd-rewrite"
          : args.rollout.strategy === "kubeadm-rejoin" && !moving && (move.role === "worker" || args.controlPlaneJoins?.[move.name]) ? "kubeadm-rejoin" : "reregister";
        const steps = this.nodeSteps(`${name}-${move.name}`, move, strategy, {
          ...checked, target: checked.targets.get(move.name)!, args, clusterDns, common, dependsOn: previous, guard,
        });
        this.steps[move.name] = steps;
        const done = steps.addressAgents ?? steps.rejoin;
        if (!bridge) return [done];
        // beside the rejoin, which restarts flanneld: the routes wait for it
        steps.bridgeRoutes = bridgeRoutes("bridge-routes", checked.targets.get(move.name)!, [steps.kubeletStart!], "rolled");
        return [done, steps.bridgeRoutes];
      });
      previous = waveDone;
      last = waveDone;
    }
    if (bridge) last = bridged.map((node) => bridgeRoutes("bridge-routes-remove", node, last, "remove"));
    // with no node to move, the rollout is done when what it waited for is
    this.done = this.waves.length > 0 ? last : resourcesIn(opts?.dependsOn);

    const entries = Object.values(this.steps).map((s) => pulumi.all([s.move.name, s.rejoin.podCIDR]));
    this.podCIDRs = pulumi.all(entries).apply((pairs) => Object.fromEntries(pairs));
    this.registerOutputs({ estimate: this.estimate, podCIDRs: this.podCIDRs });
  }

  private nodeSteps(prefix: string, move: NodeMove, strategy: NodeMoveSteps["strategy"], ctx: NodeStepContext): NodeMoveSteps {
    const { args, backupDir, common, guard } = ctx;
    const plan = args.plan;
    const script = this.scriptFor(prefix, connectionFor(ctx.target, args.ssh, args.connection));
    const controlPlaneJoin = strategy === "kubeadm-rejoin" && move.role === "control-plane" ? args.controlPlaneJoins?.[move.name] : undefined;
    // before anything changes on a control-plane node to be reset: etcd can spare its member
    const etcdCheck = controlPlaneJoin ? new EtcdRejoinCheck(`${prefix}-etcd-check`, {
      ...args.etcd!, member: move.name, nodeAddress: controlPlaneJoin.advertiseAddress, runId: args.runId,
    }, { parent: this, dependsOn: ctx.dependsOn }) : undefined;

    const drain = new NodeDrain(`${prefix}-drain`, {
      ...common,
      node: move.name,
      plannedPodCIDR: plannedSubnets(move),
      oldPodCIDR: move.oldPodCIDR,
      drainTimeoutSeconds: args.rollout.drainTimeoutSeconds,
      unmanagedPods: args.unmanagedPods,
      dnsService: { namespace: plan.dns.namespace, name: plan.dns.name },
    }, { parent: this, dependsOn: etcdCheck ? [etcdCheck] : ctx.dependsOn });

    const oldPodCidrs = [plan.podCidr.from, ...(move.oldPodCIDR && move.oldPodCIDR !== plan.podCidr.from ? [move.oldPodCIDR] : [])];
    const cniCleanup = script("cni-cleanup", guard(() => cleanupCni({ cni: plan.cni, oldPodCidrs, backupDir, root: args.root })), [drain]);
    const steps = { move, strategy, etcdCheck, drain, cniCleanup } as NodeMoveSteps;

    let beforeDelete: pulumi.Resource;
    if (strategy !== "kubeadm-rejoin") {
      steps.kubeletStop = script("kubelet-stop", guard(() => kubeletReregister({ backupDir, root: args.root })).stop, [cniCleanup]);
      beforeDelete = steps.kubeletStop;
    } else {
      // a fresh token per node, made right before its join, on a control-plane node; the output is the credential
      // a control-plane node's from another one, with the key to the certificates that one uploads for the join
      steps.joinToken = new RemoteScript(`${prefix}-join-token`, {
        connection: connectionFor(controlPlaneJoin ? ctx.guard(() => otherControlPlane(args, move.name)) : ctx.tokenNode!, args.ssh, args.connection),
        script: controlPlaneJoin ? CONTROL_PLANE_JOIN_TOKEN_SCRIPT : JOIN_TOKEN_COMMAND,
        secretOutput: true,
      }, { parent: this, dependsOn: [cniCleanup] });
      beforeDelete = steps.joinToken;
    }
    // etcd-rewrite keeps the Node: its podCIDR is already the planned one
    if (strategy !== "etcd-rewrite") steps.deregister = new NodeDeregister(`${prefix}-deregister`, { ...common, node: move.name }, { parent: this, dependsOn: [beforeDelete] });
    let beforeStart: pulumi.Resource[] = [steps.deregister ?? beforeDelete];
    if (plan.cni === "calico") {
      steps.calicoIpam = new CalicoIpamRelease(`${prefix}-calico-ipam`, { ...common, node: move.name, oldPoolCidrs: [plan.podCidr.from] }, { parent: this, dependsOn: beforeStart });
      beforeStart = [steps.calicoIpam];
    }

    const change = ctx.addressChanges.get(move.name);
    if (change) beforeStart = [this.addressAdd(steps, script, beforeStart, change, ctx)];
    const rejoinAfter = strategy === "kubeadm-rejoin"
      ? this.kubeadmJoinAgain(prefix, steps, script, beforeStart, ctx, controlPlaneJoin)
      : this.kubeletRestart(steps, script, beforeStart, ctx);
    steps.rejoin = new NodeRejoin(`${prefix}-rejoin`, {
      ...common,
      node: move.name,
      plannedPodCIDR: plannedSubnets(move),
      rejoinTimeoutSeconds: ctx.rejoinTimeout,
      ...(strategy === "etcd-rewrite" ? { nodeKept: true } : {}),
      ...(move.podCidrAllocation === "controller" ? { podCidrFromController: true } : {}),
      ...(change ? { internalIP: change.to } : {}),
    }, { parent: this, dependsOn: [rejoinAfter] });
    if (change) {
      // the old address goes last, over a session to the new one (the node's SSH host follows it when it was the old address)
      const host = ctx.target.host === change.from ? change.to : ctx.target.host;
      const removeOld = this.scriptFor(prefix, connectionFor({ ...ctx.target, host }, args.ssh, args.connection));
      steps.addressRemoveOld = removeOld("address-remove-old", guard(() => nodeAddressChange({ ...this.addressInput(change, ctx), phase: "remove-old" })), [steps.rejoin]);
      // its CNI agent and kube-proxy detect the node's address when they start: again, with only the new one left
      steps.addressAgents = new NodeAddressAgents(`${prefix}-address-agents`, {
        ...common, node: move.name, internalIP: change.to, oldInternalIP: change.from, rejoinTimeoutSeconds: ctx.rejoinTimeout,
      }, { parent: this, dependsOn: [steps.addressRemoveOld] });
    }
    return steps;
  }

  /**
   * A worker whose address moves, while its kubelet is stopped and its Node deleted: the new address beside the old
   * one (the session rides on the old), then the kubelet's --node-ip read, moved and written back checked.
   */
  private addressAdd(steps: NodeMoveSteps, script: ScriptStep, after: pulumi.Resource[], change: NodeAddressChange, ctx: NodeStepContext): pulumi.Resource {
    const { args, backupDir, guard } = ctx;
    const node = steps.move.name;
    steps.addressAdd = script("address-add", guard(() => nodeAddressChange({ ...this.addressInput(change, ctx), phase: "add" })), after);
    steps.kubeletFlagsRead = script("kubelet-flags-read", readFile({ path: KUBEADM_FLAGS_ENV, root: args.root }), [steps.addressAdd]);
    const write = fromReadStep(steps.kubeletFlagsRead.stdout, (stdout) => {
      const current = readNodeFile(stdout, { node, path: KUBEADM_FLAGS_ENV, step: "kubelet-flags-read" });
      return writeFileChecked({ path: KUBEADM_FLAGS_ENV, currentContent: current, newContent: moveKubeletNodeIp(current, change.from, change.to).text, backupDir, root: args.root });
    });
    // the planned value, known at preview time while the edit itself is not
    steps.kubeletNodeIp = script("kubelet-node-ip", write, [steps.kubeletFlagsRead], { triggers: [args.runId, `--node-ip ${change.from} -> ${change.to}`] });
    return steps.kubeletNodeIp;
  }

  private addressInput(change: NodeAddressChange, ctx: NodeStepContext): NodeAddressChangeInput {
    return { from: change.from, to: change.to, prefix: change.prefix!, ...ctx.args.addressChanges!.host };
  }

  /** A RemoteScript step on one node, a child of this component. */
  private scriptFor(prefix: string, connection: ReturnType<typeof connectionFor>): ScriptStep {
    return (stepName, text, dependsOn, extra = {}) => new RemoteScript(`${prefix}-${stepName}`, { connection, script: text, ...extra }, { parent: this, dependsOn });
  }

  /** reregister: clusterDNS edited while the kubelet is stopped (it reads the file at start), then the kubelet started. */
  private kubeletRestart(steps: NodeMoveSteps, script: ScriptStep, beforeStart: pulumi.Resource[], ctx: NodeStepContext): pulumi.Resource {
    const { args, backupDir, guard } = ctx;
    const node = steps.move.name;
    if (ctx.clusterDns) {
      steps.kubeletConfigRead = script("kubelet-config-read", readFile({ path: KUBELET_CONFIG_PATH, root: args.root }), [steps.kubeletStop!]);
      const edit = fromReadStep(steps.kubeletConfigRead.stdout, (stdout) => setKubeletClusterDns({
        configPath: KUBELET_CONFIG_PATH,
        currentContent: readNodeFile(stdout, { node, path: KUBELET_CONFIG_PATH, step: "kubelet-config-read" }),
        clusterDns: ctx.clusterDns!,
        backupDir,
        root: args.root,
      }).script);
      // the planned value, known at preview time while the edit itself is not
      steps.kubeletConfigDns = script("kubelet-config-dns", edit, [steps.kubeletConfigRead], { triggers: [args.runId, ctx.clusterDns.join(",")] });
      beforeStart = [...beforeStart, steps.kubeletConfigDns];
    }
    steps.kubeletStart = script("kubelet-start", guard(() => kubeletReregister({ backupDir, root: args.root })).start, beforeStart);
    return steps.kubeletStart;
  }

  /**
   * kubeadm-rejoin: reset, clean and join with the fresh token; the join writes config.yaml from kubelet-config. A
   * control-plane node joins as one, and its new KCM gets allocation off: kubeadm writes it with allocation on, and
   * KCM exits when it leads with a Node still in the old range.
   */
  private kubeadmJoinAgain(prefix: string, steps: NodeMoveSteps, script: ScriptStep, beforeStart: pulumi.Resource[], ctx: NodeStepContext, controlPlaneJoin: ControlPlaneJoinTarget | undefined): pulumi.Resource {
    const { args, backupDir } = ctx;
    const joinScript = fromReadStep(pulumi.secret(steps.joinToken!.stdout), (stdout) => {
      const join = parseJoinCommand(stdout);
      if (controlPlaneJoin && !join.certificateKey) throw new Error(`node ${steps.move.name}: the join-token step printed no --certificate-key for a control-plane join; run kubeadm init phase upload-certs --upload-certs on a control-plane node by hand to see why`);
      return kubeadmRejoin({
        ...join, rejoinId: args.runId, backupDir, nodeName: steps.move.name, root: args.root, ignorePreflightErrors: args.rollout.ignorePreflightErrors,
        ...(controlPlaneJoin ? { controlPlane: { certificateKey: join.certificateKey!, ...controlPlaneJoin } } : {}),
      }).reveal("kubeadm-rejoin script");
    });
    if (!controlPlaneJoin) {
      steps.kubeadmRejoin = script("kubeadm-rejoin", pulumi.secret(joinScript), beforeStart);
      return steps.kubeadmRejoin;
    }
    // its etcd member leaves right before the reset, in the same step: every try does both
    steps.kubeadmRejoin = new ControlPlaneRejoin(`${prefix}-kubeadm-rejoin`, {
      connection: connectionFor(ctx.target, args.ssh, args.connection),
      script: joinScript,
      ...args.etcd!,
      nodeAddress: controlPlaneJoin.advertiseAddress,
      runId: args.runId,
      ...(args.root ? { root: args.root } : {}),
    }, { parent: this, dependsOn: beforeStart });
    steps.kcmAllocationOff = flagChangeSteps({
      name: `${prefix}-kcm-allocation-off`,
      node: ctx.target,
      component: "kube-controller-manager",
      flags: { "allocate-node-cidrs": false },
      healthUrl: DEFAULT_KCM_HEALTH_URL,
      backupDir: `${backupDir}/kubeadm-rejoin-kcm`,
      args: { nodes: [ctx.target], ssh: args.ssh, connection: args.connection, runId: args.runId, healthTimeoutSeconds: args.healthTimeoutSeconds, root: args.root },
      parent: this,
      dependsOn: [steps.kubeadmRejoin],
    });
    return steps.kcmAllocationOff.write;
  }
}

/** Every node's old and new subnet, for the Flannel bridge routes of an etcd-rewrite rollout. */
function flannelSubnetsOf(plan: Plan): FlannelSubnets[] {
  return plan.nodes.filter((n) => n.oldPodCIDR !== undefined).map((n) => ({ name: n.name, oldSubnet: n.oldPodCIDR!, newSubnet: n.newPodCIDR }));
}

function resourcesIn(dependsOn: pulumi.ComponentResourceOptions["dependsOn"]): pulumi.Resource[] {
  const list: unknown[] = Array.isArray(dependsOn) ? dependsOn : dependsOn ? [dependsOn] : [];
  return list.filter((r): r is pulumi.Resource => pulumi.Resource.isInstance(r));
}

type ScriptStep = (stepName: string, text: pulumi.Input<string>, dependsOn: pulumi.Resource[], extra?: Partial<RemoteScriptArgs>) => RemoteScript;

/** The arguments, checked once for all nodes. */
interface CheckedRollout {
  waves: RolloutWave[];
  targets: Map<string, NodeTarget>;
  /** Worker name → its address change (nodeAddresses). */
  addressChanges: Map<string, NodeAddressChange>;
  backupDir: string;
  rejoinTimeout: number;
  tokenNode?: NodeTarget;
}

/** What one node's steps are declared from. */
interface NodeStepContext extends CheckedRollout {
  target: NodeTarget;
  args: NodeRolloutArgs;
  clusterDns?: string[];
  common: { kubeconfig: pulumi.Input<string>; runId: string };
  dependsOn: pulumi.Input<pulumi.Input<pulumi.Resource>[]> | pulumi.Input<pulumi.Resource> | undefined;
  guard: <T>(make: () => T) => T;
}

/** Every argument checked before any step is declared: a bad one fails the component, naming it. */
function checkRolloutArgs(args: NodeRolloutArgs, fail: (message: string) => never, guard: <T>(make: () => T) => T): CheckedRollout {
  const plan = args.plan;
  if (!plan || !Array.isArray(plan.nodes)) fail("plan is missing its node moves; pass lib/plan's buildPlan() result");
  const backupDir = guard(() => nodeBackupDir(args.runId));
  const waves = guard(() => rolloutWaves(plan.nodes));
  const targets = new Map((args.nodes ?? []).map((n) => [n.name, n]));
  const rollout = args.rollout;
  if (!rollout || !["reregister", "kubeadm-rejoin", "etcd-rewrite"].includes(rollout.strategy)) {
    fail(`rollout.strategy ${JSON.stringify(rollout?.strategy)} must be "reregister", "kubeadm-rejoin" or "etcd-rewrite"`);
  }
  if (!Number.isSafeInteger(rollout.drainTimeoutSeconds) || rollout.drainTimeoutSeconds <= 0) {
    fail(`rollout.drainTimeoutSeconds ${rollout.drainTimeoutSeconds} must be a positive whole number of seconds, e.g. 300`);
  }
  const rejoinTimeout = args.rejoinTimeoutSeconds ?? DEFAULT_REJOIN_TIMEOUT_SECONDS;
  if (!Number.isSafeInteger(rejoinTimeout) || rejoinTimeout <= 0) fail(`rejoinTimeoutSeconds ${rejoinTimeout} must be a positive whole number of seconds, e.g. 600`);
  if (args.unmanagedPods !== undefined && args.unmanagedPods !== "refuse" && args.unmanagedPods !== "evict") {
    fail(`unmanagedPods ${JSON.stringify(args.unmanagedPods)} must be "refuse" or "evict"`);
  }
  for (const wave of waves) {
    for (const move of wave.nodes) {
      const target = targets.get(move.name);
      if (!target) fail(`node ${move.name} is planned to move but is not in cidr-migration:nodes; add it with its SSH host, or re-plan`);
      guard(() => connectionFor(target!, args.ssh, args.connection));
    }
  }
  const tokenNode = rollout.strategy === "kubeadm-rejoin" ? tokenNodeFor(args, fail) : undefined;
  if (rollout.strategy === "kubeadm-rejoin" && Object.keys(args.controlPlaneJoins ?? {}).length > 0 && !args.etcd?.endpoints?.length) {
    fail("controlPlaneJoins needs etcd (its endpoints): etcd is checked before each control-plane node's reset");
  }
  return { waves, targets, backupDir, rejoinTimeout, tokenNode, addressChanges: addressChangesOf(args, waves, fail) };
}

/** The token node for a control-plane node's own join: the configured one unless that is the node, else the first other. */
function otherControlPlane(args: NodeRolloutArgs, node: string): NodeTarget {
  const others = (args.nodes ?? []).filter((n) => n.role === "control-plane" && n.name !== node);
  const other = others.find((n) => n.name === args.tokenNode) ?? others[0];
  if (!other) throw new Error(`node ${node}: a control-plane node's kubeadm-rejoin needs another control-plane node in cidr-migration:nodes to make its join token`);
  return other;
}

function tokenNodeFor(args: NodeRolloutArgs, fail: (message: string) => never): NodeTarget {
  const controlPlanes = (args.nodes ?? []).filter((n) => n.role === "control-plane");
  const node = args.tokenNode ? controlPlanes.find((n) => n.name === args.tokenNode) : controlPlanes[0];
  if (!node) {
    return fail(args.tokenNode
      ? `tokenNode ${args.tokenNode} is not a control-plane node in cidr-migration:nodes; name one that is`
      : "strategy kubeadm-rejoin needs a control-plane node in cidr-migration:nodes to create join tokens; add one (role: control-plane)");
  }
  return node;
}

/** The plan's estimate per node, summed over the waves, beside the manual runbook's. */
function rolloutEstimateOf(plan: Plan, waves: RolloutWave[], fail: (message: string) => never): RolloutEstimate {
  const nodesPhase = plan.phases.find((p) => p.name === "nodes");
  const secondsFor = (node: string): number => {
    const step = nodesPhase?.steps.find((s) => s.id === stepId.node(node));
    return step ? step.estimateSeconds : fail(`plan has no step nodes/${node}; re-run the planner`);
  };
  return rolloutEstimate(waves, secondsFor, nodesPhase?.manualMinutes);
}

/** The subnet(s) the rejoin assigns: one, or a dual-stack node's pair comma-separated, primary first. */
function plannedSubnets(move: NodeMove): string {
  return move.newPodCIDRs?.join(",") ?? move.newPodCIDR;
}

/** The address changes this rollout carries out: workers it moves, re-registering (never the etcd rewrite's kept Nodes). */
function addressChangesOf(args: NodeRolloutArgs, waves: RolloutWave[], fail: (message: string) => never): Map<string, NodeAddressChange> {
  const changes = new Map<string, NodeAddressChange>();
  if (!args.addressChanges) return changes;
  const moved = new Set(waves.flatMap((w) => w.nodes.map((n) => n.name)));
  for (const c of args.addressChanges.changes) {
    if (!moved.has(c.name)) continue; // moved already (a re-run), or refused by the planner
    if (c.role !== "worker") fail(`node ${c.name}: only a worker's address changes with the rollout; a control-plane node's is planned only`);
    if (args.rollout.strategy === "etcd-rewrite") fail(`node ${c.name}: its address changes while it re-registers, which the etcd-rewrite rollout does not do`);
    if (c.prefix === undefined) fail(`node ${c.name}: the prefix length of its address is missing (config hostAddress.prefix)`);
    changes.set(c.name, c);
  }
  return changes;
}
