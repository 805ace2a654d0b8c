/**
 * The config file handed to `kubeadm init phase certs apiserver --config <file>` when the apiserver serving
 * certificate is re-issued for the new Service range.
 *
 * Decision: the cluster's OWN ClusterConfiguration (the kubeadm-config ConfigMap text) is the base, not a config
 * made up from scratch, so everything kubeadm derives SANs from stays as the cluster has it: apiServer.certSANs,
 * controlPlaneEndpoint, networking.dnsDomain, clusterName. Only these change, in this generated file (the
 * ConfigMap itself is changed by the ClusterConfig component):
 * - networking.serviceSubnet → the new range (kubeadm puts its first address, the `kubernetes` Service IP, in the
 *   certificate);
 * - apiServer.certSANs += `extraSans` (by default the OLD `kubernetes` Service IP, so pods that still reach the
 *   apiserver through the old Service IP keep verifying it until they are re-created);
 * - etcd.local.serverCertSANs and peerCertSANs += `etcdExtraSans` (a node address change keeps the old address in
 *   etcd's certificates while members still reach each other there);
 * - certificatesDir → `certificatesDir` (the node's PKI directory, under the sandbox root in tests).
 * An InitConfiguration document in the same apiVersion comes first, carrying this node's name and advertise
 * address (both are SANs; without them kubeadm would guess from the default route).
 *
 * API: `kubeadmCertConfig({ clusterConfiguration, serviceSubnet, nodeName, advertiseAddress, bindPort?,
 * extraSans?, certificatesDir })` → the YAML text (two documents). The result is generated, not an edit a human
 * reviews, so it is re-serialised with the `yaml` Document API. Errors: UserError naming the field.
 */
import { Document, isMap, isSeq, parseDocument, stringify, YAMLMap, YAMLSeq } from "yaml";
import { isIpAddress, normalizeCidr, normalizeIp } from "../net/cidr";
import { UserError } from "../config/errors";

export interface KubeadmCertConfigInput {
  /** The ClusterConfiguration text from kube-system/kubeadm-config. */
  clusterConfiguration: string;
  /** The new Service range. */
  serviceSubnet: string;
  /** This node's name (nodeRegistration.name, a DNS SAN of the certificate). */
  nodeName: string;
  /** The apiserver's --advertise-address on this node (an IP SAN). */
  advertiseAddress: string;
  /** The apiserver's --secure-port on this node (default 6443). */
  bindPort?: number;
  /** Extra SANs (IPs or DNS names) for the apiserver certificate only. */
  extraSans?: readonly string[];
  /** Extra SANs for etcd's server and peer certificates (stacked etcd; ignored with external etcd). */
  etcdExtraSans?: readonly string[];
  /** Where kubeadm reads ca.crt/ca.key and writes apiserver.crt/key. */
  certificatesDir: string;
}

const SUPPORTED = ["kubeadm.k8s.io/v1beta2", "kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4"];
const SOURCE = "kube-system/kubeadm-config ClusterConfiguration";

export function kubeadmCertConfig(input: KubeadmCertConfigInput): string {
  const doc = parseDocument(input.clusterConfiguration);
  if (doc.errors.length > 0) throw new UserError(`${SOURCE}: not valid YAML (${doc.errors[0].code}); fix the ConfigMap first`);
  if (!isMap(doc.contents) || doc.get("kind") !== "ClusterConfiguration") {
    throw new UserError(`${SOURCE}: not a ClusterConfiguration (kind ${String(isMap(doc.contents) ? doc.get("kind") : "none")}); pass the ClusterConfiguration key of kubeadm-config`);
  }
  const apiVersion = String(doc.get("apiVersion"));
  if (!SUPPORTED.includes(apiVersion)) throw new UserError(`${SOURCE}: apiVersion "${apiVersion}" is not one of ${SUPPORTED.join(", ")}; upgrade kubeadm or re-issue the certificate by hand`);
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(input.nodeName)) throw new UserError(`nodeName "${input.nodeName}" is not a Kubernetes node name`);
  if (!isIpAddress(input.advertiseAddress)) throw new UserError(`advertiseAddress "${input.advertiseAddress}" is not an IP address; it comes from the apiserver's --advertise-address`);
  const bindPort = input.bindPort ?? 6443;
  if (!Number.isInteger(bindPort) || bindPort < 1 || bindPort > 65535) throw new UserError(`bindPort ${bindPort} is not a port; it comes from the apiserver's --secure-port`);
  if (!input.certificatesDir.startsWith("/")) throw new UserError(`certificatesDir "${input.certificatesDir}" is not an absolute path`);

  doc.setIn(["networking", "serviceSubnet"], normalizeCidr(input.serviceSubnet));
  doc.set("certificatesDir", input.certificatesDir);
  appendSans(doc, ["apiServer", "certSANs"], input.extraSans);
  // external etcd's certificates are not kubeadm's
  if (input.etcdExtraSans?.length && !doc.hasIn(["etcd", "external"])) {
    appendSans(doc, ["etcd", "local", "serverCertSANs"], input.etcdExtraSans);
    appendSans(doc, ["etcd", "local", "peerCertSANs"], input.etcdExtraSans);
  }
  const init = new Document({
    apiVersion,
    kind: "InitConfiguration",
    localAPIEndpoint: { advertiseAddress: normalizeIp(input.advertiseAddress), bindPort },
    nodeRegistration: { name: input.nodeName },
  });
  return `${stringify(init.toJS())}---\n${doc.toString()}`;
}

/** `sans` added to the list at `path` (made when absent), each once, IPs normalized; the list's own entries first. */
function appendSans(doc: Document, path: string[], sans: readonly string[] | undefined): void {
  const extras = (sans ?? []).map((san) => (isIpAddress(san) ? normalizeIp(san) : san));
  if (extras.length === 0) return;
  const existing = doc.getIn(path, true);
  if (existing !== undefined && !isSeq(existing)) throw new UserError(`${SOURCE}: ${path.join(".")} is not a list; fix the ConfigMap first`);
  const current = existing ? (existing as YAMLSeq).items.map((item) => String((item as { value?: unknown }).value ?? item)) : [];
  const merged = [...current, ...extras.filter((san) => !current.includes(san))];
  for (let depth = 1; depth < path.length; depth++) {
    const parent = path.slice(0, depth);
    if (!isMap(doc.getIn(parent, true))) doc.setIn(parent, new YAMLMap());
  }
  doc.setIn(path, doc.createNode(merged));
}
