/**
 * A stand-in for the Tigera operator's IP pool controller, for the test bed. Why a stand-in: tigera/operator is
 * not served by the Go module proxy here (`go list -m -versions github.com/tigera/operator` answers 403 Forbidden,
 * "This module version is not available"), so the real operator cannot be built or run.
 *
 * It follows tigera/operator pkg/controller/ippool/pool_controller.go at 40788b9b (Reconcile, lines ~155-390)
 * for what the migration depends on:
 * - pools are keyed by normalized CIDR; a pool is the operator's when it carries the label
 *   app.kubernetes.io/managed-by=tigera-operator (the adoption of unlabelled identical pools is left out);
 * - every Installation pool is converted as ToProjectCalico does (encapsulation → ipipMode/vxlanMode, natOutgoing
 *   Enabled → true, disableNewAllocations → disabled, blockSize, nodeSelector, disableBGPExport, allowedUses,
 *   assignmentMode) and written when missing or different: a hand edit of an owned pool is put back, a deleted
 *   owned pool is re-created;
 * - a listed CIDR held by a pool that is not the operator's → Degraded "Cannot update an IP pool not owned by the
 *   operator";
 * - writes other than the very first pools, and every delete, need the v3 API: APIServer default with
 *   status.state Ready; without it → Degraded "Unable to modify IP pools while Calico API server is unavailable"
 *   or "Unable to delete IP pools while Calico API server is unavailable", and nothing changes;
 * - an owned pool the Installation no longer lists is deleted (upstream through the v3 API; here the
 *   crd.projectcalico.org/v1 object the Calico API server stores it as).
 * It also writes TigeraStatus `ippools` (its own controller's) and `calico` (the core controller's: Degraded
 * "waiting for enabled IP pools to be created" while no pool is enabled, installation/core_controller.go).
 * Left out: defaulting (tests write fully defaulted Installations), validation (ValidatePools), the finalizer
 * and CNI-type readiness gates, and the v3 API server's own checks on pool deletes.
 */
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { normalizeCidr } from "../../lib/net/cidr";
import { InstallationPool } from "../../lib/plan/inventory";

const CALICO = { group: "crd.projectcalico.org", version: "v1" };
const TIGERA = { group: "operator.tigera.io", version: "v1" };
const MANAGED_BY = "app.kubernetes.io/managed-by";
const OPERATOR = "tigera-operator";

/** An Installation pool as the operator reads it (operator.tigera.io/v1 IPPool). */
type OperatorPool = InstallationPool & { disableBGPExport?: boolean; allowedUses?: string[]; assignmentMode?: string };

interface PoolObject {
  metadata: { name: string; labels?: Record<string, string>; resourceVersion?: string };
  spec: Record<string, unknown> & { cidr: string };
}

/** pool_controller.go ToProjectCalico: the spec the operator writes for an Installation pool. */
export function toProjectCalicoSpec(p: OperatorPool): Record<string, unknown> {
  const spec: Record<string, unknown> = { cidr: normalizeCidr(p.cidr) };
  const modes: Record<string, [string, string]> = {
    IPIP: ["Always", "Never"],
    IPIPCrossSubnet: ["CrossSubnet", "Never"],
    VXLAN: ["Never", "Always"],
    VXLANCrossSubnet: ["Never", "CrossSubnet"],
  };
  const mode = modes[p.encapsulation ?? ""];
  if (mode) [spec.ipipMode, spec.vxlanMode] = mode;
  if (p.natOutgoing === "Enabled") spec.natOutgoing = true;
  if (p.disableNewAllocations) spec.disabled = true;
  if (p.blockSize !== undefined) spec.blockSize = p.blockSize;
  spec.nodeSelector = p.nodeSelector;
  if (p.disableBGPExport) spec.disableBGPExport = true;
  if (p.allowedUses?.length) spec.allowedUses = p.allowedUses;
  spec.assignmentMode = p.assignmentMode ?? "Automatic";
  return spec;
}

/** The spec fields the operator sets, in one order, for comparing (omitempty false and empty values dropped). */
function comparable(spec: Record<string, unknown>): string {
  const keys = ["cidr", "ipipMode", "vxlanMode", "natOutgoing", "disabled", "blockSize", "nodeSelector", "disableBGPExport", "allowedUses", "assignmentMode"];
  const kept = keys.map((k) => [k, spec[k]]).filter(([, v]) => v !== undefined && v !== false && v !== "" && !(Array.isArray(v) && v.length === 0));
  return JSON.stringify(kept.map(([k, v]) => [k, k === "cidr" ? normalizeCidr(String(v)) : v]));
}

export interface StandInStatus {
  degraded?: { reason: string; message: string };
}

export class TigeraPoolControllerStandIn {
  private readonly api: CustomObjectsApi;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** What each reconcile did, for tests to read: "create <name>", "update <name>", "delete <name>". */
  readonly actions: string[] = [];
  lastStatus: StandInStatus = {};

  constructor(kc: KubeConfig, private readonly intervalMs = 300) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  start(): void {
    const loop = () => {
      this.running = this.reconcile().catch(() => undefined).then(() => {
        if (this.timer !== undefined) this.timer = setTimeout(loop, this.intervalMs);
      });
    };
    this.timer = setTimeout(loop, 0);
  }

  async stop(): Promise<void> {
    const timer = this.timer;
    this.timer = undefined;
    if (timer) clearTimeout(timer);
    await this.running;
  }

