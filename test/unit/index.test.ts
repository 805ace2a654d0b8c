// index.ts reading its stack config under pulumi.runtime.setMocks: bad input stops the program with one RunError
// naming every bad key, before discovery and before any resource exists; a cluster that cannot be reached is a
// one-line RunError too. (The whole graph against a real cluster is test/integration/program.test.ts.)
import * as assert from "node:assert/strict";
import { createServer } from "node:net";
import * as pulumi from "@pulumi/pulumi";
import { captureGraph } from "../support/pulumiMocks";
import { baseValues } from "../support/stackValues";

function asPulumiConfig(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, typeof v === "string" ? v : JSON.stringify(v)]));
}

/** Runs index.ts with this stack config; returns what it threw and how many resources it declared. */
async function runProgram(values: Record<string, unknown>, secretKeys: string[] = []): Promise<{ error: unknown; declared: number }> {
  let error: unknown;
  const graph = await captureGraph(async () => {
    pulumi.runtime.setAllConfig(asPulumiConfig(values), secretKeys.map((k) => `cidr-migration:${k}`));
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require("../../index") as () => Promise<unknown>;
    try {
      await program();
    } catch (err) {
      error = err;
    }
  }, { preview: true });
  return { error, declared: graph.resources.length };
}

/** Stack values whose secrets are given as Pulumi decrypted them (plain strings under keys marked secret). */
function decryptedValues(): Record<string, unknown> {
  const values = baseValues();
  values.etcd = { endpoints: ["http://127.0.0.1:2379"] };
  values.ssh = { user: "ubuntu", privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nunit-test\n-----END OPENSSH PRIVATE KEY-----" };
  return values;
}

describe("index.ts reading its stack config (mocked engine)", () => {
  it("stops with one RunError naming every bad key, before declaring anything", async () => {
    const values = decryptedValues();
    values.serviceCidr = { from: "10.96.0.1/12", to: "10.112.0.0/12" };
    values.podCidr = { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 40 };
    values.cnii = "calico";
    const { error, declared } = await runProgram(values, ["ssh"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    const message = (error as Error).message;
    assert.match(message, /cidr-migration:serviceCidr\.from: "10\.96\.0\.1\/12" has host bits set: did you mean 10\.96\.0\.0\/12\?/);
    assert.match(message, /cidr-migration:podCidr\.nodeMaskSize: 40 is more than 16 bits longer/);
    assert.match(message, /cidr-migration:cnii: unknown key; did you mean "cni"\?/);
    assert.doesNotMatch(message, /unit-test/, "the SSH key never appears in an error");
    assert.equal(declared, 0);
  });

  it("refuses a secret that Pulumi did not hold as a secret", async () => {
    const { error, declared } = await runProgram(decryptedValues());
    assert.ok(pulumi.RunError.isInstance(error));
    assert.match((error as Error).message, /cidr-migration:ssh\.privateKey: is a secret but was given in plaintext; set it with: pulumi config set --secret --path 'ssh\.privateKey'/);
    assert.doesNotMatch((error as Error).message, /unit-test/);
    assert.equal(declared, 0);
  });

  it("refuses to declare the graph without an SSH key, naming the key and the command", async () => {
    const values = decryptedValues();
    values.ssh = { user: "ubuntu" };
    const { error, declared } = await runProgram(values, ["ssh"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    assert.equal((error as Error).message, `cidr-migration:ssh.privateKey is missing; the node steps run over SSH — set it with: pulumi config set --secret --path 'ssh.privateKey' "$(cat ~/.ssh/id_ed25519)"`);
    assert.equal(declared, 0);
  });

  it("reports an unreachable cluster as one line and declares nothing", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, "127.0.0.1", () => {
        const p = (server.address() as { port: number }).port;
        server.close(() => resolve(p));
      });
    });
    const values = decryptedValues();
    values.kubeconfig = { secure: "unused" };
    const kubeconfig = [
      "apiVersion: v1",
      "kind: Config",
      "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:" + port + "', insecure-skip-tls-verify: true}}]",
      "users: [{name: u, user: {token: t}}]",
      "contexts: [{name: c, context: {cluster: c, user: u}}]",
      "current-context: c",
    ].join("\n");
    values.kubeconfig = kubeconfig;
    const { error, declared } = await runProgram(values, ["ssh", "kubeconfig"]);
    assert.ok(pulumi.RunError.isInstance(error), `expected a RunError, got ${error}`);
    assert.match((error as Error).message, new RegExp(`^cannot reach the cluster at https://127\\.0\\.0\\.1:${port} while reading the server version \\(ECONNREFUSED\\)`));
    assert.equal((error as Error).message.split("\n").length, 1);
    assert.equal(declared, 0);
  });
});
