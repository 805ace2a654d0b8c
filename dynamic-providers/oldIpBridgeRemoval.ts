import * as pulumi from "@pulumi/pulumi";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { removeOldIpBridges } from "../lib/serviceMove/oldIpBridge";
import { kubeConfigFrom, requiredStrings, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The end of the old-ClusterIP bridge (config services.bridgeOldIps, lib/serviceMove/oldIpBridge.ts): once every
 * pod has been re-created, no client can hold an address from before the move, and each moved Service loses the
 * externalIP that kept its old ClusterIP answering. Runs again when the run's trigger changes (a re-run ends the
 * bridges an interrupted one left). check and diff never talk to the cluster; the kubeconfig is a secret input,
 * never an output. Deleting the resource does nothing.
 */

export const OLD_IP_BRIDGE_REMOVAL_VERSION = "1";

export interface OldIpBridgeRemovalArgs {
  kubeconfig: pulumi.Input<string>;
  /** the run's id: a new run ends any bridge again */
  trigger: pulumi.Input<string>;
  version?: pulumi.Input<string>;
}

interface RemovalInputs {
  kubeconfig: string;
  trigger: string;
  version: string;
}

interface RemovalOutputs extends Omit<RemovalInputs, "kubeconfig"> {
  /** "namespace/name old-ip" per Service whose bridge this run ended */
  removed: string[];
}

function asInputs(news: Wire<RemovalInputs>): RemovalInputs {
  throwIfFailed(requiredStrings(news, ["kubeconfig", "trigger"]));
  return { kubeconfig: news.kubeconfig as string, trigger: news.trigger as string, version: (news.version as string | undefined) ?? OLD_IP_BRIDGE_REMOVAL_VERSION };
}

async function removeBridges(inputs: RemovalInputs): Promise<RemovalOutputs> {
  const rest = await kubeRest(kubeConfigFrom(inputs.kubeconfig), { maxSockets: 4 });
  try {
    const { kubeconfig: _secret, ...recorded } = inputs;
    return { ...recorded, removed: await removeOldIpBridges(rest) };
  } finally {
    rest.close();
  }
}

export const oldIpBridgeRemovalProvider: TypedProvider<RemovalInputs, RemovalOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: requiredStrings(news, ["kubeconfig", "trigger"]) };
  },

  async diff(_id, olds, news) {
    return { changes: news.trigger !== olds.trigger || news.version !== olds.version };
  },

  async create(news) {
    const outs = await removeBridges(asInputs(news));
    return { id: `old-ip-bridges:${outs.trigger}`, outs };
  },

  async update(_id, _olds, news) {
    return { outs: await removeBridges(asInputs(news)) };
  },

  async delete(): Promise<void> {
    // nothing to undo: a bridge, once ended, is not brought back
  },
};

export class OldIpBridgeRemoval extends pulumi.dynamic.Resource {
  declare readonly removed: pulumi.Output<string[]>;

  constructor(name: string, args: OldIpBridgeRemovalArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      oldIpBridgeRemovalProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        trigger: args.trigger,
        version: args.version ?? OLD_IP_BRIDGE_REMOVAL_VERSION,
        removed: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "OldIpBridgeRemoval",
    );
  }
}