  private async get(group: typeof CALICO, plural: string, name: string): Promise<Record<string, any> | undefined> {
    return this.api.getClusterCustomObject({ ...group, plural, name }).then((o) => o as Record<string, any>, (e: { code?: number }) => {
      if (e.code === 404) return undefined;
      throw e;
    });
  }

  /** One pass of pool_controller.go's Reconcile. */
  async reconcile(): Promise<void> {
    const installation = await this.get(TIGERA, "installations", "default");
    if (!installation) return;
    const desired: OperatorPool[] = installation.spec?.calicoNetwork?.ipPools ?? [];
    const current = ((await this.api.listClusterCustomObject({ ...CALICO, plural: "ippools" })) as { items: PoolObject[] }).items;
    const apiServer = await this.get(TIGERA, "apiservers", "default");
    const apiAvailable = apiServer?.status?.state === "Ready";

    const ours = new Map<string, PoolObject>();
    const notOurs = new Set<string>();
    for (const p of current) {
      if (p.metadata.labels?.[MANAGED_BY] === OPERATOR) ours.set(normalizeCidr(p.spec.cidr), p);
      else notOurs.add(normalizeCidr(p.spec.cidr));
    }
    let degraded: StandInStatus["degraded"];
    const writes: Array<() => Promise<unknown>> = [];
    for (const p of desired) {
      const key = normalizeCidr(p.cidr);
      if (notOurs.has(key)) {
        degraded = { reason: "ResourceValidationError", message: "Cannot update an IP pool not owned by the operator" };
        continue;
      }
      const spec = toProjectCalicoSpec(p);
      const existing = ours.get(key);
      if (existing && comparable(existing.spec) === comparable(spec)) continue;
      if (current.length > 0 && !apiAvailable) {
        await this.writeStatus({ reason: "ResourceNotReady", message: "Unable to modify IP pools while Calico API server is unavailable" });
        return;
      }
      const name = p.name ?? existing?.metadata.name ?? key.replace(/[/:]/g, "-");
      if (existing) {
        const body = { ...existing, metadata: { ...existing.metadata, labels: { ...existing.metadata.labels, [MANAGED_BY]: OPERATOR } }, spec };
        writes.push(() => this.api.replaceClusterCustomObject({ ...CALICO, plural: "ippools", name: existing.metadata.name, body }).then(() => this.actions.push(`update ${existing.metadata.name}`)));
      } else {
        const body = { apiVersion: "crd.projectcalico.org/v1", kind: "IPPool", metadata: { name, labels: { [MANAGED_BY]: OPERATOR } }, spec };
        writes.push(() => this.api.createClusterCustomObject({ ...CALICO, plural: "ippools", body }).then(() => this.actions.push(`create ${name}`)));
      }
    }
    const listed = new Set(desired.map((p) => normalizeCidr(p.cidr)));
    for (const [cidr, pool] of ours) {
      if (listed.has(cidr)) continue;
      if (!apiAvailable) {
        await this.writeStatus({ reason: "ResourceNotReady", message: "Unable to delete IP pools while Calico API server is unavailable" });
        return;
      }
      writes.push(() => this.api.deleteClusterCustomObject({ ...CALICO, plural: "ippools", name: pool.metadata.name }).then(() => this.actions.push(`delete ${pool.metadata.name}`)));
    }
    for (const write of writes) await write();
    await this.writeStatus(degraded);
  }

  /** TigeraStatus ippools (this controller) and calico (the core controller: Available once a pool is enabled). */
  private async writeStatus(degraded: StandInStatus["degraded"]): Promise<void> {
    this.lastStatus = { degraded };
    const pools = ((await this.api.listClusterCustomObject({ ...CALICO, plural: "ippools" })) as { items: PoolObject[] }).items;
    const enabled = pools.some((p) => p.spec.disabled !== true);
    await this.setConditions("ippools", degraded);
    await this.setConditions("calico", enabled ? undefined : { reason: "ResourceNotFound", message: "waiting for enabled IP pools to be created" });
  }

  private readonly written = new Map<string, string>();

  private async setConditions(name: string, degraded: StandInStatus["degraded"]): Promise<void> {
    // Written only on a change, as the operator's status manager keeps lastTransitionTime.
    const signature = JSON.stringify(degraded ?? null);
    if (this.written.get(name) === signature) return;
    const now = new Date().toISOString();
    const conditions = [
      { type: "Available", status: degraded ? "False" : "True", reason: degraded ? "Unknown" : "AllObjectsAvailable", message: degraded ? "" : "All objects available", lastTransitionTime: now },
      { type: "Progressing", status: "False", reason: "Unknown", message: "", lastTransitionTime: now },
      { type: "Degraded", status: degraded ? "True" : "False", reason: degraded?.reason ?? "Unknown", message: degraded?.message ?? "", lastTransitionTime: now },
    ];
    const existing = await this.get(TIGERA, "tigerastatuses", name);
    if (!existing) {
      await this.api.createClusterCustomObject({ ...TIGERA, plural: "tigerastatuses", body: { apiVersion: "operator.tigera.io/v1", kind: "TigeraStatus", metadata: { name }, spec: {} } });
    }
    const fresh = (await this.get(TIGERA, "tigerastatuses", name))!;
    await this.api.replaceClusterCustomObjectStatus({ ...TIGERA, plural: "tigerastatuses", name, body: { ...fresh, status: { conditions } } });
    this.written.set(name, signature);
  }
}
