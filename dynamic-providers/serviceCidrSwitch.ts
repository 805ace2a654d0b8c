import * as pulumi from "@pulumi/pulumi";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { closeServiceCidrs, openServiceCidrs, planServiceCidrSwitch, SERVICE_CIDR_SWITCH_TIMEOUT_MS, ServiceCidrSwitchPlan } from "../lib/serviceMove/serviceCidrs";
import { isUnknown, kubeConfigFrom, requiredStrings, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The default Service range on the ServiceCIDR API (1.33+), in two resources around the Service moves
 * (lib/serviceMove/serviceCidrs.ts has the procedure):
 * - step "open", before the first move: the temporary ServiceCIDR for the new range is created and the default
 *   `kubernetes` one is deleted (Terminating while addresses remain);
 * - step "close", after the last Service left the old range (the DNS swap): the apiserver's new default replaces
 *   the old one, and the temporary ServiceCIDR is deleted.
 * Reviewers see both objects in `pulumi preview`: `creates` and `deletes` list each ServiceCIDR with its ranges.
 * check and diff never talk to the cluster; every client is built inside the method; the kubeconfig is a secret
 * input, never an output. Deleting the resource does nothing: the cluster keeps its new default.
 */

export const SERVICE_CIDR_SWITCH_PROVIDER_VERSION = "1";
const DEFAULT_SWITCH_TIMEOUT_SECONDS = SERVICE_CIDR_SWITCH_TIMEOUT_MS / 1000;

export type ServiceCidrSwitchStep = "open" | "close";

export interface ServiceCidrSwitchArgs {
  kubeconfig: pulumi.Input<string>;
  step: ServiceCidrSwitchStep;
  /** old and new Service range */
  from: pulumi.Input<string>;
  to: pulumi.Input<string>;
  /** seconds to wait for a ServiceCIDR to become Ready or to go (default DEFAULT_SWITCH_TIMEOUT_SECONDS) */
  timeoutSeconds?: pulumi.Input<number>;
  version?: pulumi.Input<string>;
}

interface SwitchInputs {
  kubeconfig: string;
  step: ServiceCidrSwitchStep;
  from: string;
  to: string;
  timeoutSeconds: number;
  version: string;
}

/** What state records: the inputs but the kubeconfig, the objects for the preview, and what the step did. */
interface SwitchOutputs extends Omit<SwitchInputs, "kubeconfig"> {
  creates: string[];
  deletes: string[];
  actions: string[];
}

/** "ServiceCIDR name [cidrs]" entries that this step creates and deletes, for the preview. */
function objectsOf(step: ServiceCidrSwitchStep, plan: ServiceCidrSwitchPlan): { creates: string[]; deletes: string[] } {
  const temporary = `ServiceCIDR ${plan.temporary.name} [${plan.temporary.cidrs.join(", ")}]`;
  return step === "open"
    ? { creates: [temporary], deletes: [`ServiceCIDR ${plan.default.name} [${plan.default.from.join(", ")}] (the apiserver re-creates it as [${plan.default.to.join(", ")}])`] }
    : { creates: [`ServiceCIDR ${plan.default.name} [${plan.default.to.join(", ")}] (by the apiserver)`], deletes: [temporary] };
}

function checkInputs(news: Wire<SwitchInputs>): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  if (news.step !== "open" && news.step !== "close") failures.push({ property: "step", reason: `step must be "open" or "close"; got ${JSON.stringify(news.step)}` });
  failures.push(...requiredStrings(news, ["kubeconfig", "from", "to"]));
  if (failures.length === 0 && !isUnknown(news.from) && !isUnknown(news.to)) {
    try {
      planServiceCidrSwitch(news.from as string, news.to as string);
    } catch (err) {
      failures.push({ property: "to", reason: `cidr-migration:serviceCidr: ${(err as Error).message}` });
    }
  }
  return failures;
}

function asInputs(news: Wire<SwitchInputs>): SwitchInputs {
  throwIfFailed(checkInputs(news));
  return {
    kubeconfig: news.kubeconfig as string,
    step: news.step as ServiceCidrSwitchStep,
    from: news.from as string,
    to: news.to as string,
    timeoutSeconds: typeof news.timeoutSeconds === "number" ? news.timeoutSeconds : DEFAULT_SWITCH_TIMEOUT_SECONDS,
    version: (news.version as string | undefined) ?? SERVICE_CIDR_SWITCH_PROVIDER_VERSION,
  };
}

async function applySwitchStep(inputs: SwitchInputs): Promise<SwitchOutputs> {
  const kc = kubeConfigFrom(inputs.kubeconfig);
  const rest = await kubeRest(kc, { maxSockets: 4 });
  const plan = planServiceCidrSwitch(inputs.from, inputs.to);
  try {
    const timeoutMs = inputs.timeoutSeconds * 1000;
    const report = inputs.step === "open" ? await openServiceCidrs(rest, plan, timeoutMs) : await closeServiceCidrs(rest, plan, timeoutMs);
    const { kubeconfig: _secret, ...recorded } = inputs;
    return { ...recorded, ...objectsOf(inputs.step, plan), actions: report.actions };
  } finally {
    rest.close();
  }
}

export const serviceCidrSwitchProvider: TypedProvider<SwitchInputs, SwitchOutputs> = {
  async check(_olds, news) {
    const inputs = { ...news };
    if (!isUnknown(news.from) && !isUnknown(news.to) && typeof news.from === "string" && typeof news.to === "string" && (news.step === "open" || news.step === "close")) {
      try {
        Object.assign(inputs, objectsOf(news.step, planServiceCidrSwitch(news.from, news.to)));
      } catch {
        // reported by checkInputs
      }
    }
    return { inputs, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // Another range or step is another switch; the kubeconfig or a timeout only records itself.
    const replaces = (["step", "from", "to"] as const).filter((k) => isUnknown(news[k]) || news[k] !== olds[k]);
    if (replaces.length > 0) return { changes: true, replaces: [...replaces], deleteBeforeReplace: false };
    return { changes: news.version !== olds.version || news.timeoutSeconds !== olds.timeoutSeconds };
  },

  async create(news) {
    const outs = await applySwitchStep(asInputs(news));
    return { id: `${outs.step}:${outs.from}->${outs.to}`, outs };
  },

  async update(_id, olds, news) {
    const { version, timeoutSeconds } = asInputs({ ...olds, ...news });
    return { outs: { ...olds, version, timeoutSeconds } };
  },

  async delete(): Promise<void> {
    // The new default stays: removing this resource from the stack must not bring the old range back.
  },
};

export class ServiceCidrSwitch extends pulumi.dynamic.Resource {
  declare readonly creates: pulumi.Output<string[]>;
  declare readonly deletes: pulumi.Output<string[]>;
  declare readonly actions: pulumi.Output<string[]>;

  constructor(name: string, args: ServiceCidrSwitchArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      serviceCidrSwitchProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        step: args.step,
        from: args.from,
        to: args.to,
        timeoutSeconds: args.timeoutSeconds ?? DEFAULT_SWITCH_TIMEOUT_SECONDS,
        version: args.version ?? SERVICE_CIDR_SWITCH_PROVIDER_VERSION,
        creates: undefined,
        deletes: undefined,
        actions: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "ServiceCidrSwitch",
    );
  }
}
