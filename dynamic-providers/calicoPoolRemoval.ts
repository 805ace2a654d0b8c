import * as pulumi from "@pulumi/pulumi";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { IpamObject, ipamLeftovers } from "../lib/nodeMove/calicoIpam";
import { isUnknown, kubeConfigFrom, requiredStrings, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * Deletes the old Calico IPPool, but only once the cluster proves nothing uses it: no IPAMBlock and no
 * BlockAffinity whose CIDR overlaps the pool's (Calico's own condition for a pool that is safe to delete; a block
 * left behind keeps routes and addresses of the old range alive). It fails closed:
 * - any leftover block or affinity → the create fails, naming how many and a few of them, and the pool stays;
 * - the pool is not disabled → fails (a pool that still hands out addresses could gain a block after the check);
 * - the pool's live cidr differs from `poolCidr` → fails (the name now means another pool);
 * - the API cannot be read → fails (never "nothing found, so delete").
 * A pool already gone counts as removed, so a re-run succeeds. Deleting this resource does nothing: the old pool is
 * not re-created. check and diff are read-only (they run in preview); the kubeconfig is a secret input, never an
 * output, and every client is built inside the method that uses it.
 */

export const CALICO_POOL_REMOVAL_PROVIDER_VERSION = "1";
const GROUP = "crd.projectcalico.org";
const VERSION = "v1";

export interface CalicoPoolRemovalArgs {
  /** Content of an admin kubeconfig for the cluster (stored as a secret). */
  kubeconfig: pulumi.Input<string>;
  /** The old pool's name, e.g. "default-ipv4-ippool". */
  poolName: pulumi.Input<string>;
  /** The old pool's CIDR, as discovery found it. */
  poolCidr: pulumi.Input<string>;
  /** Provider behaviour version (default CALICO_POOL_REMOVAL_PROVIDER_VERSION). */
  version?: pulumi.Input<string>;
}

export interface CalicoPoolRemovalOutputs {
  poolName: string;
  poolCidr: string;
  version: string;
  /** "deleted" or "already-absent". */
  result: string;
  /** How many IPAM blocks and block affinities the check looked at (all of them, cluster-wide). */
  checkedBlocks: number;
  checkedAffinities: number;
}

interface RemovalInputs {
  kubeconfig: string;
  poolName: string;
  poolCidr: string;
  version: string;
}

interface CalicoObject {
  metadata?: { name?: string };
  spec?: { cidr?: string; node?: string; affinity?: string; disabled?: boolean; state?: string };
}

function checkInputs(news: Wire<RemovalInputs>): pulumi.dynamic.CheckFailure[] {
  return requiredStrings(news, ["kubeconfig", "poolName", "poolCidr"]);
}

async function listAll(api: CustomObjectsApi, plural: string): Promise<CalicoObject[]> {
  const items: CalicoObject[] = [];
  let cont: string | undefined;
  do {
    const page = (await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural, limit: 500, _continue: cont })) as {
      items: CalicoObject[];
      metadata?: { _continue?: string };
    };
    items.push(...page.items);
    cont = page.metadata?._continue || undefined;
  } while (cont);
  return items;
}

/**
 * One line for a failed API call. Not lib/config/kubeClient's describeKubeError: this code is serialized by value into
 * the state, and that module keeps a Set, which closure serialization cannot carry.
 */
function kubeFailure(err: unknown, action: string, server: string | undefined): Error {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "number") {
    const body = (err as { body?: unknown }).body;
    let message = String((err as Error).message ?? err).split("\n")[0];
    if (typeof body === "string") {
      try {
        message = (JSON.parse(body) as { message?: string }).message ?? message;
      } catch {
        message = body.slice(0, 200);
      }
    }
    return new Error(`the cluster answered HTTP ${code} while ${action}: ${message}`);
  }
  const errno = typeof code === "string" ? code : (err as { cause?: { code?: string } }).cause?.code;
  return new Error(`cannot reach the cluster${server ? ` at ${server}` : ""} while ${action} (${errno ?? String((err as Error).message ?? err).split("\n")[0]}); nothing was deleted, check the kubeconfig and re-run`);
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown }).code === 404;
}

function listed(objects: IpamObject[]): string {
  const shown = objects.slice(0, 5).map((o) => `${o.name} (${o.cidr}${o.node ? ` on ${o.node}` : ""})`);
  return shown.join(", ") + (objects.length > shown.length ? `, and ${objects.length - shown.length} more` : "");
}

