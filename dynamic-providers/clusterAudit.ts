import * as pulumi from "@pulumi/pulumi";
import { FindingReport, summarize } from "../lib/report/findings";
import { loadKubeConfig } from "../lib/config/kubeClient";
import { MigrationConfig } from "../lib/config/migrationConfig";
import { Plan } from "../lib/plan/planModel";
import { runPreflight } from "../lib/preflight";
import { Sensitive } from "../lib/config/sensitive";
import { runVerify } from "../lib/verify";
import { kubeRest } from "../lib/serviceMove/kubeRest";
import { readServiceWatchCount } from "../lib/serviceMove/serviceWatchers";
import { requiredStrings, secretIfGiven, throwIfFailed, TypedProvider, Wire, withSecretOutputs } from "./wire";

/**
 * The graph's first and last phases: the read-only preflight audit and the post-migration verification, run when
 * `pulumi up` creates the resource. Both fail closed, so a step that cannot prove success stops the graph:
 * - preflight fails on any blocker; every other phase depends on it, so nothing changes;
 * - verify fails on any finding (something left in the old ranges, a Service not at its planned IP).
 *
 * Each runs once per migration run (trigger = snapshot.trigger): a re-run after a partial migration must not be
 * stopped by findings the migration itself causes (Services already moved, nodes half rolled). Preview never runs
 * them; `cidr-migration preflight` is the preview-time check, and the CI gate reads its JSON.
 */

export const CLUSTER_AUDIT_VERSION = "1";

export type AuditKind = "preflight" | "verify";

export interface ClusterAuditArgs {
  /** The admin kubeconfig's content (secret). */
  kubeconfig: pulumi.Input<string>;
  /** The validated config; its Sensitive fields serialize as "[secret]", which is all the audits need of them. */
  config: MigrationConfig;
  /** verify: the reviewed plan, for each Service's planned address. */
  plan?: Plan;
  /** preflight: etcd TLS material for the health check (secrets). */
  etcdCaCert?: pulumi.Input<string>;
  etcdCert?: pulumi.Input<string>;
  etcdKey?: pulumi.Input<string>;
  /** A new value runs the audit again (config snapshot.trigger). */
  trigger: pulumi.Input<string>;
  version?: pulumi.Input<string>;
}

interface AuditInputs {
  kind: AuditKind;
  kubeconfig: string;
  configJson: string;
  planJson?: string;
  etcdCaCert?: string;
  etcdCert?: string;
  etcdKey?: string;
  trigger: string;
  version: string;
}

export interface ClusterAuditOutputs {
  kind: AuditKind;
  trigger: string;
  version: string;
  blockers: number;
  warnings: number;
  infos: number;
  /** The report as `cidr-migration preflight|verify --json` prints it. */
  reportJson: string;
  /** preflight: the apiserver's open Service watches before anything changed (lib/serviceMove/serviceWatchers.ts) */
  serviceWatchers?: number;
}

/** Why an audit stops the graph, one line per finding that counts; undefined when it passes. */
export function auditFailure(kind: AuditKind, report: FindingReport): string | undefined {
  const counting = report.findings.filter((f) => f.severity === "blocker" || (kind === "verify" && f.severity === "warning"));
  if (counting.length === 0) return undefined;
  const lines = counting.map((f) => `  ${f.code} ${f.object}${f.path ? ` ${f.path}` : ""}: ${f.message} — ${f.action}`);
  const what = kind === "preflight" ? `preflight found ${counting.length} blocker(s); nothing was changed` : `verify found ${counting.length} problem(s) left after the migration`;
  return `${what}:\n${lines.join("\n")}`;
}

async function audit(inputs: AuditInputs): Promise<ClusterAuditOutputs> {
  const config = JSON.parse(inputs.configJson) as MigrationConfig;
  const kubeConfig = loadKubeConfig({ content: new Sensitive(inputs.kubeconfig) }, "kubeconfig");
  let report: FindingReport;
  let serviceWatchers: number | undefined;
  if (inputs.kind === "preflight") {
    const credentials =
      inputs.etcdCaCert || inputs.etcdCert
        ? {
            ca: inputs.etcdCaCert ? Buffer.from(inputs.etcdCaCert) : undefined,
            cert: inputs.etcdCert ? Buffer.from(inputs.etcdCert) : undefined,
            key: inputs.etcdKey ? Buffer.from(inputs.etcdKey) : undefined,
          }
        : undefined;
    report = (await runPreflight({ config, kubeConfig, etcd: { credentials } })).report;
    const rest = await kubeRest(kubeConfig, { maxSockets: 1 });
    try {
      serviceWatchers = await readServiceWatchCount(rest);
    } finally {
      rest.close();
    }
  } else {
    const plan = inputs.planJson ? (JSON.parse(inputs.planJson) as Plan) : undefined;
    report = await runVerify({ config, kubeConfig, reviewedPlan: plan ? { plan, source: "the reviewed plan" } : undefined });
  }
  const failure = auditFailure(inputs.kind, report);
  if (failure) throw new Error(failure);
  const counts = summarize(report.findings);
  return {
    kind: inputs.kind,
    trigger: inputs.trigger,
    version: inputs.version,
    blockers: counts.blocker,
    warnings: counts.warning,
    infos: counts.info,
    reportJson: JSON.stringify(report),
    ...(serviceWatchers === undefined ? {} : { serviceWatchers }),
  };
}

