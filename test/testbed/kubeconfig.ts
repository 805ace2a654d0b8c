// Writes a kubeconfig with the certs embedded (as kubeadm's admin.conf does), so
// the file works on its own when copied; mode 0600 because it holds a key.
import * as fs from "fs";
import { stringify } from "yaml";
import { IssuedCert } from "./pki";

export function writeKubeconfig(file: string, opts: { server: string; caCertPath: string; client: IssuedCert; user: string; clusterName?: string }): void {
    const clusterName = opts.clusterName ?? "cidr-migration-testbed";
    const base64 = (p: string) => fs.readFileSync(p).toString("base64");
    const config = {
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: clusterName, cluster: { server: opts.server, "certificate-authority-data": base64(opts.caCertPath) } }],
        users: [{ name: opts.user, user: { "client-certificate-data": base64(opts.client.certPath), "client-key-data": base64(opts.client.keyPath) } }],
        contexts: [{ name: `${opts.user}@${clusterName}`, context: { cluster: clusterName, user: opts.user } }],
        "current-context": `${opts.user}@${clusterName}`,
        preferences: {},
    };
    fs.writeFileSync(file, stringify(config), { mode: 0o600 });
}
