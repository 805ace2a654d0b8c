import { UserError } from "../config/errors";
import { Plan } from "../plan/planModel";

/**
 * A Plan read back from `cidr-migration plan --json`. The shape is checked as far as the gate and the report
 * read it, so a wrong file (an inventory, a preview) is refused with one line instead of judged.
 */

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export function parsePlanDocument(text: string, source: string): Plan {
  const fix = `write it with: cidr-migration plan --stack NAME --json > ${source}`;
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new UserError(`${source}: not JSON (${(err as Error).message.split("\n")[0]}); ${fix}`);
  }
  if (!isObject(data)) throw new UserError(`${source}: not a plan (expected a JSON object); ${fix}`);
  const missing = ["serviceCidr", "podCidr", "services", "nodes", "phases", "estimate"].filter((k) => data[k] === undefined);
  if (missing.length > 0) throw new UserError(`${source}: not a plan (no ${missing.join(", ")}); ${fix}`);
  if (!isObject(data.dns) || typeof data.dns.newClusterIP !== "string") throw new UserError(`${source}: not a plan (no dns.newClusterIP); ${fix}`);
  for (const key of ["services", "nodes", "phases"]) {
    if (!Array.isArray(data[key])) throw new UserError(`${source}: ${key} is not a list; ${fix}`);
  }
  (data.services as unknown[]).forEach((s, i) => {
    if (!isObject(s) || typeof s.namespace !== "string" || typeof s.name !== "string" || typeof s.action !== "string") {
      throw new UserError(`${source}: services[${i}] needs namespace, name and action; ${fix}`);
    }
  });
  (data.nodes as unknown[]).forEach((n, i) => {
    if (!isObject(n) || typeof n.name !== "string" || typeof n.action !== "string" || typeof n.batch !== "number" || typeof n.newPodCIDR !== "string") {
      throw new UserError(`${source}: nodes[${i}] needs name, action, batch and newPodCIDR; ${fix}`);
    }
  });
  (data.phases as unknown[]).forEach((p, i) => {
    if (!isObject(p) || typeof p.name !== "string" || !Array.isArray(p.steps) || typeof p.estimateSeconds !== "number" || !isObject(p.manualMinutes)) {
      throw new UserError(`${source}: phases[${i}] needs name, steps, estimateSeconds and manualMinutes; ${fix}`);
    }
  });
  return data as unknown as Plan;
}
