import { Plan, ServiceMove } from "../plan/planModel";
import { GateReason } from "./gateReason";
import { isDynamicType } from "./ownership";
import { PreviewStep } from "./previewDigest";
import { isUnknown } from "./unknownValue";

/**
 * Service moves as the preview shows them, judged against the plan's Service IP map.
 *
 * Moves are ServiceRecreation resources (dynamic-providers/serviceRecreation.ts, type
 * `pulumi-nodejs:dynamic/cidr-migration:ServiceRecreation`), each holding a set of moves in its inputs:
 * - `moves`: { "namespace/name": { fromIP, toIP, type?, vacate?, otherFamily?: { fromIP, toIP } } }, otherFamily
 *   being a dual-stack Service's second ClusterIP, judged against the plan's second address;
 * - `kubernetesService`: { fromIP, toIP } for default/kubernetes (re-created by the apiserver);
 * - `standIns`: { "namespace/name": { of, ip } }, temporary Services at the DNS Service's new IP.
 * A move acts when its step creates or replaces the resource, or updates it with an entry whose toIP (or
 * vacate) differs from the old state's: the provider's own diff (a `same` step moved everything already).
 * An acting move fails the gate when the plan does not re-create that Service, when its toIP or fromIP is not the
 * plan's, or when it is unknown at preview time (the gate cannot prove it, so it fails closed). A stand-in fails it
 * unless it stands in for the plan's DNS Service at the plan's new DNS IP.
 *
 * With services.strategy etcd-rewrite the moves are the EtcdRewrite resource's (dynamic-providers/etcdRewrite.ts):
 * `services`: { "namespace/name": "<old IP> → <new IP>" }, default/kubernetes and the DNS Service among them, judged
 * the same way.
 */

export const SERVICE_RECREATION_TYPE = "ServiceRecreation";
export const ETCD_REWRITE_TYPE = "EtcdRewrite";
const ARROW = " → ";
const CREATING_OPS = new Set(["create", "replace", "create-replacement", "import", "import-replacement"]);

export interface PreviewServiceMove {
  urn: string;
  kind: "move" | "kubernetes" | "stand-in";
  /** "namespace/name" of the Service moved (for a stand-in: the temporary Service). */
  key: string;
  /** "unknown" while preview cannot know it. */
  toIP: string;
  fromIP?: string;
  /** stand-in: the Service it stands in for. */
  of?: string;
  /** A dual-stack Service's second ClusterIP, when the move carries it (issue 17). */
  otherFamily?: { fromIP?: string; toIP: string };
}

type Entry = Record<string, unknown>;
const isRecord = (v: unknown): v is Entry => typeof v === "object" && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined => (isUnknown(v) ? "unknown" : typeof v === "string" ? v : undefined);

function isServiceRecreation(type: string | undefined): boolean {
  return type !== undefined && isDynamicType(type) && type.endsWith(`:${SERVICE_RECREATION_TYPE}`);
}

function isEtcdRewrite(type: string | undefined): boolean {
  return type !== undefined && isDynamicType(type) && type.endsWith(`:${ETCD_REWRITE_TYPE}`);
}

/** The acting moves of an EtcdRewrite step: every entry of a created one, the changed entries of an updated one. */
function rewriteMoves(step: PreviewStep): PreviewServiceMove[] {
  const services = step.newState?.inputs?.services;
  if (!isRecord(services)) return [{ urn: step.urn, kind: "move", key: "unknown", toIP: "unknown" }];
  const old = CREATING_OPS.has(step.op) ? undefined : step.oldState?.inputs?.services;
  const moves: PreviewServiceMove[] = [];
  for (const [key, value] of Object.entries(services)) {
    if (isRecord(old) && old[key] === value) continue;
    const [fromIP, toIP] = typeof value === "string" && value.includes(ARROW) ? value.split(ARROW) : [undefined, "unknown"];
    moves.push({ urn: step.urn, kind: key === "default/kubernetes" ? "kubernetes" : "move", key, toIP: toIP ?? "unknown", fromIP });
  }
  return moves;
}

