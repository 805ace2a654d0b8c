import { sleep } from "../concurrency/sleep";
import { KubeRest } from "./kubeRest";

/**
 * Service moves wait for the clients that program Services to be watching again. The control-plane phase restarts
 * kube-apiserver; every informer then reconnects after its own back-off (client-go's reflector: up to 30 s, with
 * jitter). A Service re-created meanwhile is answered by DNS (CoreDNS may be back first) at an address kube-proxy
 * has not programmed yet: on the node lab, requests by name failed for 12 s after the move for exactly that.
 * The apiserver counts its open watch requests per resource (`apiserver_longrunning_requests`); preflight records
 * the count for Services before anything changes, and the moves start once it is back.
 */

export const SERVICE_WATCHERS_TIMEOUT_MS = 90_000;
const POLL_MS = 500;

/** The open cluster-wide and namespaced WATCH requests on core/v1 Services in an apiserver's /metrics; undefined when it does not expose them. */
export function serviceWatchCount(metrics: string): number | undefined {
  let seen = false;
  let total = 0;
  for (const line of metrics.split("\n")) {
    if (!line.startsWith("apiserver_longrunning_requests{")) continue;
    seen = true;
    const labels = line.slice(line.indexOf("{") + 1, line.lastIndexOf("}"));
    if (!/(^|,)resource="services"/.test(labels) || !/(^|,)verb="WATCH"/.test(labels) || !/(^|,)group=""/.test(labels)) continue;
    const value = Number(line.slice(line.lastIndexOf("}") + 1).trim());
    if (Number.isFinite(value)) total += value;
  }
  return seen ? total : undefined;
}

/** The count now, or undefined when /metrics is not readable (RBAC) or lacks the metric: the wait is then skipped. */
export async function readServiceWatchCount(rest: KubeRest): Promise<number | undefined> {
  try {
    return serviceWatchCount(await rest.getText("/metrics"));
  } catch {
    return undefined;
  }
}

export interface WatchersWait {
  /** how long the moves waited */
  waitedMillis: number;
  /** the count when the wait ended; undefined: the apiserver does not tell */
  watchers?: number;
  /** set when the wait gave up: the moves went ahead, and why that may cost a gap */
  warning?: string;
}

/**
 * Waits until the apiserver serves at least `before` Service watches again. Gives up after `timeoutMs` with a
 * warning rather than failing: fewer watchers can be real (a DNS replica scaled down since preflight).
 */
export async function waitForServiceWatchers(rest: KubeRest, before: number, timeoutMs = SERVICE_WATCHERS_TIMEOUT_MS): Promise<WatchersWait> {
  const started = Date.now();
  for (;;) {
    const watchers = await readServiceWatchCount(rest);
    const waitedMillis = Date.now() - started;
    if (watchers === undefined || watchers >= before) return { waitedMillis, watchers };
    if (waitedMillis >= timeoutMs) {
      return {
        waitedMillis, watchers,
        warning: `kube-apiserver serves ${watchers} Service watch(es), ${before} before the control-plane restart; after ${Math.round(timeoutMs / 1000)} s the moves went ahead: a client still reconnecting (kube-proxy, CoreDNS) learns of the moved Services late`,
      };
    }
    await sleep(POLL_MS);
  }
}
