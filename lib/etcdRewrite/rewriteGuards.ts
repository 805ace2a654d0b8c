import * as https from "https";

/**
 * The conditions the rewrite runs under, checked right before it writes:
 * - etcd is a version the rewrite was tested on (the test bed runs it on etcd 3.5, 3.6 and 3.7);
 * - no apiserver answers: a running apiserver would serve, cache and write the objects being rewritten.
 */

export const TESTED_ETCD_MINORS = ["3.5", "3.6", "3.7"];

export function untestedEtcdVersion(version: string): string | undefined {
  const minor = version.split(".").slice(0, 2).join(".");
  if (TESTED_ETCD_MINORS.includes(minor)) return undefined;
  return `etcd ${version} is not a version the rewrite was tested on (${TESTED_ETCD_MINORS.map((m) => `${m}.x`).join(", ")}); use services.strategy: recreate`;
}

// an array, not a Set: dynamic providers are serialized by value, and a Set does not survive it
const NOTHING_LISTENS = ["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"];

/**
 * Resolves false only when nothing listens at the URL (the connection is refused or unroutable). Anything else, an
 * HTTP answer of any status, a TLS error, no answer in time, counts as a running apiserver: the check fails closed.
 */
function answers(url: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    // only whether something serves here matters, not who: no certificate check, no credentials sent
    const req = https.get(`${url.replace(/\/$/, "")}/livez`, { rejectUnauthorized: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on("timeout", () => {
      req.destroy();
      resolve(true);
    });
    req.on("error", (err: NodeJS.ErrnoException) => resolve(!NOTHING_LISTENS.includes(err.code ?? "")));
  });
}

/** The apiserver URLs that still answer; the rewrite refuses to start (fails closed) unless this is empty. */
export async function apiserversAnswering(urls: string[], timeoutMs = 2000): Promise<string[]> {
  const results = await Promise.all(urls.map(async (url) => ((await answers(url, timeoutMs)) ? url : undefined)));
  return results.filter((u): u is string => u !== undefined);
}
