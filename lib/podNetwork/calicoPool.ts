/**
 * Calico IP pools for the pod-range move, as plain objects (crd.projectcalico.org/v1, the datastore form the
 * Kubernetes API stores and the IPPool CRD validates).
 *
 * The runbook: create a new pool in the new range with the old pool's settings, disable the old pool (existing
 * pods keep their addresses, new pods get addresses from the new pool), roll the nodes, and delete the old pool
 * only when no IPAM block or block affinity is left in it (Calico's own "migrate pools" procedure).
 *
 * API:
 * - `newPoolManifest(oldPool, { cidr, name? })` → the new IPPool object: ipipMode, vxlanMode, natOutgoing,
 *   blockSize and nodeSelector copied from the old pool (Calico's defaults where the old pool had none:
 *   blockSize 26 / 122, ipipMode and vxlanMode Never, natOutgoing false, nodeSelector "all()"), `disabled: false`.
 * - `defaultNewPoolName(cidr)` → e.g. "cidr-migration-10-48-0-0-16" (a DNS-1123 name derived from the range).
 * - `disabledPoolPatch(name)` → the server-side-apply body that only sets `spec.disabled: true`.
 * The check that no IPAM block or affinity is left in the old pool is lib/nodeMove/calicoIpam (ipamLeftovers).
 * Errors are UserError naming the pool and the field.
 */
import { normalizeCidr, parseCidr } from "../net/cidr";
import { UserError } from "../config/errors";
import { CalicoPoolInfo } from "../plan/inventory";

export const CALICO_API_VERSION = "crd.projectcalico.org/v1";
export const IPPOOL_KIND = "IPPool";
const ENCAP_MODES = ["Always", "CrossSubnet", "Never"] as const;
const DNS_1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface IPPoolSpec {
  cidr: string;
  blockSize: number;
  ipipMode: string;
  vxlanMode: string;
  natOutgoing: boolean;
  nodeSelector: string;
  disabled: boolean;
}

export interface IPPoolManifest {
  apiVersion: typeof CALICO_API_VERSION;
  kind: typeof IPPOOL_KIND;
  metadata: { name: string; labels: Record<string, string> };
  spec: IPPoolSpec;
}

export interface NewPoolOptions {
  cidr: string;
  /** Default: defaultNewPoolName(cidr). */
  name?: string;
}

export function defaultNewPoolName(cidr: string): string {
  return `cidr-migration-${normalizeCidr(cidr).replace(/[.:/]+/g, "-").replace(/-+$/, "")}`;
}

function encapMode(value: string | undefined, field: string, pool: string): string {
  const mode = value ?? "Never";
  if (!(ENCAP_MODES as readonly string[]).includes(mode)) {
    throw new UserError(`Calico IPPool ${pool}: ${field} "${mode}" is not one of ${ENCAP_MODES.join(", ")}; fix the old pool or create the new one by hand`);
  }
  return mode;
}

export function newPoolManifest(oldPool: CalicoPoolInfo, options: NewPoolOptions): IPPoolManifest {
  const range = parseCidr(options.cidr);
  if (range.cidr !== options.cidr) throw new UserError(`new Calico pool cidr "${options.cidr}" is not in normal form; pass "${range.cidr}"`);
  const oldRange = parseCidr(oldPool.cidr);
  if (oldRange.family !== range.family) {
    throw new UserError(`Calico IPPool ${oldPool.name} is ${oldRange.family} (${oldRange.cidr}) but the new pod range ${range.cidr} is ${range.family}; migrate a pool of the same family`);
  }
  const name = options.name ?? defaultNewPoolName(range.cidr);
  if (!DNS_1123.test(name) || name.length > 253) throw new UserError(`new Calico pool name "${name}" is not a DNS-1123 name; use lower-case letters, digits and -`);
  if (name === oldPool.name) throw new UserError(`new Calico pool name "${name}" is the old pool's name; pick another`);
  const blockSize = oldPool.blockSize ?? (range.family === "IPv4" ? 26 : 122);
  const [min, max] = range.family === "IPv4" ? [20, 32] : [116, 128];
  if (!Number.isInteger(blockSize) || blockSize < min || blockSize > max) {
    throw new UserError(`Calico IPPool ${oldPool.name}: blockSize ${blockSize} is outside ${min}..${max} for ${range.family}`);
  }
  if (range.prefix > blockSize) {
    throw new UserError(`new pod range ${range.cidr} is smaller than one Calico block (/${blockSize} from pool ${oldPool.name}); choose a range of /${blockSize} or larger`);
  }
  const ipipMode = encapMode(oldPool.ipipMode, "ipipMode", oldPool.name);
  const vxlanMode = encapMode(oldPool.vxlanMode, "vxlanMode", oldPool.name);
  if (ipipMode !== "Never" && vxlanMode !== "Never") {
    throw new UserError(`Calico IPPool ${oldPool.name} has both ipipMode ${ipipMode} and vxlanMode ${vxlanMode}; Calico allows only one encapsulation, fix the old pool first`);
  }
  return {
    apiVersion: CALICO_API_VERSION,
    kind: IPPOOL_KIND,
    metadata: { name, labels: { "app.kubernetes.io/managed-by": "cidr-migration" } },
    spec: {
      cidr: range.cidr,
      blockSize,
      ipipMode,
      vxlanMode,
      natOutgoing: oldPool.natOutgoing ?? false,
      nodeSelector: oldPool.nodeSelector ?? "all()",
      disabled: false,
    },
  };
}

export function disabledPoolPatch(name: string): { apiVersion: string; kind: string; metadata: { name: string }; spec: { disabled: true } } {
  return { apiVersion: CALICO_API_VERSION, kind: IPPOOL_KIND, metadata: { name }, spec: { disabled: true } };
}
