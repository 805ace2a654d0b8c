/**
 * ControlPlaneAddress: control-plane nodes change address (issue 16), one at a time in the plan's order (etcd keeps
 * quorum only while at most one member is away), each after the one before has finished.
 *
 * Per node (the node keeps its Node object and its etcd member ID):
 *   etcd-quorum        etcd quorum without this member (three or more members, every one started), the member
 *                      there on its old peer URL: checked before anything on the node changes
 *   address-add        SSH  the new address beside the old one (lib/remote/scripts/nodeAddressChange, phase add)
 *   certs-both         SSH  apiserver, etcd server and peer certificates re-issued by kubeadm with the new address
 *                           AND the old one as SANs: clients and peers still dial the old address for a while
 *   read-files         SSH  the manifests, kubeconfigs and kubelet flags as the node holds them
 *   kubelet            SSH  kubelet.conf and kubeadm-flags.env (--node-ip) written checked, the kubelet restarted
 *   node-address       API  the Node reports the new InternalIP. Before any static pod restarts: a host-network pod
 *                           takes the Node's address when it starts and keeps it for its life
 *   etcd-peer          quorum checked again, leadership handed on, the member's peer URL updated in place (from
 *                      here until etcd restarts on the new address, the other members wait for it there)
 *   etcd               SSH  etcd.yaml at the new address; the kubelet restarts etcd; wait healthy on the new flags,
 *                           else the old manifest back; where the member cannot come back on its data, it is removed,
 *                           added again at the new address and started from a clean data dir
 *                           (dynamic-providers/etcdMemberRestart)
 *   apiserver          SSH  kube-apiserver.yaml (--advertise-address, its annotation, probes), the same way
 *   components         SSH  controller-manager.conf, scheduler.conf, admin.conf (`server:`) written checked; the
 *                           controller-manager's and the scheduler's manifests marked with the new address, so the
 *                           kubelet restarts them as new pods (lib/controlPlane/staticPodRestartEdit)
 *   node-follow        API  the host-network DaemonSet pods off the old address; no static pod left there
 *   certs-new          SSH  the certificates re-issued without the old address
 *   etcd-handoff       leadership handed on again if the member leads: its own connections to its peers leave
 *                      from the old address, and a leader's dropping costs an election
 *   address-remove-old SSH  the old address removed, over a session to the new one when SSH used the old
 *   address-agents     API  the node's CNI agent and kube-proxy restarted, now that only the new address is left to
 *                           detect; the CNI's address annotations on the Node name it (the other nodes tunnel to it)
 * Every step is idempotent: a re-run after a failure at any point starts again from what the node holds.
 */
import * as pulumi from "@pulumi/pulumi";
import { EtcdMemberRestart } from "../dynamic-providers/etcdMemberRestart";
import { EtcdPeerMove } from "../dynamic-providers/etcdPeerMove";
import { NodeAddressAgents, NodeAddressFollow, NodeAddressReported } from "../dynamic-providers/nodeApiSteps";
import { RemoteScript } from "../dynamic-providers/remoteScript";
import { HostAddressSettings, NodeAddressChange } from "../lib/config/migrationConfig";
import { APISERVER_MANIFEST, CONTROL_PLANE_NODE_FILES, ControlPlaneAddressEdits, controlPlaneAddressEdits, ETCD_MANIFEST } from "../lib/controlPlane/controlPlaneAddressEdits";
import { KUBEADM_CLUSTER_CONFIGURATION_KEY } from "../lib/controlPlane/kubeadmConfigEdit";
import { heldManifestsDir, nodeBackupDir } from "../lib/controlPlane/nodeBackupDir";
import { urlHost } from "../lib/net/cidr";
import { buildScript, sh } from "../lib/remote/remoteScript";
import { guardedManifestEdit } from "../lib/remote/scripts/guardedManifestEdit";
import { nodeAddressChange, NodeAddressChangeInput } from "../lib/remote/scripts/nodeAddressChange";
import { readFiles, readNodeFiles } from "../lib/remote/scripts/readFile";
import { reissueNodeAddressCerts } from "../lib/remote/scripts/reissueNodeAddressCerts";
import { writeFilesThenRestart } from "../lib/remote/scripts/writeFilesThenRestart";
import { DEFAULT_APISERVER_HEALTH_URL, DEFAULT_HEALTH_TIMEOUT_SECONDS, NodeAccessArgs } from "./controlPlane";
import { oneNodeAtATime } from "./oneNodeAtATime";
import { withParentDependsOn } from "./parentDependsOn";
import { fromReadStep } from "./readStepOutput";
import { connectionFor } from "./remoteConnection";
import { liveConfigMapKey } from "./systemObjectPatch";

/** etcd's own health endpoint on a kubeadm node (--listen-metrics-urls): "ok" once it serves. */
export const ETCD_READY_URL = "http://127.0.0.1:2381/readyz";

