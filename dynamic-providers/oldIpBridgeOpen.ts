import * as pulumi from "@pulumi/pulumi";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { BridgeTarget, openOldIpBridges } from "../lib/serviceMove/oldIpBridge";
import { parseServiceRefKey } from "../lib/serviceMove/serviceRef";
import { kubeConfigFrom, requiredStrings, sameAsRecorded, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The start of the old-ClusterIP bridge for services.strategy etcd-rewrite (lib/serviceMove/oldIpBridge.ts): before
 * the apiservers stop, each listed Service also gets its current ClusterIP as an externalIP, so pods that hold the
 * old address (resolv.conf, environment, caches) keep reaching it after the rewrite moves the ClusterIP, until they
 * restart. OldIpBridgeRemoval ends the bridges. Preview lists every Service bridged; check and diff never talk to
 * the cluster; the kubeconfig is a secret input, never an output. Deleting the resource does nothing.
 */

export const OLD_IP_BRIDGE_OPEN_VERSION = "1";

export interface OldIpBridgeOpenArgs {
  kubeconfig: pulumi.Input<string>;
  /** "namespace/name" → the ClusterIP it keeps answering at. */
  services: pulumi.Input<Record<string, string>>;
  /** the run's id: a new run opens the bridges again */
  trigger: pulumi.Input<string>;
  version?: pulumi.Input<string>;
}

interface OpenInputs {
  kubeconfig: string;
  services: Record<string, string>;
  trigger: string;
  version: string;
}

interface OpenOutputs extends Omit<OpenInputs, "kubeconfig"> {
  /** "namespace/name old-ip" per Service this run bridged */
  opened: string[];
}

function targetsOf(services: Record<string, string>): BridgeTarget[] {
  return Object.entries(services).map(([key, oldIp]) => ({ ...parseServiceRefKey(key)!, oldIp }));
}

function asInputs(news: Wire<OpenInputs>): OpenInputs {
  throwIfFailed(requiredStrings(news, ["kubeconfig", "trigger"]));
  const services = (news.services ?? {}) as Record<string, unknown>;
  const bad = Object.entries(services).filter(([key, ip]) => !parseServiceRefKey(key) || typeof ip !== "string");
  if (bad.length > 0) throwIfFailed([{ property: "services", reason: `services must map "namespace/name" to an IP; got ${bad.map(([k]) => k).join(", ")}` }]);
  return { kubeconfig: news.kubeconfig as string, services: services as Record<string, string>, trigger: news.trigger as string, version: (news.version as string | undefined) ?? OLD_IP_BRIDGE_OPEN_VERSION };
}

async function openBridges(inputs: OpenInputs): Promise<OpenOutputs> {
  const rest = await kubeRest(kubeConfigFrom(inputs.kubeconfig), { maxSockets: 4 });
  try {
    const { kubeconfig: _secret, ...recorded } = inputs;
    return { ...recorded, opened: await openOldIpBridges(rest, targetsOf(inputs.services)) };
  } finally {
    rest.close();
  }
}

export const oldIpBridgeOpenProvider: TypedProvider<OpenInputs, OpenOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: requiredStrings(news, ["kubeconfig", "trigger"]) };
  },

  async diff(_id, olds, news) {
    return { changes: news.trigger !== olds.trigger || news.version !== olds.version || !sameAsRecorded(news.services, olds.services) };
  },

  async create(news) {
    const outs = await openBridges(asInputs(news));
    return { id: `old-ip-bridges-open:${outs.trigger}`, outs };
  },

  async update(_id, _olds, news) {
    return { outs: await openBridges(asInputs(news)) };
  },

  async delete(): Promise<void> {
    // OldIpBridgeRemoval ends the bridges once every pod has restarted
  },
};

export class OldIpBridgeOpen extends pulumi.dynamic.Resource {
  declare readonly opened: pulumi.Output<string[]>;

  constructor(name: string, args: OldIpBridgeOpenArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      oldIpBridgeOpenProvider,
      name,
      {
        kubeconfig: pulumi.secret(args.kubeconfig),
        services: args.services,
        trigger: args.trigger,
        version: args.version ?? OLD_IP_BRIDGE_OPEN_VERSION,
        opened: undefined,
      },
      withSecretOutputs(opts, ["kubeconfig"]),
      "cidr-migration",
      "OldIpBridgeOpen",
    );
  }
}
