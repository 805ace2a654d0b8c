import * as http from "http";
import * as https from "https";
import { KubeConfig } from "@kubernetes/client-node";

/**
 * A raw-JSON view of the Kubernetes REST API, with its TLS and credentials taken from @kubernetes/client-node
 * (KubeConfig.applyToHTTPSOptions, the library's hook for requests it does not generate).
 *
 * Why not the generated typed clients: their model classes keep only the fields client-node knows and turn
 * timestamps into Dates, so a Service read through them and written back can silently lose what a newer (or
 * older) apiserver sent. A mover that promises to lose nothing has to round-trip the apiserver's own JSON.
 * A keep-alive agent sized for the parallel moves also avoids a TLS handshake per request.
 */

export type KubeObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
};

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

export interface KubeList {
  items: KubeObject[];
  metadata?: { resourceVersion?: string; continue?: string };
}

/**
 * An apiserver answer other than 2xx, with the Status object's reason and message. A plain Error with extra
 * fields, not a subclass: the SDK serializes the provider's code by value and turns classes into ES5 functions,
 * and an ES5 "subclass" of Error loses its message and its instanceof.
 */
export interface KubeApiError extends Error {
  name: "KubeApiError";
  status: number;
  reason: string;
  apiMessage: string;
  method: string;
  path: string;
}

export function kubeApiError(status: number, reason: string, apiMessage: string, method: string, path: string): KubeApiError {
  const err = new Error(`${method} ${path}: HTTP ${status} ${reason}: ${apiMessage}`) as KubeApiError;
  return Object.assign(err, { name: "KubeApiError" as const, status, reason, apiMessage, method, path });
}

export function isKubeApiError(err: unknown): err is KubeApiError {
  return err instanceof Error && err.name === "KubeApiError" && typeof (err as KubeApiError).status === "number";
}

export function isStatus(err: unknown, status: number): boolean {
  return isKubeApiError(err) && err.status === status;
}

const NETWORK_ERRORS = ["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "EAI_AGAIN", "ENOTFOUND", "REQUEST_TIMEOUT"];

/**
 * An answer worth trying again: the connection failed, the apiserver is overloaded (429) or failing (5xx), or it
 * rejected a write only because its etcd connection blipped (seen on the test bed as a 422 whose message carries
 * "rpc error: code = Unavailable desc = transport is closing").
 */
export function isTransient(err: unknown): boolean {
  if (isKubeApiError(err)) {
    if (err.status === 429 || err.status >= 500) return true;
    return err.status === 422 && /rpc error: code = (Unavailable|DeadlineExceeded)|etcdserver: /.test(err.apiMessage);
  }
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && NETWORK_ERRORS.includes(code);
}

/**
 * Runs a step that first reads and then writes what it needs, again after a transient failure: each attempt
 * starts from what the cluster holds, so repeating one is safe.
 */
export async function retryTransient<T>(step: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isTransient(err) || attempt >= attempts) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

export interface KubeRest {
  server: string;
  get(path: string): Promise<KubeObject>;
  /** A plain-text endpoint (/metrics), as it is. */
  getText(path: string): Promise<string>;
  /** undefined on 404 */
  getOptional(path: string): Promise<KubeObject | undefined>;
  /** Follows `continue` until the whole list is read. */
  list(path: string, query?: Record<string, string>): Promise<KubeObject[]>;
  /** The same list as metadata only (PartialObjectMetadataList): cheap for kinds with large objects. */
  listMetadata(path: string, query?: Record<string, string>): Promise<KubeObject[]>;
  /** The list and the resourceVersion it was read at: where a watch of the same collection starts. */
  listAt(path: string, query?: Record<string, string>): Promise<{ items: KubeObject[]; resourceVersion: string }>;
  /**
   * Streams the collection's changes (query: its resourceVersion and selectors), one `onEvent` per event, until
   * `stop()` or the stream ends; then `onEnd` once, with the error if it failed. It does not reconnect: a caller
   * that mirrors the collection must stop trusting its mirror once the watch has ended.
   */
  watch(path: string, query: Record<string, string>, onEvent: (type: string, object: KubeObject) => void, onEnd: (err?: Error) => void): { stop(): void };
  create(path: string, body: KubeObject): Promise<KubeObject>;
  replace(path: string, body: KubeObject): Promise<KubeObject>;
  /** JSON merge patch (RFC 7386). */
  mergePatch(path: string, patch: unknown): Promise<KubeObject>;
  /** JSON patch (RFC 6902); a failed `test` op comes back as 422 Invalid. */
  jsonPatch(path: string, ops: unknown[]): Promise<KubeObject>;
  /** DELETE with DeleteOptions; resolves with the apiserver's answer (the object or a Status). */
  delete(path: string, options?: Record<string, unknown>): Promise<KubeObject>;
  close(): void;
}

const REQUEST_TIMEOUT_MS = 30_000;
const READ_ATTEMPTS = 4;
const METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

interface Connection {
  base: URL;
  options: https.RequestOptions;
  agent: http.Agent;
}

async function connect(kc: KubeConfig, maxSockets: number): Promise<Connection> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster; set current-context");
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const base = new URL(cluster.server);
  let agent = options.agent as http.Agent;
  if (!cluster.proxyUrl) {
    const tls = options as https.AgentOptions;
    agent = base.protocol === "http:"
      ? new http.Agent({ keepAlive: true, maxSockets })
      : new https.Agent({
        keepAlive: true,
        maxSockets,
        ca: tls.ca, cert: tls.cert, key: tls.key, pfx: tls.pfx, passphrase: tls.passphrase,
        rejectUnauthorized: tls.rejectUnauthorized, servername: tls.servername,
      });
  }
  return { base, options, agent };
}

