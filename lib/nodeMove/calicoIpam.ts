/**
 * Which Calico IPAM objects to release for a node that leaves the old pool (issue 7, step 4, Calico).
 *
 * Calico keeps per-node state in the datastore, not on the node: IPAMBlocks (a /26 of a pool, `spec.affinity`
 * "host:<node>") and BlockAffinities (`spec.node`, `spec.cidr`). While they exist, calico-node on the node that
 * comes back keeps using its old-range block (and its tunnel address in it). The node's blocks and affinities that
 * lie in the old pool are released (deleted) once the Node is drained and deleted; the blocks of the new pool, and
 * every other node's, stay. Handles that pointed into the released blocks are left to Calico's own IPAM garbage
 * collection (kube-controllers), which removes handles whose allocations are gone.
 */
import { Address4, Address6 } from "ip-address";
import { cidrContains } from "../net/cidr";

export interface IpamBlockLike {
  metadata?: { name?: string };
  spec?: { cidr?: string; affinity?: string };
}

export interface BlockAffinityLike {
  metadata?: { name?: string };
  spec?: { node?: string; cidr?: string };
}

const inPool = (pools: readonly string[], cidr: string | undefined) => cidr !== undefined && pools.some((pool) => cidrContains(pool, cidr));

export function calicoObjectsToRelease(node: string, oldPools: readonly string[], blocks: readonly IpamBlockLike[], affinities: readonly BlockAffinityLike[]): { blocks: string[]; affinities: string[] } {
  return {
    blocks: blocks.filter((b) => b.spec?.affinity === `host:${node}` && inPool(oldPools, b.spec?.cidr)).map((b) => b.metadata!.name!).sort(),
    affinities: affinities.filter((a) => a.spec?.node === node && inPool(oldPools, a.spec?.cidr)).map((a) => a.metadata!.name!).sort(),
  };
}

/**
 * The old pool's side: which Calico IPAM blocks and block affinities still lie in a pool's CIDR. The old pool may
 * only be deleted when there are none (a block left behind keeps addresses and routes of the old range alive).
 *
 * API: `ipamLeftovers(poolCidr, blocks, affinities)` → `{ blocks, affinities }`, the objects whose CIDR overlaps
 * the pool. A CIDR that cannot be read counts as overlapping (fail closed).
 * The range math uses ip-address directly instead of lib/net/cidr: ipamLeftovers runs inside the CalicoPoolRemoval
 * dynamic provider, whose code Pulumi serializes by value, and lib/net/cidr's parse cache (a Map) cannot be serialized.
 */

export interface IpamObject {
  name: string;
  cidr: string;
  /** BlockAffinity node or IPAMBlock affinity ("host:node-1"). */
  node?: string;
}

export interface IpamLeftovers {
  blocks: IpamObject[];
  affinities: IpamObject[];
}

interface Range {
  v6: boolean;
  start: bigint;
  end: bigint;
}

function rangeOf(cidr: string): Range | undefined {
  const v6 = cidr.includes(":");
  if (v6 ? !Address6.isValid(cidr) : !Address4.isValid(cidr)) return undefined;
  const address = v6 ? new Address6(cidr) : new Address4(cidr);
  return { v6, start: address.startAddress().bigInt(), end: address.endAddress().bigInt() };
}

export function ipamLeftovers(poolCidr: string, blocks: readonly IpamObject[], affinities: readonly IpamObject[]): IpamLeftovers {
  const pool = rangeOf(poolCidr);
  if (!pool) throw new Error(`pool CIDR "${poolCidr}" is not a CIDR`);
  const inPool = (o: IpamObject): boolean => {
    const range = rangeOf(o.cidr);
    return range === undefined || (range.v6 === pool.v6 && range.start <= pool.end && pool.start <= range.end);
  };
  return { blocks: blocks.filter(inPool), affinities: affinities.filter(inPool) };
}