export interface ControlPlaneAddressArgs extends NodeAccessArgs {
  /** The control-plane nodes' changes, in the plan's order (lib/plan/nodeAddressPlan); each needs its prefix. */
  changes: NodeAddressChange[];
  /** How the hosts keep their address (config hostAddress). */
  host: HostAddressSettings;
  /** Content of an admin kubeconfig, for the API step; stored as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** The stack's etcd client URLs and TLS material (config etcd), for the member's peer URL. */
  etcd: { endpoints: string[]; caCert?: pulumi.Input<string>; cert?: pulumi.Input<string>; key?: pulumi.Input<string> };
  /** The Service range the apiserver certificate names (the new one when the run moves it). */
  serviceSubnet: string;
  /** More apiserver SANs to keep: the old `kubernetes` Service IP when the run also moves the Service range. */
  apiserverExtraSans?: string[];
  /** The cluster's ClusterConfiguration text. Default: read live from kube-system/kubeadm-config. */
  clusterConfiguration?: pulumi.Input<string>;
  /** The kubeadm executable on the nodes (default "kubeadm"). */
  kubeadm?: string;
}

/** One node's steps, in order. */
export interface ControlPlaneAddressSteps {
  etcdQuorum: EtcdPeerMove;
  addressAdd: RemoteScript;
  certsBoth: RemoteScript;
  readFiles: RemoteScript;
  kubelet: RemoteScript;
  nodeAddress: NodeAddressReported;
  etcdPeer: EtcdPeerMove;
  etcd: EtcdMemberRestart;
  apiserver: RemoteScript;
  components: RemoteScript;
  nodeFollow: NodeAddressFollow;
  certsNew: RemoteScript;
  etcdHandoff: EtcdPeerMove;
  addressRemoveOld: RemoteScript;
  addressAgents: NodeAddressAgents;
}

export class ControlPlaneAddress extends pulumi.ComponentResource {
  readonly steps: Record<string, ControlPlaneAddressSteps> = {};
  readonly done: pulumi.Resource[];

