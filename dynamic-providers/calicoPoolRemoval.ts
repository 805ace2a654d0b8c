import * as pulumi from "@pulumi/pulumi";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { CALICO, CalicoObject, getOptional, isNotFound, kubeFailure, listAll, TIGERA } from "../lib/podNetwork/calicoApi";
import { IpamObject, ipamLeftovers } from "../lib/nodeMove/calicoIpam";
import { CLOSED_NODE_SELECTOR } from "../lib/podNetwork/calicoInstallation";
import { isUnknown, kubeConfigFrom, requiredStrings, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";
import { sleep } from "../lib/concurrency/sleep";

/**
 * Deletes the old Calico IPPool, but only once the cluster proves nothing uses it: no IPAMBlock and no
 * BlockAffinity whose CIDR overlaps the pool's (Calico's own condition for a pool that is safe to delete; a block
 * left behind keeps routes and addresses of the old range alive). It fails closed:
 * - any leftover block or affinity → the create fails, naming how many and a few of them, and the pool stays;
 * - the pool is not disabled → fails (a pool that still hands out addresses could gain a block after the check);
 * - the pool's live cidr differs from `poolCidr` → fails (the name now means another pool);
 * - the API cannot be read → fails (never "nothing found, so delete").
 * On the operator path (`installation` set) the pool counts as closed with nodeSelector "!all()" too, and it runs as
 * two resources around the Installation edit: step "check" proves the pool drained and deletes nothing; step
 * "delete" refuses while the Installation still lists the pool (the operator would re-create it), gives the operator
 * `timeoutSeconds` to delete it through the v3 API, and deletes it itself only if it is still there.
 * A pool already gone counts as removed, so a re-run succeeds. Deleting this resource does nothing: the old pool is
 * not re-created. check and diff are read-only (they run in preview); the kubeconfig is a secret input, never an
 * output, and every client is built inside the method that uses it.
 */

export const CALICO_POOL_REMOVAL_PROVIDER_VERSION = "1";
const DEFAULT_OPERATOR_DELETE_SECONDS = 60;

export type CalicoPoolRemovalStep = "check" | "delete";

export interface CalicoPoolRemovalArgs {
  /** Content of an admin kubeconfig for the cluster (stored as a secret). */
  kubeconfig: pulumi.Input<string>;
  /** The old pool's name, e.g. "default-ipv4-ippool". */
  poolName: pulumi.Input<string>;
  /** The old pool's CIDR, as discovery found it. */
  poolCidr: pulumi.Input<string>;
  /** The operator's Installation when it owns the pool (the operator path); unset on the manifest path. */
  installation?: pulumi.Input<string>;
  /** "check": prove the pool drained, delete nothing; "delete" (default): check, then delete. */
  step?: CalicoPoolRemovalStep;
  /** Operator path: seconds the operator gets to delete the unlisted pool before this deletes it. */
  timeoutSeconds?: pulumi.Input<number>;
  /** Provider behaviour version (default CALICO_POOL_REMOVAL_PROVIDER_VERSION). */
  version?: pulumi.Input<string>;
}

export interface CalicoPoolRemovalOutputs {
  poolName: string;
  poolCidr: string;
  installation: string;
  step: CalicoPoolRemovalStep;
  version: string;
  /** "drained" (step check), "deleted", "deleted-by-operator" or "already-absent". */
  result: string;
  /** How many IPAM blocks and block affinities the check looked at (all of them, cluster-wide). */
  checkedBlocks: number;
  checkedAffinities: number;
}

interface RemovalInputs {
  kubeconfig: string;
  poolName: string;
  poolCidr: string;
  /** "" on the manifest path */
  installation: string;
  step: CalicoPoolRemovalStep;
  timeoutSeconds: number;
  version: string;
}

function checkInputs(news: Wire<RemovalInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = requiredStrings(news, ["kubeconfig", "poolName", "poolCidr"]);
  if (news.step !== undefined && news.step !== "check" && news.step !== "delete") failures.push({ property: "step", reason: `step must be "check" or "delete"; got ${JSON.stringify(news.step)}` });
  if (news.installation !== undefined && typeof news.installation !== "string") failures.push({ property: "installation", reason: "installation must be the Installation's name" });
  if (news.timeoutSeconds !== undefined && !(typeof news.timeoutSeconds === "number" && news.timeoutSeconds >= 0)) failures.push({ property: "timeoutSeconds", reason: "timeoutSeconds must be a number of seconds, 0 or more" });
  return failures;
}

function listed(objects: IpamObject[]): string {
  const shown = objects.slice(0, 5).map((o) => `${o.name} (${o.cidr}${o.node ? ` on ${o.node}` : ""})`);
  return shown.join(", ") + (objects.length > shown.length ? `, and ${objects.length - shown.length} more` : "");
}

/** The pool takes no new blocks: disabled, or (on the operator path) a nodeSelector that matches no node. */
function isClosed(pool: CalicoObject, operatorManaged: boolean): boolean {
  return pool.spec?.disabled === true || (operatorManaged && pool.spec?.nodeSelector === CLOSED_NODE_SELECTOR);
}

async function removePool(inputs: RemovalInputs): Promise<CalicoPoolRemovalOutputs> {
  const kc = kubeConfigFrom(inputs.kubeconfig);
  const server = kc.getCurrentCluster()?.server;
  const api = kc.makeApiClient(CustomObjectsApi);
  const what = `Calico IPPool ${inputs.poolName}`;
  const guard = <T>(action: string, p: Promise<T>): Promise<T> => p.catch((err) => {
    throw kubeFailure(err, action, server);
  });
  const readPool = () => guard(`reading ${what}`, getOptional(api, CALICO, "ippools", inputs.poolName));
  const operatorManaged = inputs.installation !== "";

  let pool = await readPool();
  const [blocks, affinities] = await Promise.all([
    guard("listing Calico IPAM blocks", listAll(api, CALICO, "ipamblocks")),
    guard("listing Calico block affinities", listAll(api, CALICO, "blockaffinities")),
  ]);
  const base = { poolName: inputs.poolName, poolCidr: inputs.poolCidr, installation: inputs.installation, step: inputs.step, version: inputs.version, checkedBlocks: blocks.length, checkedAffinities: affinities.length };
  if (pool === undefined) return { ...base, result: "already-absent" };

  if (pool.spec?.cidr !== inputs.poolCidr) {
    throw new Error(`${what} has cidr ${pool.spec?.cidr ?? "(none)"}, not the planned ${inputs.poolCidr}; the name now means another pool, so it is not deleted; check the plan`);
  }
  if (!isClosed(pool, operatorManaged)) {
    throw new Error(operatorManaged
      ? `${what} (${inputs.poolCidr}) still matches nodes (nodeSelector ${JSON.stringify(pool.spec?.nodeSelector ?? "")}), so it could still hand out addresses; the step that sets "${CLOSED_NODE_SELECTOR}" in Installation ${inputs.installation} runs first, re-run`
      : `${what} (${inputs.poolCidr}) is not disabled, so it could still hand out addresses; disable it first (the CalicoIPPool step does) and re-run`);
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
  if (inputs.step === "check") return { ...base, result: "drained" };

  if (operatorManaged) {
    // The operator re-creates a pool its Installation lists, and deletes an unlisted one it owns through the v3 API.
    const installation = await guard(`reading Installation ${inputs.installation}`, getOptional(api, TIGERA, "installations", inputs.installation));
    const listedAgain = installation?.spec?.calicoNetwork?.ipPools?.find((p) => p.cidr !== undefined && p.cidr === inputs.poolCidr);
    if (listedAgain) {
      throw new Error(`${what} (${inputs.poolCidr}) is still listed in Installation ${inputs.installation} (as ${listedAgain.name ?? "an unnamed pool"}), so the operator would re-create it; nothing was deleted, the step that removes it from the Installation runs first, re-run`);
    }
    const deadline = Date.now() + inputs.timeoutSeconds * 1000;
    while (pool !== undefined && Date.now() < deadline) {
      await sleep(500);
      pool = await readPool();
    }
    if (pool === undefined) return { ...base, result: "deleted-by-operator" };
  }
  try {
    await api.deleteClusterCustomObject({ ...CALICO, plural: "ippools", name: inputs.poolName });
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
    installation: (news.installation as string | undefined) ?? "",
    step: (news.step as CalicoPoolRemovalStep | undefined) ?? "delete",
    timeoutSeconds: (news.timeoutSeconds as number | undefined) ?? DEFAULT_OPERATOR_DELETE_SECONDS,
    version: (news.version as string | undefined) ?? CALICO_POOL_REMOVAL_PROVIDER_VERSION,
  };
}

export const calicoPoolRemovalProvider: TypedProvider<RemovalInputs, CalicoPoolRemovalOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // A different pool is a different removal (replace); a new provider version or kubeconfig only records itself.
    // State written before the operator path has no installation or step: it was the manifest path's delete.
    const was = { ...olds, installation: olds.installation ?? "", step: olds.step ?? "delete" };
    const replaces = (["poolName", "poolCidr", "installation", "step"] as const).filter((k) => isUnknown(news[k]) || news[k] !== was[k]);
    if (replaces.length > 0) return { changes: true, replaces: [...replaces], deleteBeforeReplace: false };
    return { changes: news.version !== olds.version };
  },

  async create(news) {
    const outs = await removePool(asInputs(news));
    return { id: `${outs.poolName}@${outs.poolCidr}${outs.step === "check" ? "#check" : ""}`, outs };
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
        installation: args.installation ?? "",
        step: args.step ?? "delete",
        timeoutSeconds: args.timeoutSeconds ?? DEFAULT_OPERATOR_DELETE_SECONDS,
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
