import { faultPoint } from "./faultHook";
import { serviceRefKey } from "./serviceRef";
import { KubeObject, paths } from "./kubeRest";
import { KubernetesServiceRequest, KubernetesServiceResult } from "./moveTypes";
import { clusterIpsOf } from "./recreateBody";
import { ClusterView, Context, POLL_MS, journalWhere, moveError, nowMs, retrying, round, uidOf, writeJournal } from "./moverContext";
import { deleteService } from "./swap";
import { sleep } from "../concurrency/sleep";

/** default/kubernetes: deleted, and re-created by the apiserver itself at the new first Service IP; never by hand. */

export async function moveKubernetesService(ctx: Context, view: ClusterView, request: KubernetesServiceRequest): Promise<KubernetesServiceResult> {
  const ref = { namespace: "default", name: "kubernetes" };
  const key = serviceRefKey(ref);
  const where = journalWhere(ctx, ref);
  const live = view.services.get(key);
  const journal = view.journals.get(key);
  if (live && clusterIpsOf(live).includes(request.toIP) && !journal) return { outcome: "already-moved", ip: request.toIP };

  let entry = journal;
  let gapMillis: number | undefined;
  if (live && clusterIpsOf(live).includes(request.fromIP) && !live.metadata?.deletionTimestamp) {
    entry = {
      format: "cidr-migration.io/service-move/v1", kind: "apiserver-recreates", namespace: "default", name: "kubernetes",
      fromIP: request.fromIP, toIP: request.toIP, recordedAt: journal?.recordedAt ?? new Date().toISOString(), service: live, dependents: [],
    };
    await writeJournal(ctx, entry);
    await deleteService(ctx, ref, uidOf(live), where);
    faultPoint("after-kubernetes-delete", key);
  } else if (live && !clusterIpsOf(live).includes(request.toIP) && !live.metadata?.deletionTimestamp) {
    throw moveError(`Service ${key} holds ${clusterIpsOf(live).join(", ")}, expected ${request.fromIP} or ${request.toIP}; is kube-apiserver on the new --service-cluster-ip-range? Nothing was changed`);
  }
  const deleted = nowMs();
  const oldUid = uidOf(entry?.service ?? live);
  const deadline = deleted + ctx.options.kubernetesServiceTimeoutMs;
  let recreated: KubeObject | undefined;
  for (;;) {
    recreated = await ctx.rest.getOptional(paths.service("default", "kubernetes"));
    if (recreated && uidOf(recreated) !== oldUid) break;
    if (nowMs() > deadline) {
      throw moveError(`kube-apiserver did not re-create Service ${key} within ${Math.round(ctx.options.kubernetesServiceTimeoutMs / 1000)} s of its delete; check that kube-apiserver runs (its bootstrap controller re-creates it every 10 s)${entry ? `; ${where} keeps the original's labels and annotations` : ""}`);
    }
    await sleep(POLL_MS);
  }
  if (live && uidOf(live) === oldUid) gapMillis = round(nowMs() - deleted);
  if (!clusterIpsOf(recreated).includes(request.toIP)) {
    throw moveError(`kube-apiserver re-created Service ${key} at ${clusterIpsOf(recreated).join(", ")}, not at the new range's first IP ${request.toIP}; its --service-cluster-ip-range is not the new range yet`);
  }
  if (entry) {
    // The apiserver writes only its own labels; the user's labels and annotations come back from the journal.
    const meta = entry.service.metadata ?? {};
    const missing = (wanted: Record<string, string> | undefined, have: Record<string, string> | undefined) =>
      Object.fromEntries(Object.entries(wanted ?? {}).filter(([k]) => !(have ?? {})[k]));
    const labels = missing(meta.labels, recreated.metadata?.labels);
    const annotations = missing(meta.annotations, recreated.metadata?.annotations);
    if (Object.keys(labels).length + Object.keys(annotations).length > 0) {
      await retrying(() => ctx.rest.mergePatch(paths.service("default", "kubernetes"), { metadata: { labels, annotations } }));
    }
    await ctx.journal.remove([key]);
  }
  ctx.options.log?.(`Service ${key}: re-created by kube-apiserver at ${request.toIP}${gapMillis !== undefined ? ` (gap ${gapMillis} ms)` : ""}`);
  return { outcome: gapMillis !== undefined ? "moved" : "completed-from-journal", ip: request.toIP, ...(gapMillis !== undefined ? { gapMillis } : {}) };
}