  constructor(name: string, args: ControlPlaneAddressArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:controlPlaneAddress:ControlPlaneAddress", name, {}, opts);
    const fail = (message: string): never => {
      throw new pulumi.ResourceError(message, this);
    };
    const targets = new Map(args.nodes.map((n) => [n.name, n]));
    const nodes = args.changes.map((c) => targets.get(c.name) ?? fail(`node ${c.name} changes address but is not a control-plane node in cidr-migration:nodes; add it with its SSH host and role control-plane`));
    for (const c of args.changes) if (c.prefix === undefined) fail(`node ${c.name}: the prefix length of its address is missing (config hostAddress.prefix)`);
    const changes = new Map(args.changes.map((c) => [c.name, c]));
    const backupDir = nodeBackupDir(args.runId);
    const timeoutSeconds = args.healthTimeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_SECONDS;
    const clusterConfiguration = args.clusterConfiguration ?? liveConfigMapKey({ namespace: "kube-system", configMap: "kubeadm-config", key: KUBEADM_CLUSTER_CONFIGURATION_KEY });
    const guard = <T>(make: () => T): T => {
      try {
        return make();
      } catch (err) {
        return fail((err as Error).message);
      }
    };

    let last: pulumi.Resource[] = [];
    oneNodeAtATime(nodes, withParentDependsOn(opts), (node, after) => {
      const change = changes.get(node.name)!;
      const addressInput: NodeAddressChangeInput = { from: change.from, to: change.to, prefix: change.prefix!, ...args.host };
      const plan = `${change.from} -> ${change.to}`;
      const step = (stepName: string, script: pulumi.Input<string>, dependsOn: pulumi.Input<pulumi.Input<pulumi.Resource>[]>, host = node.host) => new RemoteScript(`${name}-${node.name}-${stepName}`, {
        connection: connectionFor({ ...node, host }, args.ssh, args.connection),
        script,
        triggers: [args.runId, plan],
      }, { parent: this, dependsOn });
      const certs = (keepOld: boolean) => pulumi.output(clusterConfiguration).apply((text) => guard(() => reissueNodeAddressCerts({
        certConfig: { clusterConfiguration: text, serviceSubnet: args.serviceSubnet, nodeName: node.name },
        from: change.from,
        to: change.to,
        keepOld,
        apiserverExtraSans: args.apiserverExtraSans,
        backupDir,
        kubeadm: args.kubeadm,
        root: args.root,
      })));

      const member = { ...args.etcd, member: node.name, from: change.from, to: change.to, runId: args.runId };
      const etcdQuorum = new EtcdPeerMove(`${name}-${node.name}-etcd-quorum`, { ...member, step: "check" }, { parent: this, dependsOn: after });
      const addressAdd = step("address-add", guard(() => nodeAddressChange({ ...addressInput, phase: "add" })), [etcdQuorum]);
      const certsBoth = step("certs-both", certs(true), [addressAdd]);
      const read = step("read-files", readFiles({ paths: CONTROL_PLANE_NODE_FILES, root: args.root }), [certsBoth]);
      const edits = fromReadStep(read.stdout, (stdout) => guard(() =>
        controlPlaneAddressEdits(node.name, readNodeFiles(stdout, CONTROL_PLANE_NODE_FILES, { node: node.name, step: "read-files" }), change.from, change.to)));
      const edited = <T>(make: (e: ControlPlaneAddressEdits) => T) => edits.apply((e) => guard(() => make(e)));
      const follow = { kubeconfig: args.kubeconfig, node: node.name, runId: args.runId, internalIP: change.to, oldInternalIP: change.from };

      // the kubelet first: the static pods restarted below take the address the Node reports when they start
      const kubelet = step("kubelet", edited((e) => e.kubelet.length > 0
        ? writeFilesThenRestart({ files: e.kubelet, restartKubelet: true, backupDir, healthTimeoutSeconds: timeoutSeconds, root: args.root })
        : nothingToDo("kubelet", `neither kubelet.conf nor --node-ip names ${change.from} (moved already)`)), [read]);
      const nodeAddress = new NodeAddressReported(`${name}-${node.name}-node-address`, follow, { parent: this, dependsOn: [kubelet] });
      const etcdPeer = new EtcdPeerMove(`${name}-${node.name}-etcd-peer`, { ...member, step: "move" }, { parent: this, dependsOn: [nodeAddress] });
      const etcd = new EtcdMemberRestart(`${name}-${node.name}-etcd`, {
        connection: connectionFor(node, args.ssh, args.connection),
        ...member,
        manifest: edits.apply((e) => (e.etcd ? { path: ETCD_MANIFEST, current: e.etcd.current, next: e.etcd.next } : undefined)),
        backupDir, heldDir: heldManifestsDir(args.runId), healthUrl: ETCD_READY_URL, timeoutSeconds, root: args.root,
      }, { parent: this, dependsOn: [etcdPeer] });
      const apiserver = step("apiserver", edited((e) => e.apiserver
        ? guardedManifestEdit({
          path: APISERVER_MANIFEST, currentContent: e.apiserver.current, newContent: e.apiserver.next, backupDir,
          wait: { component: "kube-apiserver", url: DEFAULT_APISERVER_HEALTH_URL, expectFlags: [`--advertise-address=${change.to}`], timeoutSeconds },
          root: args.root,
        })
        : nothingToDo("apiserver", `${APISERVER_MANIFEST} names ${change.from} nowhere (moved already)`)), [etcd]);
      // restarted even when no kubeconfig of theirs names the node: as new pods they take the new address
      const components = step("components", edited((e) => e.components.length + e.restarts.length > 0
        ? writeFilesThenRestart({ files: e.components, manifests: e.restarts, backupDir, healthTimeoutSeconds: timeoutSeconds, root: args.root })
        : nothingToDo("components", `no kubeconfig names ${change.from} and both manifests carry the new address (moved already)`)), [apiserver]);
      const nodeFollow = new NodeAddressFollow(`${name}-${node.name}-node-follow`, follow, { parent: this, dependsOn: [components] });
      const certsNew = step("certs-new", certs(false), [nodeFollow]);
      // the member's own connections to its peers leave from the old address: if it leads, that drop costs an election
      const etcdHandoff = new EtcdPeerMove(`${name}-${node.name}-etcd-handoff`, { ...member, step: "handoff" }, { parent: this, dependsOn: [certsNew] });
      // over a session to the new address when SSH came in at the old one
      const addressRemoveOld = step("address-remove-old", guard(() => nodeAddressChange({ ...addressInput, phase: "remove-old" })), [etcdHandoff], node.host === change.from ? change.to : node.host);
      const addressAgents = new NodeAddressAgents(`${name}-${node.name}-address-agents`, follow, { parent: this, dependsOn: [addressRemoveOld] });
      this.steps[node.name] = { etcdQuorum, addressAdd, certsBoth, readFiles: read, kubelet, nodeAddress, etcdPeer, etcd, apiserver, components, nodeFollow, certsNew, etcdHandoff, addressRemoveOld, addressAgents };
      last = [addressAgents];
      return { steps: this.steps[node.name], last: addressAgents };
    });
    this.done = last;
    this.registerOutputs({});
  }
}

/** A step whose edit the read found done: it says so and changes nothing. */
function nothingToDo(step: string, why: string): string {
  return buildScript({ name: `control-plane-address-${step}` }, [sh`note ${`nothing to change: ${why}`}`]);
}
