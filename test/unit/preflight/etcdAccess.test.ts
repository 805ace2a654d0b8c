import * as assert from "assert";
import { validateConfig } from "../../../lib/config/config";
import { etcdAccessFromConfig } from "../../../lib/preflight";

// Which etcd credentials preflight can use from the stack config, and why it skips the health check otherwise.
describe("preflight etcd access from the stack config", () => {
  const base = {
    serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
    podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
    nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
  };

  it("http endpoints need no credentials", () => {
    assert.deepStrictEqual(etcdAccessFromConfig(validateConfig({ values: { ...base, etcd: { endpoints: ["http://127.0.0.1:2379"] } } })), {});
  });

  it("secure: values the CLI cannot decrypt: skipped, naming each key", () => {
    const secure = { secure: "v1:x:y" };
    const config = validateConfig({ values: { ...base, etcd: { endpoints: ["https://10.0.0.11:2379"], caCert: secure, cert: secure, key: secure } } });
    assert.deepStrictEqual(etcdAccessFromConfig(config), {
      skippedReason: "cidr-migration:etcd.caCert, cidr-migration:etcd.cert, cidr-migration:etcd.key are secure: values the CLI cannot decrypt, and no --etcd-ca/--etcd-cert/--etcd-key files were given",
    });
  });

  it("decrypted secrets (as pulumi.Config gives them) become the client credentials", () => {
    const config = validateConfig({
      values: { ...base, etcd: { endpoints: ["https://10.0.0.11:2379"], caCert: "CA PEM", cert: "CERT PEM", key: "KEY PEM" } },
      secretKeys: new Set(["etcd"]),
    });
    const access = etcdAccessFromConfig(config);
    assert.deepStrictEqual(
      { ca: access.credentials?.ca?.toString(), cert: access.credentials?.cert?.toString(), key: access.credentials?.key?.toString(), skipped: access.skippedReason },
      { ca: "CA PEM", cert: "CERT PEM", key: "KEY PEM", skipped: undefined },
    );
  });
});