/** Whether a move's second-family target differs from the old state's (a move of both families, issue 17). */
function otherFamilyChanged(oldMoves: unknown, key: string, entry: Entry): boolean {
  const before = isRecord(oldMoves) && isRecord(oldMoves[key]) ? (oldMoves[key] as Entry).otherFamily : undefined;
  const toIP = (v: unknown) => (isRecord(v) ? v.toIP : undefined);
  return toIP(before) !== toIP(entry.otherFamily);
}

/** The acting moves of every ServiceRecreation step; a whole map unknown at preview time is one "unknown" move. */
export function serviceMovesIn(steps: readonly PreviewStep[]): PreviewServiceMove[] {
  const moves: PreviewServiceMove[] = [];
  for (const step of steps) {
    const inputs = step.newState?.inputs;
    if (inputs && isEtcdRewrite(step.newState?.type) && (CREATING_OPS.has(step.op) || step.op === "update")) {
      moves.push(...rewriteMoves(step));
      continue;
    }
    if (!inputs || !isServiceRecreation(step.newState?.type) || !(CREATING_OPS.has(step.op) || step.op === "update")) continue;
    const old = CREATING_OPS.has(step.op) ? undefined : step.oldState?.inputs;
    const changed = (field: string, key: string, entry: Entry, compare: string[]): boolean => {
      const before = isRecord(old?.[field]) ? (old![field] as Entry)[key] : undefined;
      return !isRecord(before) || compare.some((k) => before[k] !== entry[k]);
    };
    for (const [field, kind] of [["moves", "move"], ["standIns", "stand-in"]] as const) {
      const map = inputs[field];
      if (map === undefined) continue;
      if (!isRecord(map)) {
        moves.push({ urn: step.urn, kind, key: "unknown", toIP: "unknown" });
        continue;
      }
      for (const [key, entry] of Object.entries(map)) {
        if (!isRecord(entry)) {
          moves.push({ urn: step.urn, kind, key, toIP: "unknown" });
        } else if (kind === "move" && (changed(field, key, entry, ["toIP", "vacate"]) || otherFamilyChanged(old?.[field], key, entry))) {
          const other = isRecord(entry.otherFamily) ? { fromIP: text(entry.otherFamily.fromIP), toIP: text(entry.otherFamily.toIP) ?? "unknown" } : entry.otherFamily === undefined ? undefined : { toIP: "unknown" };
          moves.push({ urn: step.urn, kind, key, toIP: text(entry.toIP) ?? "unknown", fromIP: text(entry.fromIP), ...(other ? { otherFamily: other } : {}) });
        } else if (kind === "stand-in" && changed(field, key, entry, ["ip", "of"])) {
          moves.push({ urn: step.urn, kind, key, toIP: text(entry.ip) ?? "unknown", of: text(entry.of) });
        }
      }
    }
    const kubernetes = inputs.kubernetesService;
    if (kubernetes !== undefined) {
      const oldKubernetes = old?.kubernetesService;
      const entry = isRecord(kubernetes) ? kubernetes : {};
      if (!isRecord(oldKubernetes) || oldKubernetes.toIP !== entry.toIP) {
        moves.push({ urn: step.urn, kind: "kubernetes", key: "default/kubernetes", toIP: text(entry.toIP) ?? "unknown", fromIP: text(entry.fromIP) });
      }
    }
  }
  return moves;
}

