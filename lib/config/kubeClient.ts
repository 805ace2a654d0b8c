import { existsSync, readFileSync } from "fs";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { UnreachableError, UserError } from "./errors";
import { expandHome } from "./paths";
import { Sensitive } from "./sensitive";

/** Loads a kubeconfig from a path or secret content, with errors that name the source but never print the content. */
export function loadKubeConfig(source: { path?: string; content?: Sensitive }, what = "kubeconfig"): KubeConfig {
  const kc = new KubeConfig();
  try {
    if (source.content) {
      const text = source.content.reveal(what);
      if (text.trim() === "") throw new UserError(`${what}: the kubeconfig secret is empty; set it to an admin kubeconfig's content`);
      kc.loadFromString(text);
    } else {
      const file = expandHome(source.path ?? "~/.kube/config");
      if (!existsSync(file)) throw new UserError(`${what}: file ${file} does not exist; pass --kubeconfig FILE or set cidr-migration:kubeconfig`);
      // client-node reads an empty (or comment-only) file as no document and fails on a property of undefined.
      const text = readFileSync(file, "utf8");
      if (isEmptyYaml(text)) throw new UserError(`${what}: file ${file} is empty; pass an admin kubeconfig (e.g. /etc/kubernetes/admin.conf)`);
      kc.loadFromFile(file);
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    const where = source.content ? "the secret value" : `file ${expandHome(source.path ?? "~/.kube/config")}`;
    throw new UserError(`${what}: ${where} is not a usable kubeconfig (${firstLine(err)}); check it`);
  }
  if (!kc.getCurrentCluster()) throw new UserError(`${what}: has no current cluster; set current-context`);
  return kc;
}

function isEmptyYaml(text: string): boolean {
  return text.split("\n").every((line) => line.trim() === "" || line.trim().startsWith("#") || line.trim() === "---");
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

/** Node's codes for a serving certificate the client does not trust or that does not fit the address. */
const CERT_UNTRUSTED_CODES: readonly string[] = [
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE", "SELF_SIGNED_CERT_IN_CHAIN", "DEPTH_ZERO_SELF_SIGNED_CERT", "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "CERT_SIGNATURE_FAILURE", "CERT_UNTRUSTED", "ERR_TLS_CERT_ALTNAME_INVALID",
  "CERT_HAS_EXPIRED", "CERT_NOT_YET_VALID",
];

/** What to check for a TLS failure (wrong CA, plain HTTP on either side), or undefined when it is no TLS failure. */
function tlsHint(err: unknown, errno: string | undefined, server: string | undefined): string | undefined {
  const message = String((err as Error)?.message ?? err);
  const at = server ? ` ${server}` : "";
  if (errno === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `the apiserver's serving certificate does not name the host in the kubeconfig's server${at}; use an address the certificate lists, or re-issue it with that name (kubeadm: apiServer.certSANs)`;
  }
  if (errno === "CERT_HAS_EXPIRED" || errno === "CERT_NOT_YET_VALID") {
    return `the apiserver's serving certificate is ${errno === "CERT_HAS_EXPIRED" ? "expired" : "not valid yet"}; renew it (kubeadm certs renew apiserver) or check this machine's clock`;
  }
  if (errno && CERT_UNTRUSTED_CODES.includes(errno)) {
    return `the apiserver's serving certificate is not signed by the kubeconfig's CA; check that certificate-authority(-data) is this cluster's CA (/etc/kubernetes/pki/ca.crt on a control-plane node) and that the server${at} is this cluster's apiserver`;
  }
  if (errno === "EPROTO" || errno === "ERR_SSL_WRONG_VERSION_NUMBER" || /wrong version number|packet length too long/i.test(message)) {
    return `the server${at} does not speak TLS (plain HTTP?); check the kubeconfig's server: it must be the apiserver's secure port (https://HOST:6443 on kubeadm)`;
  }
  if (/HTTP protocol is not allowed/.test(message)) {
    return `the kubeconfig's server${at} is plain http://; the apiserver serves HTTPS: use https://HOST:6443 (kubeadm's secure port)`;
  }
  if ((err as { code?: unknown }).code === 400 && /HTTP request to an HTTPS server/.test(`${message} ${String((err as { body?: unknown }).body ?? "")}`)) {
    return `the server${at} speaks HTTPS but the kubeconfig says http://; use https:// in the kubeconfig's server`;
  }
  return undefined;
}

/** Translates a client-node failure into a one-line UserError (exit 2) or UnreachableError (exit 3). */
export function describeKubeError(err: unknown, action: string, server?: string): UserError {
  const code = (err as { code?: unknown }).code;
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  const errno = typeof code === "string" ? code : cause;
  const tls = tlsHint(err, errno, server);
  if (tls) {
    return new UnreachableError(`cannot talk to the cluster${server ? ` at ${server}` : ""} while ${action} (${errno ?? firstLine(err).slice(0, 80)}): ${tls}`);
  }
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

/** A ConfigMap's data; undefined when it does not exist; other failures as one readable UserError. */
export async function readConfigMapData(kc: KubeConfig, namespace: string, name: string): Promise<Record<string, string> | undefined> {
  try {
    const cm = await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace, name });
    return cm.data ?? {};
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw describeKubeError(err, `reading ConfigMap ${namespace}/${name}`, kc.getCurrentCluster()?.server);
  }
}
