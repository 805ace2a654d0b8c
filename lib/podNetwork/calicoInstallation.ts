/**
 * Calico pools declared by the Tigera operator: `Installation.spec.calicoNetwork.ipPools` (operator.tigera.io/v1).
 *
 * The operator's pool controller (tigera/operator pkg/controller/ippool/pool_controller.go, read at 40788b9b)
 * keys pools by normalized CIDR, puts a hand-edited pool it owns back, re-creates one deleted by hand, and deletes
 * an owned pool only once the Installation stops listing it, through the projectcalico.org/v3 API. So on such a
 * cluster the pools move through the Installation, in Calico's three operator steps (migrate-pools):
 * 1. `add`: the new pool, with the old one's settings, listed beside the old one;
 * 2. `close`: the old one's nodeSelector set to "!all()", so no node gets a new block from it;
 * 3. `remove`: the old one no longer listed, once no IPAM block is left in it.
 * ipPools is an atomic list for server-side apply, so each stage is the whole list.
 */
import { UserError } from "../config/errors";
import { cidrsOverlap, familyOf, normalizeCidr, parseCidr } from "../net/cidr";
import { CalicoOperatorInfo, CalicoPoolInfo, InstallationPool } from "../plan/inventory";
import { defaultNewPoolName } from "./calicoPool";

export const INSTALLATION_API_VERSION = "operator.tigera.io/v1";
export const INSTALLATION_KIND = "Installation";
/** The one Installation the operator reads. */
export const INSTALLATION_NAME = "default";
/** What matches no node: Calico's selector for "allocate from this pool nowhere". */
export const CLOSED_NODE_SELECTOR = "!all()";

export interface InstallationStages {
  add: InstallationPool[];
  close: InstallationPool[];
  remove: InstallationPool[];
}

const sameCidr = (a: string, b: string) => normalizeCidr(a) === normalizeCidr(b);

/** The Installation's entry for the pool holding the old range (never the new pool's), if it lists one. */
export function listedOldPool(pools: InstallationPool[] | undefined, oldRange: string, newCidr: string): InstallationPool | undefined {
  return pools?.find((p) => cidrsOverlap(p.cidr, oldRange) && !sameCidr(p.cidr, newCidr));
}

/** The new pool's entry: the old entry's settings (encapsulation, natOutgoing, blockSize, nodeSelector, ...) at the new CIDR. */
export function newInstallationPool(old: InstallationPool, newCidr: string, name = defaultNewPoolName(newCidr)): InstallationPool {
  if (old.nodeSelector === CLOSED_NODE_SELECTOR) {
    throw new UserError(`Installation ${INSTALLATION_NAME} lists pool ${old.name ?? old.cidr} with nodeSelector "${CLOSED_NODE_SELECTOR}" and no pool in ${newCidr}, so the node selector the new pool should copy is lost; set the old pool's nodeSelector back (usually "all()") and re-run`);
  }
  // disableNewAllocations is a state of the old pool, not a setting to copy.
  const { disableNewAllocations: _closed, ...settings } = old;
  return { ...settings, name, cidr: normalizeCidr(newCidr) };
}

/** One family's pool move: the old pod range and the new CIDR (a dual-stack run has one per family). */
export interface PoolRangeMove {
  from: string;
  to: string;
}

/**
 * The three ipPools lists, from the list as found (before the run or part-way through it): a re-run finds a new
 * entry already listed and keeps it as it is, and finds an old one closed and keeps it closed. A dual-stack run moves
 * both families' pools in each list (ipPools is one atomic list, so one patch per step carries both).
 */
