/**
 * ApiserverCerts: re-issues each control-plane node's apiserver serving certificate with the new `kubernetes`
 * Service IP (first address of the new Service range) as a SAN, one node at a time, and has the apiserver serve it.
 *
 * Per node: `read` kube-apiserver.yaml (its --advertise-address and --secure-port are SANs/ports kubeadm needs)
 * → `renew` (lib/remote/scripts/renewApiserverCert): old apiserver.crt/key moved aside and kept under
 * <backupDir>/apiserver-cert/previous, `kubeadm init phase certs apiserver --config <file>`, the new certificate
 * checked with openssl (new IP present, every old SAN kept, signed by ca.crt, matches its key), then served: the
 * apiserver reloads changed certificate files itself, so it keeps running; only one that has not reloaded within
 * about a minute is restarted, by moving its manifest out and back (kubeadm's documented way for static pods), and
 * checked healthy. Any check failing puts the old pair back and fails the step.
 *
 * The config file is the cluster's own ClusterConfiguration (kube-system/kubeadm-config, see lib/controlPlane/kubeadmCertConfig
 * for why), with the new serviceSubnet; by default the OLD kubernetes Service IP stays a SAN too, because running
 * pods reach the apiserver through it until the Services phase re-creates the `kubernetes` Service and the pods
 * restart. Wire it after ControlPlane (the apiserver must already run with the new range) and before Services.
 */
import * as pulumi from "@pulumi/pulumi";
import { RemoteScript } from "../dynamic-providers/remoteScript";
import { kubernetesServiceIP } from "../lib/net/cidr";
import { KUBEADM_CLUSTER_CONFIGURATION_KEY } from "../lib/controlPlane/kubeadmConfigEdit";
import { CidrMove } from "../lib/config/migrationConfig";
import { readFlag } from "../lib/controlPlane/manifestFlags";
import { nodeBackupDir } from "../lib/controlPlane/nodeBackupDir";
import { readFile, readNodeFile } from "../lib/remote/scripts/readFile";
import { opensslIpSan, renewApiserverCert } from "../lib/remote/scripts/renewApiserverCert";
import { NodeAccessArgs, checkCidr, checkNodeAccess, DEFAULT_HEALTH_TIMEOUT_SECONDS } from "./controlPlane";
import { connectionFor } from "./remoteConnection";
import { oneNodeAtATime } from "./oneNodeAtATime";
import { withParentDependsOn } from "./parentDependsOn";
import { liveConfigMapKey } from "./systemObjectPatch";
import { fromReadStep } from "./readStepOutput";

export interface ApiserverCertsArgs extends NodeAccessArgs {
  /** Service range move; the certificate gets kubernetesServiceIP(to) (e.g. 10.112.0.1 for 10.112.0.0/12). */
  serviceCidr: CidrMove;
  /**
   * The cluster's ClusterConfiguration text. Default: read live from kube-system/kubeadm-config (key
   * ClusterConfiguration) while the program runs (components/liveConfigMaps.ts).
   * Do not pass ClusterConfig.liveClusterConfiguration: ClusterConfig waits for the Services phase, which waits
   * for this component, so its read would only resolve after this component is done (a cycle).
   */
  clusterConfiguration?: pulumi.Input<string>;
  /** kubeadm-config ConfigMap name for the default read (default "kubeadm-config"). */
  kubeadmConfigMapName?: string;
  /** Keep the old kubernetes Service IP as a SAN (default true; see the header). */
  keepOldServiceIp?: boolean;
  /** kubeadm on the nodes (default "kubeadm" on PATH). */
  kubeadm?: string;
}

export interface ApiserverCertsNodeSteps {
  read: RemoteScript;
  renew: RemoteScript;
}

const APISERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";

export class ApiserverCerts extends pulumi.ComponentResource {
  readonly steps: Record<string, ApiserverCertsNodeSteps> = {};
  readonly done: RemoteScript;
  /** The SAN every re-issued certificate carries (openssl form). */
  readonly newServiceIpSan: string;

  constructor(name: string, args: ApiserverCertsArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:apiserverCerts:ApiserverCerts", name, {}, opts);
    checkNodeAccess(args, this);
    const newCidr = checkCidr(args.serviceCidr?.to, "serviceCidr.to", this);
    const oldCidr = checkCidr(args.serviceCidr?.from, "serviceCidr.from", this);
    const newIp = kubernetesServiceIP(newCidr);
    const oldIp = kubernetesServiceIP(oldCidr);
    this.newServiceIpSan = opensslIpSan(newIp);
    const backupDir = nodeBackupDir(args.runId);
    const timeoutSeconds = args.healthTimeoutSeconds ?? DEFAULT_HEALTH_TIMEOUT_SECONDS;
    const keepOld = args.keepOldServiceIp ?? true;
    const clusterConfiguration = args.clusterConfiguration ?? liveConfigMapKey(
      { namespace: "kube-system", configMap: args.kubeadmConfigMapName ?? "kubeadm-config", key: KUBEADM_CLUSTER_CONFIGURATION_KEY });

    oneNodeAtATime(args.nodes, withParentDependsOn(opts), (node, after) => {
      const connection = connectionFor(node, args.ssh, args.connection);
      const read = new RemoteScript(`${name}-${node.name}-read`, {
        connection,
        script: readFile({ path: APISERVER_MANIFEST, root: args.root }),
        triggers: [args.runId, APISERVER_MANIFEST],
      }, { parent: this, dependsOn: after });
      const script = fromReadStep(read.stdout, (stdout) => pulumi.output(clusterConfiguration).apply((clusterConfiguration) => {
        const manifest = readNodeFile(stdout, { node: node.name, path: APISERVER_MANIFEST, step: "read" });
        const advertiseAddress = readFlag(manifest, "advertise-address", { source: `${node.name}:${APISERVER_MANIFEST}` });
        if (!advertiseAddress) throw new Error(`node ${node.name}: ${APISERVER_MANIFEST} has no --advertise-address; kubeadm always sets it, check the manifest`);
        const port = Number(readFlag(manifest, "secure-port", { source: `${node.name}:${APISERVER_MANIFEST}` }) ?? "6443");
        return renewApiserverCert({
          certConfig: {
            clusterConfiguration,
            serviceSubnet: newCidr,
            nodeName: node.name,
            advertiseAddress,
            bindPort: port,
            extraSans: keepOld ? [oldIp] : [],
          },
          newServiceIp: newIp,
          droppedSans: keepOld ? [] : [opensslIpSan(oldIp)],
          backupDir,
          servingAddress: `127.0.0.1:${port}`,
          health: { url: `https://127.0.0.1:${port}/healthz`, expectFlags: [`--service-cluster-ip-range=${newCidr}`], timeoutSeconds },
          kubeadm: args.kubeadm,
          timeoutSeconds,
          root: args.root,
        });
      }));
      const renew = new RemoteScript(`${name}-${node.name}-renew`, {
        connection,
        script,
        triggers: [args.runId, this.newServiceIpSan],
      }, { parent: this, dependsOn: [read] });
      this.steps[node.name] = { read, renew };
      return { steps: this.steps[node.name], last: renew };
    });
    this.done = this.steps[args.nodes[args.nodes.length - 1].name].renew;
    this.registerOutputs({ newServiceIpSan: this.newServiceIpSan });
  }
}
