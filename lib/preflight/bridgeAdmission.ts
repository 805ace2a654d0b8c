import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { describeKubeError } from "../config/kubeClient";
import { Finding } from "../report/findings";
import { PreflightInput } from "./checkInput";

/**
 * The old-ClusterIP bridge (services.bridgeOldIps), and the new address routed first (services.routeNewIpsFirst),
 * give each moved Service an externalIP. Admission can refuse
 * that: the DenyServiceExternalIPs plugin, or a policy webhook (externalIPs are CVE-2020-8554's vector, and many
 * clusters forbid them). So preflight asks the apiserver itself, with a dry-run create that runs every admission
 * step and persists nothing.
 */

export const BRIDGE_PROBE_SERVICE = { namespace: "default", name: "cidr-migration-bridge-probe" };

export interface BridgeAdmission {
  /** the apiserver's reason, when it refused the dry run */
  refused?: string;
  /** the address the dry run asked for */
  ip: string;
}

/** A 4xx answer is admission's (or validation's) verdict; anything else is the cluster being unreachable. */
export async function probeBridgeAdmission(kc: KubeConfig, ip: string): Promise<BridgeAdmission> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedService({
      namespace: BRIDGE_PROBE_SERVICE.namespace,
      dryRun: "All",
      body: { metadata: { name: BRIDGE_PROBE_SERVICE.name }, spec: { ports: [{ port: 80 }], externalIPs: [ip] } },
    });
    return { ip };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "number" && code >= 400 && code < 500 && code !== 401) return { ip, refused: apiMessage(err) };
    throw describeKubeError(err, "dry-running a Service with an externalIP (services.bridgeOldIps, services.routeNewIpsFirst)", kc.getCurrentCluster()?.server);
  }
}

function apiMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  try {
    const message = (typeof body === "string" ? JSON.parse(body) : body)?.message;
    if (typeof message === "string") return message;
  } catch {
    // not JSON: the first line of the error below
  }
  return String((err as Error)?.message ?? err).split("\n")[0];
}

/** Whether the re-create strategy routes each planned ClusterIP first (an externalIP on the old Service). */
function routesNewIpsFirst(config: PreflightInput["config"]): boolean {
  return config.services.strategy === "recreate" && config.services.routeNewIpsFirst;
}

/**
 * Whether the run gives Services externalIPs: the bridge, which the etcd rewrite opens for DNS and kubernetes
 * always, or the new addresses routed first.
 */
export function givesExternalIps(config: PreflightInput["config"]): boolean {
  return config.services.bridgeOldIps || config.services.strategy === "etcd-rewrite" || routesNewIpsFirst(config);
}

export function checkBridgeAdmission(input: PreflightInput): Finding[] {
  const admission = input.bridgeAdmission;
  if (!givesExternalIps(input.config) || !admission?.refused) return [];
  const findings: Finding[] = [];
  if (routesNewIpsFirst(input.config)) {
    findings.push({
      code: "NEW_IP_FIRST_REFUSED",
      severity: "blocker",
      object: `Service ${BRIDGE_PROBE_SERVICE.namespace}/${BRIDGE_PROBE_SERVICE.name} (dry run)`,
      path: "spec.externalIPs[0]",
      message: `cidr-migration:services.routeNewIpsFirst is true (the default of the recreate strategy): each moving Service answers at its planned ClusterIP as an externalIP before its swap, but kube-apiserver refuses a Service with externalIP ${admission.ip}: ${admission.refused}`,
      action: "allow externalIPs for the run (the DenyServiceExternalIPs admission plugin, or your policy webhook's rule), or set cidr-migration:services.routeNewIpsFirst to false: requests by name may then fail for a few seconds after each Service's move, until kube-proxy forwards the new address",
    });
  }
  if (!input.config.services.bridgeOldIps && input.config.services.strategy === "etcd-rewrite") {
    return [{
      code: "OLD_IP_BRIDGE_REFUSED",
      severity: "blocker",
      object: `Service ${BRIDGE_PROBE_SERVICE.namespace}/${BRIDGE_PROBE_SERVICE.name} (dry run)`,
      path: "spec.externalIPs[0]",
      message: `cidr-migration:services.strategy etcd-rewrite keeps the DNS and kubernetes Services answering at their old IPs as externalIPs until every pod restarts, but kube-apiserver refuses a Service with externalIP ${admission.ip}: ${admission.refused}`,
      action: "allow externalIPs for the run (the DenyServiceExternalIPs admission plugin, or your policy webhook's rule), or use services.strategy recreate",
    }];
  }
  if (!input.config.services.bridgeOldIps) return findings;
  return [...findings, {
    code: "OLD_IP_BRIDGE_REFUSED",
    severity: "blocker",
    object: `Service ${BRIDGE_PROBE_SERVICE.namespace}/${BRIDGE_PROBE_SERVICE.name} (dry run)`,
    path: "spec.externalIPs[0]",
    message: `cidr-migration:services.bridgeOldIps is true, but kube-apiserver refuses a Service with externalIP ${admission.ip}: ${admission.refused}`,
    action: "allow externalIPs for the run (the DenyServiceExternalIPs admission plugin, or your policy webhook's rule), or set cidr-migration:services.bridgeOldIps to false: clients that cached an old ClusterIP then fail until they resolve the name again",
  }];
}
