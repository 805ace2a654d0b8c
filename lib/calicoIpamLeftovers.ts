/**
 * Which Calico IPAM blocks and block affinities still lie in a pool's CIDR: the old pool may only be deleted when
 * there are none (a block left behind keeps addresses and routes of the old range alive).
 *
 * API: `ipamLeftovers(poolCidr, blocks, affinities)` → `{ blocks, affinities }`, the objects whose CIDR overlaps
 * the pool. A CIDR that cannot be read counts as overlapping (fail closed).
 * The range math uses ip-address directly instead of lib/net/cidr: this module runs inside the CalicoPoolRemoval
 * dynamic provider, whose code Pulumi serializes by value, and lib/net/cidr's parse cache (a Map) cannot be serialized.
 */
import { Address4, Address6 } from "ip-address";

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
