import { MigrationConfig } from "../config/migrationConfig";
import { Sensitive } from "../config/sensitive";
import { EtcdCredentials } from "./etcdProbe";

/** How preflight may talk to etcd: credentials, or the reason it cannot and skips the health check. */
export interface EtcdAccess {
  /** Credentials to use; undefined when none are needed (http endpoints). */
  credentials?: EtcdCredentials;
  /** Set when the health check cannot run, saying why (e.g. the CLI cannot decrypt `secure:` values). */
  skippedReason?: string;
}

function revealed(value: Sensitive | undefined, what: string): Buffer | undefined {
  return value?.available ? Buffer.from(value.reveal(what)) : undefined;
}

/**
 * etcd access from the stack config alone. Inside `pulumi up` every secret is decrypted; the CLI reads `secure:`
 * values it cannot decrypt, and then the health check is skipped with a reason that names the keys.
 */
export function etcdAccessFromConfig(config: MigrationConfig): EtcdAccess {
  if (!config.etcd.endpoints.some((e) => e.startsWith("https://"))) return {};
  const { caCert, cert, key } = config.etcd;
  const encrypted = (
    [
      ["etcd.caCert", caCert],
      ["etcd.cert", cert],
      ["etcd.key", key],
    ] as const
  )
    .filter(([, v]) => v !== undefined && !v.available)
    .map(([k]) => `cidr-migration:${k}`);
  if (encrypted.length > 0) {
    const verb = encrypted.length === 1 ? "is a secure: value" : "are secure: values";
    return { skippedReason: `${encrypted.join(", ")} ${verb} the CLI cannot decrypt, and no --etcd-ca/--etcd-cert/--etcd-key files were given` };
  }
  if (!caCert) return { skippedReason: "the endpoints use https but no etcd CA is configured (cidr-migration:etcd.caCert) or given (--etcd-ca)" };
  return { credentials: readableEtcdCredentials(config) };
}

/** Whatever of the configured CA, cert and key is readable here (to complete files given on the command line). */
export function readableEtcdCredentials(config: MigrationConfig): EtcdCredentials {
  return {
    ca: revealed(config.etcd.caCert, "cidr-migration:etcd.caCert"),
    cert: revealed(config.etcd.cert, "cidr-migration:etcd.cert"),
    key: revealed(config.etcd.key, "cidr-migration:etcd.key"),
  };
}
