import * as pulumi from "@pulumi/pulumi";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { closeDnsBudgets, dnsBudgetName, openDnsBudget } from "../lib/nodeMove/dnsDisruptionBudget";
import { kubeConfigFrom, requiredStrings, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The DNS pods' disruption budget around the node rollout (lib/nodeMove/dnsDisruptionBudget.ts has why), in two
 * resources: step "open" before the first drain adds it (unless the user's own budget covers the DNS pods), step
 * "close" after the last node removes every budget of ours. Both run again when the run's trigger changes.
 * Reviewers see the budget's name in `pulumi preview`. check and diff never talk to the cluster; the kubeconfig is
 * a secret input, never an output. Deleting either resource does nothing: close is what removes the budget.
 */

export const DNS_BUDGET_PROVIDER_VERSION = "1";

export type DnsBudgetStep = "open" | "close";

export interface DnsDisruptionBudgetArgs {
  kubeconfig: pulumi.Input<string>;
  step: DnsBudgetStep;
  /** the DNS Service (config dns.namespace and dns.name) */
  namespace: pulumi.Input<string>;
  name: pulumi.Input<string>;
  /** the run's id: a new run opens and closes again */
  trigger: pulumi.Input<string>;
  version?: pulumi.Input<string>;
}

interface BudgetInputs {
  kubeconfig: string;
  step: DnsBudgetStep;
  namespace: string;
  name: string;
  trigger: string;
  version: string;
}

interface BudgetOutputs extends Omit<BudgetInputs, "kubeconfig"> {
  /** "namespace/name" of the budget this step adds (open) or removes (close), known at preview */
  budget: string;
  /** what the step did */
  actions: string[];
}

function checkInputs(news: Wire<BudgetInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = requiredStrings(news, ["kubeconfig", "namespace", "name", "trigger"]);
  if (news.step !== "open" && news.step !== "close") failures.push({ property: "step", reason: `step must be "open" or "close"; got ${JSON.stringify(news.step)}` });
  return failures;
}

function asInputs(news: Wire<BudgetInputs>): BudgetInputs {
  throwIfFailed(checkInputs(news));
  return {
    kubeconfig: news.kubeconfig as string,
    step: news.step as DnsBudgetStep,
    namespace: news.namespace as string,
    name: news.name as string,
    trigger: news.trigger as string,
    version: (news.version as string | undefined) ?? DNS_BUDGET_PROVIDER_VERSION,
  };
}

function budgetOf(namespace: unknown, name: unknown): string {
  return typeof namespace === "string" && typeof name === "string" ? `${namespace}/${dnsBudgetName(name)}` : "";
}

async function applyStep(inputs: BudgetInputs): Promise<BudgetOutputs> {
  const rest = await kubeRest(kubeConfigFrom(inputs.kubeconfig), { maxSockets: 4 });
  try {
    const outcomes = inputs.step === "open" ? [await openDnsBudget(rest, { namespace: inputs.namespace, name: inputs.name })] : await closeDnsBudgets(rest);
    const { kubeconfig: _secret, ...recorded } = inputs;
    const actions = outcomes.map((o) => o.action);
    return { ...recorded, budget: budgetOf(inputs.namespace, inputs.name), actions: actions.length > 0 ? actions : ["no budget of ours was left"] };
  } finally {
    rest.close();
  }
}

export const dnsDisruptionBudgetProvider: TypedProvider<BudgetInputs, BudgetOutputs> = {
  async check(_olds, news) {
    return { inputs: { ...news, budget: budgetOf(news.namespace, news.name) }, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    const changed = (["step", "namespace", "name", "trigger", "version"] as const).filter((k) => news[k] !== olds[k]);
    return { changes: changed.length > 0 };
  },

  async create(news) {
    const outs = await applyStep(asInputs(news));
    return { id: `dns-disruption-budget:${outs.step}:${outs.trigger}`, outs };
  },

  async update(_id, _olds, news) {
    return { outs: await applyStep(asInputs(news)) };
  },

  async delete(): Promise<void> {
    // close removes the budget; removing these resources from the stack leaves the cluster as it is
  },
};

export class DnsDisruptionBudget extends pulumi.dynamic.Resource {
  declare readonly budget: pulumi.Output<string>;
  declare readonly actions: pulumi.Output<string[]>;

  constructor(name: string, args: DnsDisruptionBudgetArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      dnsDisruptionBudgetProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        step: args.step,
        namespace: args.namespace,
        name: args.name,
        trigger: args.trigger,
        version: args.version ?? DNS_BUDGET_PROVIDER_VERSION,
        budget: pulumi.all([args.namespace, args.name]).apply(([namespace, dnsName]) => budgetOf(namespace, dnsName)),
        actions: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "DnsDisruptionBudget",
    );
  }
}
