import * as pulumi from "@pulumi/pulumi";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { ExpectedPool, LivePool, poolsPending, TigeraStatusObject, tigeraStatusProblems } from "../lib/podNetwork/tigeraStatus";
import { CALICO, kubeFailure, listAll, TIGERA } from "../lib/podNetwork/calicoApi";
import { isUnknown, kubeConfigFrom, requiredStrings, sameAsRecorded, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";
import { sleep } from "../lib/concurrency/sleep";

/**
 * Waits until the Tigera operator has carried out an Installation edit: the crd.projectcalico.org/v1 IPPools are
 * what the Installation now lists (`expect`: present, with a nodeSelector where one is given; `gone`: absent),
 * and its TigeraStatus objects are Available and not Degraded (lib/podNetwork/tigeraStatus.ts). Fails after
 * `timeoutSeconds`, naming what is still missing and what the operator reports, so a stopped or degraded operator
 * stops the run at the step it could not finish. Changes nothing; deleting it does nothing. check and diff never
 * talk to the cluster; the kubeconfig is a secret input, never an output.
 */

export const CALICO_OPERATOR_RECONCILED_PROVIDER_VERSION = "1";
const DEFAULT_TIMEOUT_SECONDS = 120;

export interface CalicoOperatorReconciledArgs {
  kubeconfig: pulumi.Input<string>;
  /** What the wait is for, as the error says it, e.g. "the new pool 10.48.0.0/16 listed in Installation default". */
  purpose: string;
  expect: ExpectedPool[];
  gone?: string[];
  timeoutSeconds?: pulumi.Input<number>;
  version?: pulumi.Input<string>;
}

interface ReconciledInputs {
  kubeconfig: string;
  purpose: string;
  expect: ExpectedPool[];
  gone: string[];
  timeoutSeconds: number;
  version: string;
}

interface ReconciledOutputs extends Omit<ReconciledInputs, "kubeconfig"> {
  /** Seconds the operator took, as measured here. */
  waitedSeconds: number;
}

function checkInputs(news: Wire<ReconciledInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = requiredStrings(news, ["kubeconfig", "purpose"]);
  const isPoolList = (v: unknown) => Array.isArray(v) && v.every((p) => typeof p === "object" && p !== null && typeof (p as ExpectedPool).cidr === "string");
  if (!isUnknown(news.expect) && !isPoolList(news.expect)) failures.push({ property: "expect", reason: "expect must be a list of {cidr, nodeSelector?}" });
  if (news.gone !== undefined && !isUnknown(news.gone) && !(Array.isArray(news.gone) && news.gone.every((c) => typeof c === "string"))) failures.push({ property: "gone", reason: "gone must be a list of CIDRs" });
  if (news.timeoutSeconds !== undefined && !(typeof news.timeoutSeconds === "number" && news.timeoutSeconds > 0)) failures.push({ property: "timeoutSeconds", reason: "timeoutSeconds must be a positive number of seconds" });
  return failures;
}

function asInputs(news: Wire<ReconciledInputs>): ReconciledInputs {
  throwIfFailed(checkInputs(news));
  return {
    kubeconfig: news.kubeconfig as string,
    purpose: news.purpose as string,
    expect: news.expect as ExpectedPool[],
    gone: (news.gone as string[] | undefined) ?? [],
    timeoutSeconds: (news.timeoutSeconds as number | undefined) ?? DEFAULT_TIMEOUT_SECONDS,
    version: (news.version as string | undefined) ?? CALICO_OPERATOR_RECONCILED_PROVIDER_VERSION,
  };
}

async function waitReconciled(inputs: ReconciledInputs): Promise<ReconciledOutputs> {
  const kc = kubeConfigFrom(inputs.kubeconfig);
  const server = kc.getCurrentCluster()?.server;
  const api = kc.makeApiClient(CustomObjectsApi);
  const started = Date.now();
  const deadline = started + inputs.timeoutSeconds * 1000;
  for (;;) {
    const [pools, statuses] = await Promise.all([
      listAll(api, CALICO, "ippools").catch((err) => { throw kubeFailure(err, "listing Calico IPPools", server); }),
      listAll(api, TIGERA, "tigerastatuses").catch((err) => { throw kubeFailure(err, "listing TigeraStatus objects", server); }),
    ]);
    const live: LivePool[] = pools.map((p) => ({ name: p.metadata?.name ?? "(unnamed)", cidr: p.spec?.cidr ?? "", nodeSelector: p.spec?.nodeSelector }));
    const pending = [...poolsPending(live.filter((p) => p.cidr !== ""), inputs.expect, inputs.gone), ...tigeraStatusProblems(statuses as TigeraStatusObject[])];
    const { kubeconfig: _secret, ...recorded } = inputs;
    if (pending.length === 0) return { ...recorded, waitedSeconds: Math.round((Date.now() - started) / 100) / 10 };
    if (Date.now() >= deadline) {
      throw new Error(`the Tigera operator has not carried out ${inputs.purpose} after ${inputs.timeoutSeconds} s: ${pending.join("; ")}; check it with kubectl get tigerastatus and its log (kubectl logs -n tigera-operator deploy/tigera-operator), then re-run`);
    }
    await sleep(1000);
  }
}

export const calicoOperatorReconciledProvider: TypedProvider<ReconciledInputs, ReconciledOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // Other expectations are another wait (replace, so it runs again); a timeout or version only records itself.
    const same = sameAsRecorded([news.expect, news.gone ?? []], [olds.expect, olds.gone ?? []]) && !isUnknown(news.expect);
    if (!same) return { changes: true, replaces: ["expect"], deleteBeforeReplace: true };
    return { changes: news.version !== olds.version || news.timeoutSeconds !== olds.timeoutSeconds || news.purpose !== olds.purpose };
  },

  async create(news) {
    const outs = await waitReconciled(asInputs(news));
    return { id: `operator-reconciled-${outs.expect.map((p) => p.cidr).join(",")}`, outs };
  },

  async update(_id, olds, news) {
    const inputs = asInputs(news);
    return { outs: { ...olds, purpose: inputs.purpose, timeoutSeconds: inputs.timeoutSeconds, version: inputs.version } };
  },

  async delete(): Promise<void> {
    // A wait changes nothing, so there is nothing to undo.
  },
};

export class CalicoOperatorReconciled extends pulumi.dynamic.Resource {
  declare readonly waitedSeconds: pulumi.Output<number>;

  constructor(name: string, args: CalicoOperatorReconciledArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      calicoOperatorReconciledProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        purpose: args.purpose,
        expect: args.expect,
        gone: args.gone ?? [],
        timeoutSeconds: args.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
        version: args.version ?? CALICO_OPERATOR_RECONCILED_PROVIDER_VERSION,
        waitedSeconds: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "CalicoOperatorReconciled",
    );
  }
}