async function removePool(inputs: RemovalInputs): Promise<CalicoPoolRemovalOutputs> {
  const kc = kubeConfigFrom(inputs.kubeconfig);
  const server = kc.getCurrentCluster()?.server;
  const api = kc.makeApiClient(CustomObjectsApi);
  const what = `Calico IPPool ${inputs.poolName}`;
  const guard = <T>(action: string, p: Promise<T>): Promise<T> => p.catch((err) => {
    throw kubeFailure(err, action, server);
  });

  let pool: CalicoObject | undefined;
  try {
    pool = (await api.getClusterCustomObject({ group: GROUP, version: VERSION, plural: "ippools", name: inputs.poolName })) as CalicoObject;
  } catch (err) {
    if (!isNotFound(err)) throw kubeFailure(err, `reading ${what}`, server);
  }
  const [blocks, affinities] = await Promise.all([
    guard("listing Calico IPAM blocks", listAll(api, "ipamblocks")),
    guard("listing Calico block affinities", listAll(api, "blockaffinities")),
  ]);
  const base = { poolName: inputs.poolName, poolCidr: inputs.poolCidr, version: inputs.version, checkedBlocks: blocks.length, checkedAffinities: affinities.length };
  if (pool === undefined) return { ...base, result: "already-absent" };

  if (pool.spec?.cidr !== inputs.poolCidr) {
    throw new Error(`${what} has cidr ${pool.spec?.cidr ?? "(none)"}, not the planned ${inputs.poolCidr}; the name now means another pool, so it is not deleted; check the plan`);
  }
  if (pool.spec?.disabled !== true) {
    throw new Error(`${what} (${inputs.poolCidr}) is not disabled, so it could still hand out addresses; disable it first (the CalicoIPPool step does) and re-run`);
  }
  const toIpam = (o: CalicoObject): IpamObject => ({ name: o.metadata?.name ?? "(unnamed)", cidr: o.spec?.cidr ?? "", node: o.spec?.node ?? o.spec?.affinity });
  const left = ipamLeftovers(inputs.poolCidr, blocks.map(toIpam), affinities.map(toIpam));
  if (left.blocks.length > 0 || left.affinities.length > 0) {
    const parts = [
      left.blocks.length > 0 ? `${left.blocks.length} IPAM block(s): ${listed(left.blocks)}` : "",
      left.affinities.length > 0 ? `${left.affinities.length} block affinit${left.affinities.length === 1 ? "y" : "ies"}: ${listed(left.affinities)}` : "",
    ].filter((p) => p !== "");
    throw new Error(`${what} (${inputs.poolCidr}) is still in use: ${parts.join("; ")}; finish the node rollout (drained nodes release their blocks) and re-run, the pool was not deleted`);
  }
  try {
    await api.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: "ippools", name: inputs.poolName });
  } catch (err) {
    if (!isNotFound(err)) throw kubeFailure(err, `deleting ${what}`, server);
  }
  return { ...base, result: "deleted" };
}

function asInputs(news: Wire<RemovalInputs>): RemovalInputs {
  throwIfFailed(checkInputs(news));
  return {
    kubeconfig: news.kubeconfig as string,
    poolName: news.poolName as string,
    poolCidr: news.poolCidr as string,
    version: (news.version as string | undefined) ?? CALICO_POOL_REMOVAL_PROVIDER_VERSION,
  };
}

export const calicoPoolRemovalProvider: TypedProvider<RemovalInputs, CalicoPoolRemovalOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // A different pool is a different removal (replace); a new provider version or kubeconfig only records itself.
    const replaces = (["poolName", "poolCidr"] as const).filter((k) => isUnknown(news[k]) || news[k] !== olds[k]);
    if (replaces.length > 0) return { changes: true, replaces: [...replaces], deleteBeforeReplace: false };
    return { changes: news.version !== olds.version };
  },

  async create(news) {
    const outs = await removePool(asInputs(news));
    return { id: `${outs.poolName}@${outs.poolCidr}`, outs };
  },

  async update(_id, olds, news) {
    return { outs: { ...olds, version: typeof news.version === "string" ? news.version : olds.version } };
  },

  async delete(): Promise<void> {
    // The old pool stays deleted: removing this resource from the stack must not bring it back or touch the new one.
  },
};

export class CalicoPoolRemoval extends pulumi.dynamic.Resource {
  declare readonly result: pulumi.Output<string>;
  declare readonly checkedBlocks: pulumi.Output<number>;
  declare readonly checkedAffinities: pulumi.Output<number>;

  constructor(name: string, args: CalicoPoolRemovalArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      calicoPoolRemovalProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        poolName: args.poolName,
        poolCidr: args.poolCidr,
        version: args.version ?? CALICO_POOL_REMOVAL_PROVIDER_VERSION,
        result: undefined,
        checkedBlocks: undefined,
        checkedAffinities: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "CalicoPoolRemoval",
    );
  }
}
