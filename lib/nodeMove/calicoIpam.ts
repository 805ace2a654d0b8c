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