function checkInputs(news: Wire<AuditInputs>): pulumi.dynamic.CheckFailure[] {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  // Unknown during preview is fine: only known wrong values fail.
  if (news.kind !== "preflight" && news.kind !== "verify") failures.push({ property: "kind", reason: `kind ${JSON.stringify(news.kind)} must be preflight or verify` });
  if (news.trigger === "") failures.push({ property: "trigger", reason: "trigger must not be empty (it is cidr-migration:snapshot.trigger)" });
  else failures.push(...requiredStrings(news, ["trigger"]));
  failures.push(...requiredStrings(news, ["kubeconfig", "configJson"]));
  return failures;
}

/** The inputs once check passes on them; the optional ones are strings or absent. */
function asInputs(news: Wire<AuditInputs>): AuditInputs {
  throwIfFailed(checkInputs(news));
  const optional = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  return {
    kind: news.kind as AuditKind,
    kubeconfig: news.kubeconfig as string,
    configJson: news.configJson as string,
    planJson: optional(news.planJson),
    etcdCaCert: optional(news.etcdCaCert),
    etcdCert: optional(news.etcdCert),
    etcdKey: optional(news.etcdKey),
    trigger: news.trigger as string,
    version: optional(news.version) ?? CLUSTER_AUDIT_VERSION,
  };
}

export const clusterAuditProvider: TypedProvider<AuditInputs, ClusterAuditOutputs> = {
  async check(_olds, news) {
    return { inputs: news, failures: checkInputs(news) };
  },

  async diff(_id, olds, news) {
    const replaces = (["kind", "trigger"] as const).filter((k) => news[k] !== olds[k]);
    return { changes: replaces.length > 0, replaces: [...replaces], deleteBeforeReplace: true };
  },

  async create(news) {
    const outs = await audit(asInputs(news));
    return { id: `${outs.kind}-${outs.trigger}`, outs };
  },
};

const SECRET_INPUTS = ["kubeconfig", "etcdCaCert", "etcdCert", "etcdKey"];

abstract class ClusterAudit extends pulumi.dynamic.Resource {
  declare readonly blockers: pulumi.Output<number>;
  declare readonly serviceWatchers: pulumi.Output<number | undefined>;
  declare readonly warnings: pulumi.Output<number>;
  declare readonly reportJson: pulumi.Output<string>;

  protected constructor(kind: AuditKind, type: string, name: string, args: ClusterAuditArgs, opts?: pulumi.CustomResourceOptions) {
    super(
      clusterAuditProvider,
      name,
      {
        kind,
        kubeconfig: pulumi.secret(args.kubeconfig),
        configJson: JSON.stringify(args.config),
        planJson: args.plan ? JSON.stringify(args.plan) : undefined,
        etcdCaCert: secretIfGiven(args.etcdCaCert),
        etcdCert: secretIfGiven(args.etcdCert),
        etcdKey: secretIfGiven(args.etcdKey),
        trigger: args.trigger,
        version: args.version ?? CLUSTER_AUDIT_VERSION,
        blockers: undefined,
        warnings: undefined,
        infos: undefined,
        reportJson: undefined,
        serviceWatchers: undefined,
      },
      withSecretOutputs(opts, SECRET_INPUTS),
      "cidr-migration",
      type,
    );
  }
}

/** Phase 1: blockers stop `pulumi up` before anything changes. */
export class PreflightGate extends ClusterAudit {
  constructor(name: string, args: ClusterAuditArgs, opts?: pulumi.CustomResourceOptions) {
    super("preflight", "PreflightGate", name, args, opts);
  }
}

/** The last phase: nothing left in the old ranges, every Service at its planned IP. */
export class Verification extends ClusterAudit {
  constructor(name: string, args: ClusterAuditArgs, opts?: pulumi.CustomResourceOptions) {
    super("verify", "Verification", name, args, opts);
  }
}
