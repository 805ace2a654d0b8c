import { UserError } from "../config/errors";
import { isIpAddress } from "../net/cidr";

/**
 * The kubelet's `--node-ip` on a kubeadm node (issue 16). kubeadm writes the kubelet's per-node flags to
 * /var/lib/kubelet/kubeadm-flags.env as one line, every flag in `--name=value` form:
 *   KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///run/containerd/containerd.sock --node-ip=192.168.10.21"
 * A node IP move sets `--node-ip` to the new address (a dual-stack node's pair, comma-separated), adding it when
 * kubeadm left it out, and changes no other byte. Anything kubeadm would not have written (quotes or escapes inside
 * the value, a flag not in `--name=value` form, several definitions) is refused rather than guessed at.
 */

export const KUBEADM_FLAGS_ENV = "/var/lib/kubelet/kubeadm-flags.env";
const VARIABLE = "KUBELET_KUBEADM_ARGS";

export interface NodeIpEdit {
  text: string;
  /** --node-ip before the edit; undefined when it was not set (the kubelet then picks an address itself). */
  before?: string;
  changed: boolean;
}

export function setKubeletNodeIp(text: string, nodeIp: string, source = KUBEADM_FLAGS_ENV): NodeIpEdit {
  if (!nodeIp.split(",").every(isIpAddress)) throw new UserError(`${source}: --node-ip "${nodeIp}" is not an IP address (or a dual-stack pair); pass the node's new address`);
  const lines = text.split("\n");
  const at = lines.flatMap((line, i) => (line.startsWith(`${VARIABLE}=`) ? [i] : []));
  if (at.length !== 1) throw new UserError(`${source}: ${at.length === 0 ? `no ${VARIABLE}` : `${at.length} lines define ${VARIABLE}`}; kubeadm writes exactly one: set --node-ip=${nodeIp} by hand`);
  const match = /^KUBELET_KUBEADM_ARGS="([^"\\$`]*)"$/.exec(lines[at[0]]);
  if (!match) throw new UserError(`${source}: ${VARIABLE} is not one double-quoted value without quotes, escapes or expansions inside, as kubeadm writes it; set --node-ip=${nodeIp} by hand`);
  const args = match[1].split(" ").filter((arg) => arg !== "");
  const odd = args.find((arg) => !/^--[a-z0-9-]+=/.test(arg));
  if (odd) throw new UserError(`${source}: "${odd}" is not a --name=value flag, as kubeadm writes them; set --node-ip=${nodeIp} by hand`);
  const current = args.filter((arg) => arg.startsWith("--node-ip="));
  if (current.length > 1) throw new UserError(`${source}: --node-ip is set ${current.length} times; leave one and run again`);
  const before = current[0]?.slice("--node-ip=".length);
  if (before === nodeIp) return { text, before, changed: false };
  const flag = `--node-ip=${nodeIp}`;
  const next = before === undefined ? [...args, flag] : args.map((arg) => (arg === current[0] ? flag : arg));
  lines[at[0]] = `${VARIABLE}="${next.join(" ")}"`;
  return { text: lines.join("\n"), before, changed: true };
}

/**
 * `--node-ip` after the node's address moves from `from` to `to`: that address replaced in place (a dual-stack
 * pair keeps its other family), or `to` when kubeadm left the flag out. Unchanged once it names `to`; a flag naming
 * neither is refused, since the kubelet would report an address the plan does not know.
 */
export function moveKubeletNodeIp(text: string, from: string, to: string, source = KUBEADM_FLAGS_ENV): NodeIpEdit {
  const current = setKubeletNodeIp(text, to, source).before;
  if (current === undefined) return setKubeletNodeIp(text, to, source);
  const ips = current.split(",");
  if (ips.includes(to) && !ips.includes(from)) return { text, before: current, changed: false };
  if (!ips.includes(from)) throw new UserError(`${source}: --node-ip is ${current}, which names neither ${from} nor ${to}; check nodeAddresses for this node, or set --node-ip=${to} by hand`);
  return setKubeletNodeIp(text, ips.map((ip) => (ip === from ? to : ip)).join(","), source);
}
