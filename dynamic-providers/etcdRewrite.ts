import * as pulumi from "@pulumi/pulumi";
import { Etcd3 } from "etcd3";
import * as fs from "fs";
import * as path from "path";
import { etcdClientOptions } from "../lib/config/etcdClientOptions";
import { AddressChange } from "../lib/etcdRewrite/addressChange";
import { apiserversAnswering, untestedEtcdVersion } from "../lib/etcdRewrite/rewriteGuards";
import { RewriteTargets } from "../lib/etcdRewrite/rewritePlan";
import { runRewrite } from "../lib/etcdRewrite/rewriteRun";
import { DEFAULT_ETCD_PREFIX } from "../lib/etcdRewrite/rewriteTargets";
import { isCidr, isIpAddress } from "../lib/net/cidr";
import { containsUnknown, requiredStrings, sameAsRecorded, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The etcd rewrite (services.strategy: etcd-rewrite): every planned Service ClusterIP and Node podCIDR moved in
 * place in etcd while every apiserver is stopped, with the allocator's records (lib/etcdRewrite has the how and
 * the proofs). Reviewers see each move in `pulumi preview`: `services` and `nodes` list "old → new" per object.
 *
 * Before it writes, create refuses (fails closed) while any of `apiservers` still answers, and on an etcd version
 * the rewrite was not tested on. check and diff never touch etcd. The etcd TLS material is a secret input and
 * never an output. Deleting the resource changes nothing in the cluster: `cidr-migration restore` undoes a run from
 * the snapshot taken before it.
 */

export const ETCD_REWRITE_PROVIDER_VERSION = "1";

export interface EtcdRewriteArgs {
  endpoints: pulumi.Input<pulumi.Input<string>[]>;
  caCert?: pulumi.Input<string>;
  cert?: pulumi.Input<string>;
  key?: pulumi.Input<string>;
  /** Each apiserver's URL (https://<node>:6443); the rewrite starts only when none answers. */
  apiservers: pulumi.Input<pulumi.Input<string>[]>;
  serviceCidr: pulumi.Input<AddressChange>;
  podCidr?: pulumi.Input<AddressChange>;
  /** "namespace/name" → "old → new" ClusterIP. */
  services: pulumi.Input<Record<string, string>>;
  /** Node name → "old → new" podCIDR. */
  nodes: pulumi.Input<Record<string, string>>;
  /** Directory on the machine running `pulumi up` for the journal (the snapshot's). */
  journalDirectory: pulumi.Input<string>;
  /** The run id (snapshot.trigger): a new one is a new rewrite. */
  trigger: pulumi.Input<string>;
  prefix?: pulumi.Input<string>;
  version?: pulumi.Input<string>;
}

interface RewriteInputs {
  endpoints: string[];
  caCert?: string;
  cert?: string;
  key?: string;
  apiservers: string[];
  serviceCidr: AddressChange;
  podCidr?: AddressChange;
  services: Record<string, string>;
  nodes: Record<string, string>;
  journalDirectory: string;
  trigger: string;
  prefix: string;
  version: string;
}

interface RewriteOutputs extends Omit<RewriteInputs, "caCert" | "cert" | "key"> {
  etcdVersion: string;
  journalPath: string;
  written: number;
  alreadyMoved: number;
  readMillis: number;
  writeMillis: number;
}

const ARROW = " → ";

/** "a → b" as a move; undefined when it is not two values of the expected kind. */
function parseMove(text: unknown, valid: (v: string) => boolean): AddressChange | undefined {
  if (typeof text !== "string") return undefined;
  const [from, to, extra] = text.split(ARROW);
  return extra === undefined && from && to && valid(from) && valid(to) ? { from, to } : undefined;
}

