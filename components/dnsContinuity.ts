/**
 * DNS continuity across the Service CIDR move, after the published low-downtime trick: every pod resolves through
 * the DNS Service's IP, so that IP must answer at every moment of the migration, first the old one, then the new.
 *
 * 1. DnsTemporaryService (plan step dns/temporary-service, after the bulk Service moves): a stand-in Service at the
 *    final DNS IP in the new range, selecting the DNS pods on the DNS ports. The old DNS Service stays where it
 *    is, so both IPs answer. kubelet-config's clusterDNS then switches to `ip` (cluster-config phase), and each
 *    node's /var/lib/kubelet/config.yaml switches during its rollout; pods re-created there get the final IP.
 * 2. DnsFinalSwap (plan step dns/final-swap, after the node rollout, when no pod resolves through the old IP):
 *    the real DNS Service is journaled and deleted (old IP), then the stand-in is deleted and the real Service is
 *    created at the final IP back to back. `gapMillis` is the time the final IP had no Service: between the
 *    stand-in's delete being accepted and the create being accepted. The stand-in's EndpointSlices and Endpoints
 *    are copied to the new Service at once (lib/serviceMove/endpointBridge.ts), so lookups do not wait for the
 *    endpointslice controller (0.7 s idle, far longer when busy); the copies go once the controller's own slices
 *    exist. A crash anywhere in between is finished by a re-run from the journal (see lib/serviceMove/serviceMover.ts).
 *
 * Two components, not one: the node rollout sits between the halves, and the first half must exist before the
 * kubelet-config patch that the rollout depends on. Both halves are ServiceRecreation resources, so preview shows
 * the stand-in's IP and the swap's old IP → final IP, and neither touches the cluster during preview.
 */
import * as pulumi from "@pulumi/pulumi";
import { withParentDependsOn } from "./parentDependsOn";
import { isIP } from "net";
import { standInName } from "../lib/serviceMove/planMoves";
import { ServiceRecreation } from "../dynamic-providers/serviceRecreation";
import { serviceRefKey } from "../lib/serviceMove/serviceRef";

export interface DnsServiceRef {
  /** Namespace of the DNS Service (config cidr-migration:dns.namespace, usually kube-system). */
  namespace: string;
  /** Name of the DNS Service (config cidr-migration:dns.name, usually kube-dns). */
  name: string;
}

export interface DnsTemporaryServiceArgs {
  /** The kubeconfig's content; stored only as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** The real DNS Service whose selector and ports the stand-in copies. */
  dns: DnsServiceRef;
  /** The final DNS IP in the new range (Plan.dns.newClusterIP). */
  finalIP: pulumi.Input<string>;
  /** Name of the stand-in Service, in the DNS Service's namespace. Default `<dns.name>-cidr-migration-temp`. */
  standInName?: string;
  /** Namespace of the move journal. Default kube-system. */
  journalNamespace?: pulumi.Input<string>;
  /** Provider behaviour version recorded in the state. Default the provider's. */
  version?: pulumi.Input<string>;
}

export interface DnsFinalSwapArgs {
  /** The kubeconfig's content; stored only as a secret. */
  kubeconfig: pulumi.Input<string>;
  /** The real DNS Service. */
  dns: DnsServiceRef;
  /** The DNS Service's IP in the old range (Plan.dns.oldClusterIP). */
  fromIP: pulumi.Input<string>;
  /** The final DNS IP, the one the stand-in holds (Plan.dns.newClusterIP). */
  toIP: pulumi.Input<string>;
  /** The stand-in to remove just before the create: pass the DnsTemporaryService (its `standIn` is used). */
  temporary: DnsTemporaryService | DnsServiceRef;
  /** Namespace of the move journal. Default kube-system. */
  journalNamespace?: pulumi.Input<string>;
  /** Seconds the old DNS Service may linger (finalizers) after its delete. Default DEFAULT_DELETE_TIMEOUT_SECONDS. */
  deleteTimeoutSeconds?: pulumi.Input<number>;
  /** Provider behaviour version recorded in the state. Default the provider's. */
  version?: pulumi.Input<string>;
}

/** A DNS-1035 label: what a Service name must be. */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const NAMESPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

function checkDns(dns: DnsServiceRef | undefined, parent: pulumi.Resource): DnsServiceRef {
  if (!dns || typeof dns.namespace !== "string" || !NAMESPACE_NAME.test(dns.namespace)) {
    throw new pulumi.ResourceError(`dns.namespace must be a namespace name (cidr-migration:dns.namespace); got ${JSON.stringify(dns?.namespace)}`, parent);
  }
  if (typeof dns.name !== "string" || !SERVICE_NAME.test(dns.name)) {
    throw new pulumi.ResourceError(`dns.name must be a Service name (cidr-migration:dns.name); got ${JSON.stringify(dns.name)}`, parent);
  }
  return dns;
}