export function installationStages(found: InstallationPool[], moves: readonly PoolRangeMove[]): InstallationStages {
  const olds: InstallationPool[] = [];
  let add = found;
  for (const { from, to } of moves) {
    const old = listedOldPool(found, from, to);
    if (!old) throw new UserError(`Installation ${INSTALLATION_NAME} lists no pool in the old pod range ${from}`);
    olds.push(old);
    if (!found.some((p) => sameCidr(p.cidr, to))) add = [...add, newInstallationPool(old, to)];
  }
  const close = add.map((p) => (olds.includes(p) ? { ...p, nodeSelector: CLOSED_NODE_SELECTOR } : p));
  const remove = add.filter((p) => !olds.includes(p));
  return { add, close, remove };
}

/** The name the new pool has, or will have once the operator creates it from the Installation. */
export function newPoolNameIn(operator: CalicoOperatorInfo, newCidr: string): string {
  return operator.ipPools?.find((p) => sameCidr(p.cidr, newCidr))?.name ?? defaultNewPoolName(newCidr);
}

/**
 * Why the Installation's pools cannot be moved safely, one line each (empty: they can). `livePools` are the
 * crd.projectcalico.org/v1 IPPools as discovered; `moves` one per family the run moves; `addedFamily` the family a
 * run adds (its pool, listed already in its new range, is left as it is).
 */
export function installationRefusals(operator: CalicoOperatorInfo, livePools: CalicoPoolInfo[], moves: readonly PoolRangeMove[], addedFamily?: string): string[] {
  const pools = operator.ipPools ?? [];
  const problems: string[] = [];
  const where = `Installation ${INSTALLATION_NAME}`;
  const families = [...moves.map((m) => familyOf(m.from)), ...(addedFamily ? [addedFamily] : [])];
  for (const p of pools.filter((pool) => !families.includes(familyOf(pool.cidr)))) {
    problems.push(`${where} lists the ${familyOf(p.cidr)} pool ${p.name ?? "(unnamed)"} ${p.cidr}, and this run moves only the ${families.join(" and ")} pod range; a dual-stack pod network needs both families in podCidr (a pair), so that both move together`);
  }
  for (const { from: oldRange, to: newCidr } of moves) {
    const inOld = pools.filter((p) => cidrsOverlap(p.cidr, oldRange) && !sameCidr(p.cidr, newCidr));
    if (inOld.length > 1) {
      problems.push(`${where} lists ${inOld.length} pools in the old pod range ${oldRange} (${inOld.map((p) => `${p.name ?? "(unnamed)"} ${p.cidr}`).join(", ")}); the run moves one pool per family, so merge them or move the others by hand first`);
    }
    for (const live of livePools.filter((p) => cidrsOverlap(p.cidr, oldRange))) {
      const listed = pools.find((p) => sameCidr(p.cidr, live.cidr));
      if (!listed) {
        problems.push(`IPPool ${live.name} (${live.cidr}) is in the old pod range but ${where} does not list it, so the old range is held both by the operator and outside it; add it to the Installation or delete it, then re-run`);
      } else if (listed.blockSize !== undefined && live.blockSize !== undefined && listed.blockSize !== live.blockSize) {
        problems.push(`${where} gives pool ${listed.name ?? listed.cidr} blockSize ${listed.blockSize} but IPPool ${live.name} has ${live.blockSize}: Calico cannot change a pool's blockSize, so the operator cannot apply it; set it back to ${live.blockSize} in the Installation`);
      }
    }
    const old = inOld[0];
    if (old?.blockSize !== undefined) {
      const prefix = parseCidr(newCidr).prefix;
      if (prefix > old.blockSize) problems.push(`the new pod range ${newCidr} is smaller than one Calico block (/${old.blockSize}, pool ${old.name ?? old.cidr} in ${where}); choose a range of /${old.blockSize} or larger`);
    }
  }
  if (operator.apiServerState !== "Ready" && !operator.v3Served) {
    problems.push(`the Tigera operator changes pools only through the Calico API server (projectcalico.org/v3), and APIServer default ${operator.apiServerState === undefined ? "is absent" : operator.apiServerState === "" ? "has no status yet" : `is "${operator.apiServerState}", not Ready`}; install or fix it (kubectl get tigerastatus apiserver) before the run`);
  }
  return problems;
}
