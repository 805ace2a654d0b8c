/**
 * The SSH connection every node step (RemoteScript) uses, built in one place so all node steps connect
 * the same way and the private key is always a Pulumi secret (never plaintext in state, diffs or logs).
 *
 * API: `connectionFor(node, ssh, options?)` → the `SshConnection` a RemoteScript takes.
 * - host/port come from the node (config `nodes[i].host|port`, port default 22); the user is the node's own
 *   (`nodes[i].user`), else `ssh.user`.
 * - `ssh.privateKey` is wrapped in `pulumi.secret` here, whatever the caller passed (a plain string, an Output,
 *   an Output that is already secret); index.ts gets it from the `Sensitive` config value with `reveal()`.
 * - `dialErrorLimit` (default 5) and `perDialTimeout` (default 15 s): a node that is down fails its step after
 *   about a minute with ssh's dial error instead of hanging the whole `pulumi up`.
 * - `hostKey`: the node's expected SSH host key ("ssh-ed25519 AAAA..."); without it the provider does not check
 *   the host's identity, so production stacks should pass it.
 * Bad input (empty host or user, a port outside 1..65535, non-positive limits) throws one readable line naming
 * the node and the field.
 */
import * as pulumi from "@pulumi/pulumi";
import { SshConnection } from "../dynamic-providers/remoteScript";
import { NodeTarget } from "../lib/config/migrationConfig";

export interface SshCredentials {
  /** Login user when the node does not name its own (config `ssh.user`). */
  user: string;
  /** PEM/OpenSSH private key content; always stored as a secret. */
  privateKey: pulumi.Input<string>;
}

export interface ConnectionOptions {
  /** Dial attempts before the step fails (default 5). */
  dialErrorLimit?: number;
  /** Seconds for each dial attempt (default 15). */
  perDialTimeoutSeconds?: number;
  /** Expected host key of the node, e.g. "ssh-ed25519 AAAAC3...". Unset: the node's identity is not verified. */
  hostKey?: pulumi.Input<string>;
}

export const DEFAULT_DIAL_ERROR_LIMIT = 5;
export const DEFAULT_PER_DIAL_TIMEOUT_SECONDS = 15;

/** The node fields a connection needs (a full NodeTarget fits). */
export type ConnectionTarget = Pick<NodeTarget, "name" | "host"> & Partial<Pick<NodeTarget, "port" | "user">>;

function positive(value: number, field: string, node: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new Error(`node ${node}: ${field} ${value} must be a positive whole number; pass e.g. ${field === "dialErrorLimit" ? 5 : 15}`);
  }
  return value;
}

export function connectionFor(node: ConnectionTarget, ssh: SshCredentials, options: ConnectionOptions = {}): SshConnection {
  const name = node.name || "(unnamed)";
  if (!node.host || /\s/.test(node.host)) throw new Error(`node ${name}: host "${node.host ?? ""}" is empty or contains spaces; set nodes[].host to its address`);
  const port = node.port ?? 22;
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`node ${name}: port ${port} is not between 1 and 65535; set nodes[].port`);
  const user = node.user || ssh.user;
  if (!user || /\s/.test(user)) throw new Error(`node ${name}: no SSH user (nodes[].user and ssh.user are empty); set ssh.user`);
  const connection: SshConnection = {
    host: node.host,
    port,
    user,
    privateKey: pulumi.secret(ssh.privateKey),
    dialErrorLimit: positive(options.dialErrorLimit ?? DEFAULT_DIAL_ERROR_LIMIT, "dialErrorLimit", name),
    perDialTimeoutSeconds: positive(options.perDialTimeoutSeconds ?? DEFAULT_PER_DIAL_TIMEOUT_SECONDS, "perDialTimeoutSeconds", name),
  };
  if (options.hostKey !== undefined) connection.hostKey = options.hostKey;
  return connection;
}