export function judgeServiceMoves(moves: readonly PreviewServiceMove[], plan: Plan): { reasons: GateReason[]; notes: GateReason[] } {
  const reasons: GateReason[] = [];
  const planned = new Map<string, ServiceMove>(plan.services.map((s) => [`${s.namespace}/${s.name}`, s]));
  const dnsKey = `${plan.dns.namespace}/${plan.dns.name}`;
  const seen = new Set<string>();
  for (const move of moves) {
    const object = move.key === "unknown" ? move.urn : `Service ${move.key}`;
    if (move.key === "unknown") {
      reasons.push({ code: "SERVICE_MOVES_UNKNOWN", object, message: `the ${move.kind === "stand-in" ? "stand-ins" : "moves"} of this resource are unknown at preview time; the gate cannot match them to the plan` });
      continue;
    }
    if (move.kind === "stand-in") {
      if (move.of !== dnsKey || move.toIP !== plan.dns.newClusterIP) {
        reasons.push({ code: "STANDIN_NOT_IN_PLAN", object, message: `a temporary Service for ${move.of ?? "?"} at ${move.toIP}; the plan has one stand-in only, for ${dnsKey} at ${plan.dns.newClusterIP}` });
      }
      continue;
    }
    seen.add(move.key);
    const entry = planned.get(move.key);
    if (!entry || entry.action !== "recreate") {
      const why = entry ? `the plan leaves it alone (${entry.reason})` : "the plan does not list this Service";
      reasons.push({ code: "SERVICE_MOVE_NOT_IN_PLAN", object, message: `the preview moves it to ${move.toIP}, but ${why}; re-plan from the live cluster or fix the program` });
    } else if (move.toIP === "unknown") {
      reasons.push({ code: "SERVICE_IP_UNKNOWN", object, message: `the ClusterIP it is re-created at is unknown at preview time; the plan says ${entry.newClusterIP}, which the gate cannot prove` });
    } else if (move.toIP !== entry.newClusterIP) {
      reasons.push({ code: "SERVICE_IP_DIFFERS", object, message: `the preview re-creates it at ${move.toIP}, the plan at ${entry.newClusterIP}; re-plan or fix the program so both agree` });
    } else if (move.fromIP !== undefined && move.fromIP !== "unknown" && move.fromIP !== entry.oldClusterIP) {
      reasons.push({ code: "SERVICE_IP_DIFFERS", object, message: `the preview moves it from ${move.fromIP}, the plan from ${entry.oldClusterIP}; the plan is stale: re-plan from the live cluster` });
    } else {
      const problem = secondFamilyProblem(move, entry);
      if (problem) reasons.push({ ...problem, object });
    }
  }
  const missing = plan.services.filter((s) => s.action === "recreate" && !seen.has(`${s.namespace}/${s.name}`));
  const notes: GateReason[] = missing.length
    ? [{
        code: "PLANNED_SERVICE_MOVES_NOT_IN_PREVIEW",
        object: "preview",
        message: `${missing.length} planned Service move(s) have no acting step in the preview (done already, or hidden without --show-sames): ${missing.slice(0, 5).map((s) => `${s.namespace}/${s.name}`).join(", ")}${missing.length > 5 ? ", ..." : ""}`,
      }]
    : [];
  return { reasons, notes };
}

/** A dual-stack Service's second ClusterIP: the preview must move it exactly as the plan does, or leave it as the plan does. */
function secondFamilyProblem(move: PreviewServiceMove, entry: ServiceMove): Omit<GateReason, "object"> | undefined {
  const from = entry.oldClusterIPs?.[1];
  const to = entry.newClusterIPs?.[1];
  const planned = from !== undefined && to !== undefined && from !== to ? { from, to } : undefined;
  const other = move.otherFamily;
  const differs = (message: string) => ({ code: "SERVICE_IP_DIFFERS", message });
  if (!planned && !other) return undefined;
  if (!planned) return differs(`the preview also moves its second ClusterIP to ${other!.toIP}, but the plan keeps ${from ?? "none"}; re-plan or fix the program so both agree`);
  if (!other) return differs(`the preview moves only its first ClusterIP, and the plan moves its second too (${planned.from} -> ${planned.to}); re-plan or fix the program so both agree`);
  if (other.toIP === "unknown") return { code: "SERVICE_IP_UNKNOWN", message: `its second ClusterIP is unknown at preview time; the plan says ${planned.to}, which the gate cannot prove` };
  if (other.toIP !== planned.to) return differs(`the preview re-creates its second ClusterIP at ${other.toIP}, the plan at ${planned.to}; re-plan or fix the program so both agree`);
  if (other.fromIP !== undefined && other.fromIP !== "unknown" && other.fromIP !== planned.from) return differs(`the preview moves its second ClusterIP from ${other.fromIP}, the plan from ${planned.from}; the plan is stale: re-plan from the live cluster`);
  return undefined;
}