function checkInputs(news: Wire<RewriteInputs>): pulumi.dynamic.CheckFailure[] {
  const failures = requiredStrings(news, ["journalDirectory", "trigger"]);
  if (containsUnknown(news)) return failures;
  const list = (key: "endpoints" | "apiservers") => {
    const value = news[key];
    if (!Array.isArray(value) || value.length === 0 || value.some((v) => typeof v !== "string" || !/^https?:\/\//.test(v))) {
      failures.push({ property: key, reason: `${key} must list at least one http(s):// URL` });
    }
  };
  list("endpoints");
  list("apiservers");
  const range = news.serviceCidr as AddressChange | undefined;
  if (!range || !isCidr(range.from) || !isCidr(range.to)) failures.push({ property: "serviceCidr", reason: "serviceCidr must be { from, to } CIDRs" });
  const moves = (key: "services" | "nodes", valid: (v: string) => boolean, what: string) => {
    for (const [name, text] of Object.entries((news[key] ?? {}) as Record<string, unknown>)) {
      if (!parseMove(text, valid)) failures.push({ property: key, reason: `${key}[${name}] must be "<old ${what}>${ARROW}<new ${what}>"; got ${JSON.stringify(text)}` });
    }
  };
  moves("services", isIpAddress, "IP");
  moves("nodes", isCidr, "CIDR");
  return failures;
}

function asInputs(news: Wire<RewriteInputs>): RewriteInputs {
  throwIfFailed(checkInputs(news));
  return {
    endpoints: news.endpoints as string[],
    caCert: news.caCert as string | undefined,
    cert: news.cert as string | undefined,
    key: news.key as string | undefined,
    apiservers: news.apiservers as string[],
    serviceCidr: news.serviceCidr as AddressChange,
    podCidr: news.podCidr as AddressChange | undefined,
    services: (news.services ?? {}) as Record<string, string>,
    nodes: (news.nodes ?? {}) as Record<string, string>,
    journalDirectory: news.journalDirectory as string,
    trigger: news.trigger as string,
    prefix: (news.prefix as string | undefined) ?? DEFAULT_ETCD_PREFIX,
    version: (news.version as string | undefined) ?? ETCD_REWRITE_PROVIDER_VERSION,
  };
}

function targetsOf(inputs: RewriteInputs): RewriteTargets {
  const moves = (record: Record<string, string>, valid: (v: string) => boolean) =>
    new Map(Object.entries(record).map(([name, text]) => [name, [parseMove(text, valid)!]]));
  return { prefix: inputs.prefix, serviceCidr: inputs.serviceCidr, podCidr: inputs.podCidr, services: moves(inputs.services, isIpAddress), nodes: moves(inputs.nodes, isCidr) };
}

async function rewrite(inputs: RewriteInputs): Promise<RewriteOutputs> {
  const answering = await apiserversAnswering(inputs.apiservers);
  if (answering.length > 0) {
    throw new Error(`kube-apiserver still answers at ${answering.join(", ")}; the etcd rewrite runs only while every apiserver is stopped (its manifest moved out of /etc/kubernetes/manifests). Nothing was written`);
  }
  const client = new Etcd3(etcdClientOptions(inputs.endpoints, inputs, { dialTimeout: 10_000 }));
  try {
    const etcdVersion = (await client.maintenance.status()).version;
    const untested = untestedEtcdVersion(etcdVersion);
    if (untested) throw new Error(`${untested}. Nothing was written`);
    fs.mkdirSync(inputs.journalDirectory, { recursive: true });
    const journalPath = path.resolve(inputs.journalDirectory, `etcd-rewrite-${inputs.trigger}.jsonl`);
    const report = await runRewrite(client, { targets: targetsOf(inputs), journalPath });
    const { caCert: _ca, cert: _cert, key: _key, ...recorded } = inputs;
    return { ...recorded, etcdVersion, journalPath, written: report.written, alreadyMoved: report.alreadyMoved, readMillis: Math.round(report.readSeconds * 1000), writeMillis: Math.round(report.writeSeconds * 1000) };
  } finally {
    client.close();
  }
}

export const etcdRewriteProvider: TypedProvider<RewriteInputs, RewriteOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    // Other moves or another run id is another rewrite (it converges: what is moved is not written again).
    const replaces = (["trigger", "serviceCidr", "podCidr", "services", "nodes", "prefix"] as const)
      .filter((k) => containsUnknown(news[k]) || !sameAsRecorded(news[k], olds[k]));
    if (replaces.length > 0) return { changes: true, replaces: [...replaces], deleteBeforeReplace: false };
    const recorded = (["endpoints", "apiservers", "journalDirectory", "version"] as const).some((k) => !sameAsRecorded(news[k], olds[k]));
    return { changes: recorded };
  },

  async create(news) {
    const outs = await rewrite(asInputs(news));
    return { id: `etcd-rewrite:${outs.trigger}`, outs };
  },

  async update(_id, olds, news) {
    const inputs = asInputs({ ...olds, ...news });
    return { outs: { ...olds, endpoints: inputs.endpoints, apiservers: inputs.apiservers, journalDirectory: inputs.journalDirectory, version: inputs.version } };
  },

  async delete(): Promise<void> {
    // The cluster keeps the rewritten objects; restore from the snapshot undoes a run.
  },
};

export class EtcdRewrite extends pulumi.dynamic.Resource {
  declare readonly written: pulumi.Output<number>;
  declare readonly alreadyMoved: pulumi.Output<number>;
  declare readonly journalPath: pulumi.Output<string>;
  declare readonly etcdVersion: pulumi.Output<string>;
  declare readonly writeMillis: pulumi.Output<number>;

  constructor(name: string, args: EtcdRewriteArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      etcdRewriteProvider,
      name,
      {
        ...args,
        caCert: secretIfGiven(args.caCert),
        cert: secretIfGiven(args.cert),
        key: secretIfGiven(args.key),
        prefix: args.prefix ?? DEFAULT_ETCD_PREFIX,
        version: args.version ?? ETCD_REWRITE_PROVIDER_VERSION,
        etcdVersion: undefined,
        journalPath: undefined,
        written: undefined,
        alreadyMoved: undefined,
        readMillis: undefined,
        writeMillis: undefined,
      },
      withSecretOutputs(opts, ["caCert", "cert", "key"]),
      "cidr-migration",
      "EtcdRewrite",
    );
  }
}

/** The provider's move maps ("old → new" per object) from the rewrite targets the plan gives. */
export function movesForPreview(targets: RewriteTargets): { services: Record<string, string>; nodes: Record<string, string> } {
  const text = (map: Map<string, AddressChange[]>) => Object.fromEntries([...map].map(([name, [c]]) => [name, `${c.from}${ARROW}${c.to}`]));
  return { services: text(targets.services), nodes: text(targets.nodes) };
}
