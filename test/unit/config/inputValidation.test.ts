import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import { validateConfig } from "../../../lib/config/config";
import { ConfigSource } from "../../../lib/config/configReader";
import { ConfigError } from "../../../lib/config/errors";
import { describeKubeError } from "../../../lib/config/kubeClient";
import { runCli } from "../../support/cli";
import { baseValues } from "../../support/stackValues";

// Issue 20, "Validation gaps": what a new user can type that must be refused with a line naming the key, the value
// and what to do (exit 2), and the cluster failures that must say what to check.

function problemsOf(values: Record<string, unknown>): Array<{ key: string; message: string }> {
  try {
    validateConfig({ values } as ConfigSource);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.problems;
  }
  return [];
}

function onlyProblem(values: Record<string, unknown>, key: string, ...patterns: RegExp[]): void {
  const problems = problemsOf(values);
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.equal(problems[0].key, `cidr-migration:${key}`);
  for (const p of patterns) assert.match(problems[0].message, p);
}

function withNode(index: number, field: string, value: unknown): Record<string, unknown> {
  const values = baseValues();
  (values.nodes as Array<Record<string, unknown>>)[index][field] = value;
  return values;
}

describe("input validation: node names, users and hosts", function () {
  this.timeout(60_000); // each CLI run starts ts-node
  for (const bad of ["; rm -rf /", "$(id)", "`id`", "worker 1", "Worker-1", "-worker", "worker-", "a_b"]) {
    it(`refuses node name ${JSON.stringify(bad)}, naming the key and the value`, () => {
      onlyProblem(withNode(2, "name", bad), "nodes[2].name", new RegExp(JSON.stringify(bad).replace(/[$()`;[\]/\\.*+?^{}|]/g, "\\$&")), /RFC 1123/, /kubectl get nodes/);
    });
  }

  for (const bad of ["-oProxyCommand=id", "-p2222", "host name", "10.0.0.300", "a..b", "$(id)", "host;id"]) {
    it(`refuses host ${JSON.stringify(bad)}`, () => {
      onlyProblem(withNode(2, "host", bad), "nodes[2].host", bad.startsWith("-") ? /ssh would read as an option/ : /neither an IP address nor a DNS name/);
    });
  }

  for (const bad of ["root;id", "$(id)", "`id`", "my user", "-oops", "1root"]) {
    it(`refuses user ${JSON.stringify(bad)} in nodes[i].user and in ssh.user`, () => {
      onlyProblem(withNode(1, "user", bad), "nodes[1].user", /not a POSIX user name/);
      const values = baseValues();
      (values.ssh as Record<string, unknown>).user = bad;
      onlyProblem(values, "ssh.user", /not a POSIX user name/, /pulumi config set --path 'ssh.user'/);
    });
  }

  it("accepts real names: dotted node names, IPv4, IPv6 and DNS hosts, users like ec2-user", () => {
    const values = baseValues();
    const nodes = values.nodes as Array<Record<string, unknown>>;
    nodes[0].name = "ip-10-0-1-23.ec2.internal";
    nodes[1].host = "fd00::12";
    nodes[2].host = "cp-3.example.internal";
    nodes[3].user = "ec2-user";
    assert.deepEqual(problemsOf(values), []);
  });

  it("the CLI refuses a bad host from the stack file with exit 2 and one line naming the key", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "validation-"));
    try {
      const values = withNode(2, "host", "-oProxyCommand=id");
      const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, v]));
      const file = path.join(dir, "Pulumi.bad.yaml");
      fs.writeFileSync(file, stringify({ config }));
      const result = await runCli(["plan", "--config", file, "--inventory", path.join(dir, "unused.json")]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^cidr-migration: cidr-migration:nodes\[2\]\.host: "-oProxyCommand=id" starts with '-', which ssh would read as an option/m);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const [member, pattern] of [
    ["cp-1=-oProxyCommand=id", /--member cp-1=-oProxyCommand=id: host "-oProxyCommand=id" starts with '-', which ssh would read as an option/],
    ["$(id)=10.0.0.11", /--member \$\(id\)=10\.0\.0\.11: node "\$\(id\)" is not a Kubernetes node name/],
    ["cp-1=10.0.0.11;id", /host "10\.0\.0\.11;id" is neither an IP address nor a DNS name/],
  ] as const) {
    it(`restore --member ${member} is refused with exit 2 before the snapshot is read`, async () => {
      const result = await runCli(["restore", "--snapshot", "/nonexistent/snapshot.db", "--member", member]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, pattern);
    });
  }

  it("restore --ssh-user is a POSIX user name", async () => {
    const result = await runCli(["restore", "--snapshot", "/nonexistent/snapshot.db", "--member", "cp-1=10.0.0.11", "--ssh-user", "root;id"]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--ssh-user "root;id" is not a POSIX user name/);
  });
});

describe("input validation: secure: values", () => {
  for (const [value, pattern] of [["", /is empty/], ["notbase64!!", /not ciphertext Pulumi wrote/], ["   ", /is empty/]] as const) {
    it(`refuses secure: ${JSON.stringify(value)} naming the key`, () => {
      const values = baseValues();
      (values.ssh as Record<string, unknown>).privateKey = { secure: value };
      onlyProblem(values, "ssh.privateKey", pattern, /pulumi config set --secret --path 'ssh.privateKey'/);
    });
  }

  it("refuses a malformed secure: kubeconfig", () => {
    const values = baseValues();
    values.kubeconfig = { secure: "not base64!!" };
    onlyProblem(values, "kubeconfig", /not ciphertext Pulumi wrote/);
  });

  it("accepts what Pulumi writes: v1:NONCE:CIPHERTEXT and plain base64", () => {
    const values = baseValues();
    (values.ssh as Record<string, unknown>).privateKey = { secure: "v1:Vd4qIh3Yo2t4p3c9:7cPZJm0m1tZ7c9R8yq1W3nA3Z6ZQ3Yb1oE2rJkq1" };
    values.kubeconfig = { secure: "AAABAMcGn0Q7xYz+/w==" };
    assert.deepEqual(problemsOf(values), []);
  });
});

describe("input validation: Service range size", () => {
  for (const to of ["10.112.0.0/32", "10.112.0.0/31", "fd00:10:97::/128"]) {
    it(`${to} is refused as leaving no address, never "room for -N Services"`, () => {
      const values = baseValues();
      if (to.includes(":")) {
        values.serviceCidr = { from: "fd00:10:96::/112", to };
        values.podCidr = { from: "fd00:244::/56", to: "fd00:48::/56", nodeMaskSize: 64 };
        values.nodes = [{ name: "cp-1", host: "fd00:1::11", role: "control-plane" }];
      } else {
        values.serviceCidr = { from: "10.96.0.0/12", to };
      }
      const problems = problemsOf(values);
      assert.equal(problems.length, 1, JSON.stringify(problems));
      assert.equal(problems[0].key, "cidr-migration:serviceCidr.to");
      assert.match(problems[0].message, /leaves no address for a Service/);
      assert.doesNotMatch(problems[0].message, /-\d+ Services/);
    });
  }
});

describe("input validation: kubeconfig and TLS", function () {
  this.timeout(60_000); // each CLI run starts ts-node
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "kubeconfig-"))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function kubeconfig(name: string, server: string, ca?: string): string {
    const file = path.join(dir, name);
    fs.writeFileSync(file, stringify({
      apiVersion: "v1", kind: "Config", "current-context": "c",
      clusters: [{ name: "c", cluster: { server, ...(ca ? { "certificate-authority-data": Buffer.from(ca).toString("base64") } : {}) } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
    }));
    return file;
  }

  function selfSigned(name: string): { cert: string; key: string } {
    const key = path.join(dir, `${name}.key`);
    const cert = path.join(dir, `${name}.crt`);
    execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-subj", `/CN=${name}`, "-days", "1",
      "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
    return { cert: fs.readFileSync(cert, "utf8"), key: fs.readFileSync(key, "utf8") };
  }

  async function listen(server: http.Server): Promise<number> {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return (server.address() as AddressInfo).port;
  }

  it("an empty kubeconfig file is one line naming the file (exit 2)", async () => {
    const empty = path.join(dir, "empty");
    fs.writeFileSync(empty, "");
    const result = await runCli(["inventory", "--kubeconfig", empty]);
    assert.equal(result.code, 2, result.stderr);
    assert.equal(result.stderr, `cidr-migration: --kubeconfig: file ${empty} is empty; pass an admin kubeconfig (e.g. /etc/kubernetes/admin.conf)\n`);
  });

  it("a serving certificate the kubeconfig's CA did not sign: check certificate-authority", async function () {
    const served = selfSigned("served");
    const other = selfSigned("other");
    const server = https.createServer({ cert: served.cert, key: served.key }, (_req, res) => res.end("{}"));
    const port = await listen(server);
    try {
      const result = await runCli(["inventory", "--kubeconfig", kubeconfig("wrong-ca", `https://127.0.0.1:${port}`, other.cert)]);
      assert.equal(result.code, 3, result.stderr);
      assert.match(result.stderr, /not signed by the kubeconfig's CA; check that certificate-authority\(-data\) is this cluster's CA/);
    } finally {
      server.close();
    }
  });

  it("https:// against a plain-HTTP port: the server does not speak TLS, check the port", async function () {
    const server = http.createServer((_req, res) => res.end("{}"));
    const port = await listen(server);
    try {
      const result = await runCli(["inventory", "--kubeconfig", kubeconfig("plain", `https://127.0.0.1:${port}`)]);
      assert.equal(result.code, 3, result.stderr);
      assert.match(result.stderr, /does not speak TLS \(plain HTTP\?\); check the kubeconfig's server: it must be the apiserver's secure port/);
    } finally {
      server.close();
    }
  });

  it("an http:// server in the kubeconfig: the apiserver serves HTTPS", async () => {
    const result = await runCli(["inventory", "--kubeconfig", kubeconfig("http", "http://127.0.0.1:1")]);
    assert.equal(result.code, 3, result.stderr);
    assert.match(result.stderr, /is plain http:\/\/; the apiserver serves HTTPS: use https:\/\/HOST:6443/);
  });

  it("HTTP to an HTTPS server (answered 400): use https://", () => {
    const err = Object.assign(new Error('HTTP-Code: 400\nMessage: Unknown API Status Code!\nBody: "Client sent an HTTP request to an HTTPS server.\\n"'), { code: 400 });
    assert.match(describeKubeError(err, "reading the server version", "http://127.0.0.1:6443").message, /speaks HTTPS but the kubeconfig says http:\/\/; use https:\/\//);
  });
});

describe("CLI: stray arguments", function () {
  this.timeout(60_000); // each CLI run starts ts-node
  // --inventory and a scratch sandbox dir: before the fix these ran, and must start no sandbox doing so
  const sandboxDir = path.join(os.tmpdir(), `stray-args-sandbox-${process.pid}`);
  after(() => fs.rmSync(sandboxDir, { recursive: true, force: true }));
  for (const args of [["plan", "extra", "--inventory", "/nonexistent.json"], ["sandbox", "status", "extra"], ["inventory", "x", "--kubeconfig", "/nonexistent"], ["gate", "a.json", "b.json"]]) {
    it(`\`${args.join(" ")}\` is refused with exit 2`, async () => {
      const result = await runCli(args, { env: { CIDR_MIGRATION_SANDBOX_DIR: sandboxDir } });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^cidr-migration: too many arguments/);
      assert.equal(result.stdout, "");
    });
  }

  it("`sandbox frob` names the unknown subcommand", async () => {
    const result = await runCli(["sandbox", "frob"]);
    assert.equal(result.code, 2);
    assert.equal(result.stderr, "cidr-migration: sandbox frob: unknown subcommand; use up, down or status\n");
  });
});

describe("input validation: services.moveInPlace", () => {
  it("takes true or false with the recreate strategy, and is true unless set", () => {
    const values = baseValues();
    for (const moveInPlace of [true, false]) {
      values.services = { moveInPlace };
      assert.equal(validateConfig({ values } as ConfigSource).services.moveInPlace, moveInPlace);
    }
    values.services = {};
    assert.equal(validateConfig({ values } as ConfigSource).services.moveInPlace, true);
  });

  it("is false unless set with the etcd-rewrite strategy (no stand-ins there)", () => {
    const values = baseValues();
    values.services = { strategy: "etcd-rewrite" };
    values.nodeRollout = { strategy: "etcd-rewrite" };
    assert.equal(validateConfig({ values } as ConfigSource).services.moveInPlace, false);
  });

  it("refuses a value that is not true or false, naming the key and the value", () => {
    const values = baseValues();
    values.services = { moveInPlace: "yes" };
    onlyProblem(values, "services.moveInPlace", /"yes"/);
  });

  it("refuses true with the etcd-rewrite strategy, saying why and what to do", () => {
    const values = baseValues();
    values.services = { strategy: "etcd-rewrite", moveInPlace: true };
    values.nodeRollout = { strategy: "etcd-rewrite" };
    onlyProblem(values, "services.moveInPlace", /etcd rewrite moves every Service in one apiserver stop/, /set it to false/);
  });
});
