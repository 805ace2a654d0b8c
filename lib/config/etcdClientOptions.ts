import { IOptions } from "etcd3";

/** PEM material for an etcd client: the CA that signed etcd's serving cert, and a client cert and key. */
export interface EtcdTlsMaterial {
  caCert?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
}

const asBuffer = (value: string | Buffer | undefined) => (value === undefined ? undefined : Buffer.from(value));

/** etcd3 client options for `hosts`, with TLS when a CA or client cert is given; `extra` adds timeouts or gRPC settings. */
export function etcdClientOptions(hosts: string[], tls: EtcdTlsMaterial, extra: Omit<IOptions, "hosts" | "credentials"> = {}): IOptions {
  const options: IOptions = { ...extra, hosts };
  if (tls.caCert !== undefined || tls.cert !== undefined) {
    options.credentials = {
      // null means the system's trusted roots, as in grpc's createSsl.
      rootCertificate: (asBuffer(tls.caCert) ?? null) as Buffer,
      certChain: asBuffer(tls.cert),
      privateKey: asBuffer(tls.key),
    };
  }
  return options;
}