/** Inputs known now are checked now; Outputs are checked by the provider's check during preview. */
function checkIp(value: pulumi.Input<string> | undefined, what: string, parent: pulumi.Resource): void {
  if (value === undefined) throw new pulumi.ResourceError(`${what} is missing; pass it from the Plan's dns entry`, parent);
  if (typeof value === "string" && isIP(value) === 0) throw new pulumi.ResourceError(`${what} must be an IP address; got ${JSON.stringify(value)}`, parent);
}

export class DnsTemporaryService extends pulumi.ComponentResource {
  /** The stand-in Service, in the DNS Service's namespace. */
  readonly standIn: DnsServiceRef;
  /** The IP the stand-in holds: what kubelet-config's clusterDNS switches to. */
  readonly ip: pulumi.Output<string>;
  readonly resource: ServiceRecreation;

  constructor(name: string, args: DnsTemporaryServiceArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:dns:DnsTemporaryService", name, {}, opts);
    const dns = checkDns(args.dns, this);
    checkIp(args.finalIP, "finalIP", this);
    const standIn = { namespace: dns.namespace, name: args.standInName ?? standInName(dns.name) };
    if (!SERVICE_NAME.test(standIn.name)) {
      throw new pulumi.ResourceError(`standInName must be a Service name (lowercase letters, digits, '-', at most 63); got ${JSON.stringify(standIn.name)}`, this);
    }
    if (standIn.name === dns.name) throw new pulumi.ResourceError(`standInName must differ from the DNS Service's own name ${dns.name}`, this);
    this.standIn = standIn;
    this.resource = new ServiceRecreation(`${name}-stand-in`, {
      kubeconfig: args.kubeconfig,
      moves: {},
      standIns: pulumi.output(args.finalIP).apply((ip) => ({ [serviceRefKey(standIn)]: { of: serviceRefKey(dns), ip } })),
      adoptJournals: false,
      journalNamespace: args.journalNamespace,
      version: args.version,
    }, { parent: this, dependsOn: withParentDependsOn(opts) });
    this.ip = pulumi.all([this.resource.standInResults, pulumi.output(args.finalIP)]).apply(([results, finalIP]) => results?.[`${standIn.namespace}/${standIn.name}`]?.ip ?? finalIP);
    this.registerOutputs({ ip: this.ip });
  }
}

export class DnsFinalSwap extends pulumi.ComponentResource {
  /** Milliseconds during which no Service held the final DNS IP. */
  readonly gapMillis: pulumi.Output<number>;
  /** The IP the DNS Service holds afterwards. */
  readonly ip: pulumi.Output<string>;
  readonly resource: ServiceRecreation;

  constructor(name: string, args: DnsFinalSwapArgs, opts?: pulumi.ComponentResourceOptions) {
    super("cidr-migration:dns:DnsFinalSwap", name, {}, opts);
    const dns = checkDns(args.dns, this);
    checkIp(args.fromIP, "fromIP", this);
    checkIp(args.toIP, "toIP", this);
    const temporary = args.temporary instanceof DnsTemporaryService ? args.temporary.standIn : args.temporary;
    if (!temporary || temporary.namespace !== dns.namespace || typeof temporary.name !== "string" || temporary.name === dns.name) {
      throw new pulumi.ResourceError(`temporary must be the DNS stand-in in namespace ${dns.namespace} (pass the DnsTemporaryService); got ${JSON.stringify(temporary)}`, this);
    }
    const key = serviceRefKey(dns);
    const dependsOn = withParentDependsOn(opts, args.temporary instanceof DnsTemporaryService ? [args.temporary] : []);
    this.resource = new ServiceRecreation(`${name}-swap`, {
      kubeconfig: args.kubeconfig,
      moves: pulumi.all([args.fromIP, args.toIP]).apply(([fromIP, toIP]) => ({
        [key]: { fromIP, toIP, vacate: serviceRefKey(temporary) },
      })),
      parallelism: 1,
      adoptJournals: false,
      journalNamespace: args.journalNamespace,
      deleteTimeoutSeconds: args.deleteTimeoutSeconds,
      version: args.version,
    }, { parent: this, dependsOn });
    this.gapMillis = this.resource.results.apply((results) => results?.[key]?.gapMillis ?? 0);
    this.ip = pulumi.all([this.resource.results, pulumi.output(args.toIP)]).apply(([results, toIP]) => results?.[key]?.ip ?? toIP);
    this.registerOutputs({ gapMillis: this.gapMillis, ip: this.ip });
  }
}
