import { existsSync, readFileSync } from "fs";
import { KubeConfig } from "@kubernetes/client-node";
import { UnreachableError, UserError } from "./errors";
import { expandHome } from "./paths";
import { Sensitive } from "./sensitive";

/** Loads a kubeconfig from a path or secret content, with errors that name the source but never print the content. */
export function loadKubeConfig(source: { path?: string; content?: Sensitive }, what = "kubeconfig"): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (source.content) {
      kc.loadFromString(source.content.reveal(what));
    } else {
      const file = expandHome(source.path ?? "~/.kube/config");
      if (!existsSync(file)) throw new UserError(`${what}: file ${file} does not exist; pass --kubeconfig FILE or set cidr-migration:kubeconfig`);
      kc.loadFromFile(file);
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`${what}: not a usable kubeconfig (${firstLine(err)}); check the file or the secret value`);
  }
  if (!kc.getCurrentCluster()) throw new UserError(`${what}: has no current cluster; set current-context`);
  return kc;
}

/** The kubeconfig's text, for resources that must carry it (as a secret) to the engine's provider hosts. */
export function kubeconfigText(source: { path?: string; content?: Sensitive }, what = "kubeconfig"): string {
  if (source.content) return source.content.reveal(what);
  const file = expandHome(source.path ?? "~/.kube/config");
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UserError(`${what}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? err}); pass an existing kubeconfig`);
  }
}

// An array, not a Set: provider code is serialized by value and a Set does not survive it.
const UNREACHABLE_CODES: readonly string[] = ["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ETIMEDOUT", "ECONNRESET", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"];

/** Translates a client-node failure into a one-line UserError (exit 2) or UnreachableError (exit 3). */
export function describeKubeError(err: unknown, action: string, server?: string): UserError {
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  const errno = typeof code === "string" ? code : cause;
  if (errno && UNREACHABLE_CODES.includes(errno)) {
    return new UnreachableError(`cannot reach the cluster${server ? ` at ${server}` : ""} while ${action} (${errno}); check the kubeconfig's server and that the apiserver is up`);
  }
  if (typeof code === "number") {
    if (code === 401 || code === 403) {
      return new UserError(`the cluster refused ${action} (HTTP ${code}); use an admin kubeconfig (cluster-admin)`);
    }
    return new UserError(`the cluster answered HTTP ${code} while ${action}: ${apiMessage(err)}`);
  }
  return new UnreachableError(`cannot reach the cluster${server ? ` at ${server}` : ""} while ${action} (${firstLine(err)})`);
}

export function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown }).code === 404;
}

function apiMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  if (typeof body === "string") {
    try {
      return (JSON.parse(body) as { message?: string }).message ?? body.slice(0, 200);
    } catch {
      return body.slice(0, 200);
    }
  }
  return firstLine(err);
}

function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split("\n")[0];
}
