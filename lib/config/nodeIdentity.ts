import { isIpAddress } from "../net/cidr";

/**
 * What names a node and how it is reached: a Kubernetes node name, an SSH user and an SSH host. Each check returns
 * undefined when the value is fine, else why it is not (a sentence fragment the caller prefixes with the key and the
 * value). Shared by the stack config (lib/config) and `restore --member`, so both accept the same values.
 * The remote scripts quote every value anyway; these checks refuse what can be no real node, user or host, and a host
 * that ssh would read as an option.
 */

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);
const HOST_LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$/;
/** POSIX portable user names (letters, digits, ".", "_", "-", not starting with "-"), as useradd takes them; Samba's trailing "$" too. */
const POSIX_USER = /^[A-Za-z_][A-Za-z0-9._-]*\$?$/;
const MAX_SUBDOMAIN = 253;
const MAX_USER = 32;

/** A Node's metadata.name: an RFC 1123 subdomain, as the apiserver validates it. */
export function nodeNameProblem(name: string): string | undefined {
  if (name.length > MAX_SUBDOMAIN) return `is ${name.length} characters long; a Kubernetes node name has at most ${MAX_SUBDOMAIN}`;
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return "is not a Kubernetes node name (RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit); use the name `kubectl get nodes` shows";
  }
  return undefined;
}

/** An SSH login name: a POSIX user name. */
export function userNameProblem(user: string): string | undefined {
  if (user.length > MAX_USER) return `is ${user.length} characters long; a user name has at most ${MAX_USER}`;
  if (!POSIX_USER.test(user)) {
    return "is not a POSIX user name (letters, digits, '.', '_' and '-', not starting with '-' or a digit); use the login name on the nodes, e.g. root or ubuntu";
  }
  return undefined;
}

/** An SSH host: an IP address or a DNS name. One that starts with "-" would be read by ssh as an option. */
export function hostProblem(host: string): string | undefined {
  if (host.startsWith("-")) return "starts with '-', which ssh would read as an option, not a host; use the node's IP address or DNS name";
  const asText: unknown = host; // isIpAddress narrows its argument: keep `host` a string
  if (isIpAddress(asText)) return undefined;
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  const labels = name.split(".");
  if (name.length === 0 || name.length > MAX_SUBDOMAIN || labels.some((l) => l.length > 63 || !HOST_LABEL.test(l)) || /^\d+$/.test(labels[labels.length - 1])) {
    return "is neither an IP address nor a DNS name; use the node's address, e.g. 10.0.0.21 or cp-1.example.internal";
  }
  return undefined;
}

/** A kubeadm preflight check's name (SystemVerification, FileAvailable--etc-kubernetes-kubelet.conf) or "all". */
export const PREFLIGHT_CHECK = /^[A-Za-z0-9][A-Za-z0-9.-]{0,127}$/;
