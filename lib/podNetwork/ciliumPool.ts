/**
 * Cilium's pod range, as it lives in the kube-system/cilium-config ConfigMap, and how it moves.
 *
 * What Cilium documents (docs.cilium.io, IPAM "Cluster Scope" → "Expanding the cluster pool"):
 * - `ipam: cluster-pool` (the default): the cilium-operator hands each node a podCIDR from
 *   `cluster-pool-ipv4-cidr` (a space-separated list) and writes it to the node's CiliumNode
 *   (`spec.ipam.podCIDRs`). Existing elements of the list must not be changed and `cluster-pool-ipv4-mask-size`
 *   cannot be changed; new ranges are added as new elements.
 * - `ipam: kubernetes`: Cilium follows Node.spec.podCIDR, which kube-controller-manager (or our node rollout)
 *   sets; nothing in cilium-config names the pod range.
 * So the move is: put the new range FIRST in the list and keep the old one (the operator allocates from the first
 * element with room, and CiliumNodes still holding old podCIDRs stay valid), restart the operator so it reads the
 * list, then, in the node rollout, delete each drained node's CiliumNode and restart its agent: the agent
 * recreates the CiliumNode and the operator allocates from the new range. The old element can be dropped by hand
 * once no CiliumNode holds a CIDR from it.
 *
 * API: `planCiliumPool(data, { newPodCidr, nodeMaskSize })` → `{ ipamMode, data }` where `data` holds only the
 * keys to set (empty for `ipam: kubernetes`). Refused (UserError): another IPAM mode (multi-pool, eni, azure,
 * crd: their ranges are not cilium-config's), a mask size different from the plan's, an IPv6 range.
 */
import { normalizeCidr, parseCidr } from "../net/cidr";
import { UserError } from "../config/errors";

export const CILIUM_POOL_CIDR_KEY = "cluster-pool-ipv4-cidr";
export const CILIUM_POOL_MASK_KEY = "cluster-pool-ipv4-mask-size";
export type CiliumIpamMode = "cluster-pool" | "kubernetes";

export interface CiliumPoolPlan {
  ipamMode: CiliumIpamMode;
  /** cilium-config keys to set (the desired values, stable once applied); empty in kubernetes mode. */
  data: Record<string, string>;
  /** False when the live ConfigMap already has these values. */
  changed: boolean;
  /** The cluster-pool list after the change ("new old"); undefined in kubernetes mode. */
  poolCidrs?: string[];
}

export interface CiliumPoolInput {
  newPodCidr: string;
  nodeMaskSize: number;
}

const SOURCE = "kube-system/cilium-config";

/**
 * What must restart after the pool list changes: in cluster-pool mode the operator allocates each node's podCIDR
 * from `cluster-pool-ipv4-cidr` and reads the list at start; the agents read their CIDR from their CiliumNode, so
 * restarting the agent DaemonSet would not pick up the list. The plan's step and CiliumConfig's patch both name it.
 */
export const CILIUM_OPERATOR = { kind: "Deployment", namespace: "kube-system", name: "cilium-operator" } as const;

export function planCiliumPool(data: Record<string, string | undefined>, input: CiliumPoolInput): CiliumPoolPlan {
  const range = parseCidr(input.newPodCidr);
  if (range.cidr !== input.newPodCidr) throw new UserError(`${SOURCE}: new pod range "${input.newPodCidr}" is not in normal form; pass "${range.cidr}"`);
  if (range.family !== "IPv4") throw new UserError(`${SOURCE}: new pod range ${range.cidr} is IPv6; this tool moves Cilium's IPv4 cluster pool only`);
  const mode = (data.ipam ?? "cluster-pool").trim();
  if (mode === "kubernetes") return { ipamMode: "kubernetes", data: {}, changed: false };
  if (mode !== "cluster-pool") {
    throw new UserError(`${SOURCE}: ipam "${mode}" is not cluster-pool or kubernetes; Cilium's ranges are managed outside cilium-config in that mode, move them by hand`);
  }
  const current = (data[CILIUM_POOL_CIDR_KEY] ?? "").split(/[\s,]+/).filter((c) => c !== "");
  if (current.length === 0) throw new UserError(`${SOURCE}: ${CILIUM_POOL_CIDR_KEY} is empty; cilium-config does not say which range the operator uses`);
  const normalized = current.map((c) => {
    try {
      return normalizeCidr(c);
    } catch (error) {
      throw new UserError(`${SOURCE}: ${CILIUM_POOL_CIDR_KEY} element "${c}" is not a CIDR (${(error as Error).message})`);
    }
  });
  const mask = data[CILIUM_POOL_MASK_KEY];
  if (mask !== undefined && mask.trim() !== String(input.nodeMaskSize)) {
    throw new UserError(`${SOURCE}: ${CILIUM_POOL_MASK_KEY} is ${mask.trim()} but the plan uses /${input.nodeMaskSize} node subnets; Cilium cannot change the mask size, set podCidr.nodeMaskSize to ${mask.trim()}`);
  }
  // New range first: the operator allocates from the first element with room. Existing elements stay as they are.
  const pool = normalized[0] === range.cidr ? current : [range.cidr, ...current.filter((_, i) => normalized[i] !== range.cidr)];
  const value = pool.join(" ");
  return { ipamMode: "cluster-pool", data: { [CILIUM_POOL_CIDR_KEY]: value }, poolCidrs: pool, changed: value !== data[CILIUM_POOL_CIDR_KEY] };
}