function parseBody(text: string): unknown {
  if (text === "") return {};
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 200) };
  }
}

/** Builds a client for the kubeconfig's current context; `close()` ends its keep-alive sockets. */
export async function kubeRest(kc: KubeConfig, opts: { maxSockets?: number } = {}): Promise<KubeRest> {
  const conn = await connect(kc, opts.maxSockets ?? 64);
  const basePath = conn.base.pathname.replace(/\/$/, "");

  /** A request on the keep-alive agent, with the kubeconfig's TLS and credentials; `path` includes its query. */
  function open(method: string, path: string, headers: http.OutgoingHttpHeaders, onResponse: (res: http.IncomingMessage) => void, timeout?: number): http.ClientRequest {
    const transport = conn.base.protocol === "http:" ? http : https;
    return transport.request({
      ...conn.options,
      agent: conn.agent,
      protocol: conn.base.protocol,
      hostname: conn.base.hostname,
      port: conn.base.port,
      method,
      path: basePath + path,
      headers: { ...(conn.options.headers ?? {}), ...headers },
      ...(timeout === undefined ? {} : { timeout }),
    }, onResponse);
  }

  function request(method: string, path: string, body?: unknown, contentType = "application/json", accept = "application/json"): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const headers = { Accept: accept, ...(payload ? { "Content-Type": contentType, "Content-Length": payload.length } : {}) };
      const req = open(method, path, headers, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const parsed = parseBody(text) as Record<string, unknown>;
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) resolve(accept.startsWith("text/") ? text : parsed);
          else reject(kubeApiError(status, String(parsed.reason ?? res.statusMessage ?? ""), String(parsed.message ?? ""), method, path));
        });
      }, REQUEST_TIMEOUT_MS);
      req.on("timeout", () => req.destroy(Object.assign(new Error(`${method} ${path}: no answer within ${REQUEST_TIMEOUT_MS} ms`), { code: "REQUEST_TIMEOUT" })));
      req.on("error", reject);
      if (payload) req.write(payload);
      req.end();
    });
  }

  /** Reads are idempotent: a transient failure is retried a few times before it counts. */
  async function read<T>(attempt: () => Promise<T>): Promise<T> {
    for (let tries = 1; ; tries++) {
      try {
        return await attempt();
      } catch (err) {
        if (!isTransient(err) || tries >= READ_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 50 * 2 ** tries));
      }
    }
  }

  /** Every page; the first page's resourceVersion is the whole list's (continue tokens keep its snapshot). */
  async function listPages(path: string, query: Record<string, string>, accept: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const items: KubeObject[] = [];
    let resourceVersion: string | undefined;
    let cont: string | undefined;
    do {
      const params = new URLSearchParams({ ...query, limit: "500", ...(cont ? { continue: cont } : {}) });
      const page = (await read(() => request("GET", `${path}?${params.toString()}`, undefined, undefined, accept))) as KubeList;
      items.push(...(page.items ?? []));
      resourceVersion ??= page.metadata?.resourceVersion;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion: resourceVersion ?? "" };
  }

  function watch(path: string, query: Record<string, string>, onEvent: (type: string, object: KubeObject) => void, onEnd: (err?: Error) => void): { stop(): void } {
    let ended = false;
    const end = (err?: Error) => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    const params = new URLSearchParams({ ...query, watch: "1" });
    // no socket timeout: a watch may be quiet for minutes
    const req = open("GET", `${path}?${params.toString()}`, { Accept: "application/json" }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        end(kubeApiError(res.statusCode ?? 0, res.statusMessage ?? "", "watch refused", "GET", path));
        return;
      }
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        for (let newline = buffer.indexOf("\n"); newline !== -1 && !ended; newline = buffer.indexOf("\n")) {
          const line = buffer.slice(0, newline);
          buffer = buffer.slice(newline + 1);
          if (line.trim() === "") continue;
          const event = parseBody(line) as { type?: string; object?: KubeObject & { message?: string } };
          // an ERROR event (e.g. 410 Gone: the resourceVersion is too old) ends the stream's usefulness
          if (event.type === "ERROR" || !event.object) {
            req.destroy();
            end(new Error(`watch ${path}: ${event.object?.message ?? line.slice(0, 200)}`));
            return;
          }
          onEvent(event.type ?? "", event.object);
        }
      });
      res.on("end", () => end());
      res.on("error", end);
    });
    req.on("error", end);
    req.end();
    return {
      stop() {
        ended = true;
        req.destroy();
      },
    };
  }

  return {
    server: conn.base.origin,
    get: (path) => read(() => request("GET", path) as Promise<KubeObject>),
    getText: (path) => read(() => request("GET", path, undefined, undefined, "text/plain") as Promise<string>),
    async getOptional(path) {
      try {
        return await read(() => request("GET", path) as Promise<KubeObject>);
      } catch (err) {
        if (isStatus(err, 404)) return undefined;
        throw err;
      }
    },
    list: async (path, query = {}) => (await listPages(path, query, "application/json")).items,
    listMetadata: async (path, query = {}) => (await listPages(path, query, METADATA_LIST)).items,
    listAt: (path, query = {}) => listPages(path, query, "application/json"),
    watch,

    create: (path, body) => request("POST", path, body) as Promise<KubeObject>,
    replace: (path, body) => request("PUT", path, body) as Promise<KubeObject>,
    mergePatch: (path, patch) => request("PATCH", path, patch, "application/merge-patch+json") as Promise<KubeObject>,
    jsonPatch: (path, ops) => request("PATCH", path, ops, "application/json-patch+json") as Promise<KubeObject>,
    delete: (path, options) => request("DELETE", path, options === undefined ? undefined : { apiVersion: "v1", kind: "DeleteOptions", ...options }) as Promise<KubeObject>,
    close: () => conn.agent.destroy(),
  };
}

/** REST paths of the objects this mover touches. */
export const paths = {
  services: (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/services`,
  service: (namespace: string, name: string) => `${paths.services(namespace)}/${encodeURIComponent(name)}`,
  endpoints: (namespace: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/endpoints/${encodeURIComponent(name)}`,
  endpointsList: (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/endpoints`,
  configMaps: (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`,
  configMap: (namespace: string, name: string) => `${paths.configMaps(namespace)}/${encodeURIComponent(name)}`,
};
