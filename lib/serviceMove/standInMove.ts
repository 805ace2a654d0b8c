import { faultPoint } from "./faultHook";
import { serviceRefKey } from "./serviceRef";
import { isStatus, paths } from "./kubeRest";
import { StandInRequest } from "./moveTypes";
import { clusterIpsOf } from "./recreateBody";
import { buildStandInBody } from "./standIn";
import { ClusterView, Context, moveError, retrying } from "./moverContext";

/** A stand-in Service (the DNS one): a temporary copy of another Service's selector and ports at a given IP. */

export async function ensureStandIn(ctx: Context, view: ClusterView, request: StandInRequest): Promise<{ outcome: "created" | "present" }> {
  const key = serviceRefKey(request);
  const existing = view.services.get(key);
  if (existing) {
    if (clusterIpsOf(existing).includes(request.ip)) return { outcome: "present" };
    throw moveError(`Service ${key} exists at ${clusterIpsOf(existing).join(", ")}, but the stand-in for ${serviceRefKey(request.of)} must be at ${request.ip}; delete it or choose another stand-in name`);
  }
  const holder = view.ipHolders.get(request.ip);
  if (holder) throw moveError(`the stand-in for ${serviceRefKey(request.of)} needs ${request.ip}, which Service ${holder} holds; nothing was changed`);
  const source = view.services.get(serviceRefKey(request.of));
  if (!source) throw moveError(`Service ${serviceRefKey(request.of)} does not exist, so no stand-in can copy its selector and ports; check cidr-migration:dns`);
  await retrying(async () => {
    try {
      await ctx.rest.create(paths.services(request.namespace), buildStandInBody(source, request));
    } catch (err) {
      // a create whose answer was lost: it is there at its IP
      const now = isStatus(err, 409) ? await ctx.rest.getOptional(paths.service(request.namespace, request.name)) : undefined;
      if (!now || !clusterIpsOf(now).includes(request.ip)) throw err;
    }
  });
  faultPoint("after-stand-in-create", key);
  return { outcome: "created" };
}
