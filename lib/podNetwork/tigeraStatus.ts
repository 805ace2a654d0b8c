/**
 * Whether the Tigera operator has carried out an Installation change: its TigeraStatus objects (operator.tigera.io/v1,
 * cluster-scoped; `calico` from the core controller, `ippools` from the pool controller) are Available and not
 * Degraded, and the crd.projectcalico.org/v1 IPPools are what the Installation lists. Pure; the provider polls it.
 */
import { normalizeCidr } from "../net/cidr";

export interface TigeraCondition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
}

export interface TigeraStatusObject {
  metadata?: { name?: string };
  status?: { conditions?: TigeraCondition[] };
}

/** An IPPool as the provider reads it back. */
export interface LivePool {
  name: string;
  cidr: string;
  nodeSelector?: string;
}

/** A pool the operator should have made: its CIDR, and the nodeSelector it should carry when one is expected. */
export interface ExpectedPool {
  cidr: string;
  nodeSelector?: string;
}

/** TigeraStatus `calico` must exist; `ippools` is checked when the operator writes it (older ones do not). */
const REQUIRED = "calico";
const CHECKED = ["calico", "ippools"];

function conditionText(c: TigeraCondition | undefined): string {
  const detail = [c?.reason, c?.message].filter((t) => t !== undefined && t !== "").join(": ");
  return detail === "" ? "" : ` (${detail})`;
}

/** Why the operator is not healthy, one line per TigeraStatus; empty when it is. */
export function tigeraStatusProblems(statuses: TigeraStatusObject[]): string[] {
  const problems: string[] = [];
  if (!statuses.some((s) => s.metadata?.name === REQUIRED)) problems.push(`TigeraStatus ${REQUIRED} does not exist: is the Tigera operator running?`);
  for (const status of statuses.filter((s) => CHECKED.includes(s.metadata?.name ?? ""))) {
    const conditions = status.status?.conditions ?? [];
    const degraded = conditions.find((c) => c.type === "Degraded" && c.status === "True");
    const available = conditions.find((c) => c.type === "Available");
    if (degraded) problems.push(`TigeraStatus ${status.metadata!.name} is Degraded${conditionText(degraded)}`);
    else if (available?.status !== "True") problems.push(`TigeraStatus ${status.metadata!.name} is not Available${conditionText(available)}`);
  }
  return problems;
}

/** What the operator has not done yet: pools missing or not as expected, pools still present that should be gone. */
export function poolsPending(live: LivePool[], expected: ExpectedPool[], gone: string[]): string[] {
  const byCidr = new Map(live.map((p) => [normalizeCidr(p.cidr), p]));
  const pending: string[] = [];
  for (const want of expected) {
    const pool = byCidr.get(normalizeCidr(want.cidr));
    if (!pool) pending.push(`no IPPool in ${want.cidr} yet`);
    else if (want.nodeSelector !== undefined && pool.nodeSelector !== want.nodeSelector) {
      pending.push(`IPPool ${pool.name} (${pool.cidr}) has nodeSelector ${JSON.stringify(pool.nodeSelector ?? "")}, not ${JSON.stringify(want.nodeSelector)}`);
    }
  }
  for (const cidr of gone) {
    const pool = byCidr.get(normalizeCidr(cidr));
    if (pool) pending.push(`IPPool ${pool.name} (${pool.cidr}) still exists`);
  }
  return pending;
}
