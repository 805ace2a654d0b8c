import * as assert from "node:assert/strict";
import { validateConfig } from "../../../lib/config/config";
import { MigrationConfig } from "../../../lib/config/migrationConfig";
import { preflightFindings } from "../../../lib/preflight";
import { PreflightInput } from "../../../lib/preflight/checkInput";
import { ClusterObjects, emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { checkOldNodeAddresses } from "../../../lib/preflight/oldNodeAddresses";
import { Finding } from "../../../lib/report/findings";
import { baseValues } from "../../support/stackValues";

/** The references scan for node address changes over a small hand-built cluster. */

function config(nodeAddresses: unknown[], edit: (values: Record<string, unknown>) => void = () => {}): MigrationConfig {
  const values = baseValues();
  values.nodeAddresses = nodeAddresses;
  edit(values);
  return validateConfig({ values }, { planOnly: true });
}

const CHANGES = [
  { name: "cp-1", from: "10.0.0.11", to: "10.1.0.11" },
  { name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" },
];

function input(cluster: Partial<ClusterObjects>, cfg = config(CHANGES), allowSecretValues = false): PreflightInput {
  return { config: cfg, cluster: { ...emptyClusterObjects(), serverVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" }, ...cluster }, allowSecretValues };
}

/** A small cluster: one reference of each kind, plus places that must not be reported. */
function cluster(): Partial<ClusterObjects> {
  return {
    configMaps: [
      // kube-proxy is left out of the old-range scan (the migration rewrites it) but may name a control-plane address
      { metadata: { namespace: "kube-system", name: "kube-proxy" }, data: { "kubeconfig.conf": "clusters:\n- cluster:\n    server: https://10.0.0.11:6443\n" } },
      { metadata: { namespace: "monitoring", name: "scrape" }, data: { "targets.yaml": "- 10.0.0.21:9100\n- 10.0.0.210:9100\n- 10.0.0.22:9100\n" } },
      { metadata: { namespace: "net", name: "allow" }, data: { wide: "10.0.0.0/8", narrow: "10.0.0.0/24" } },
    ],
    nodes: [
      { metadata: { name: "worker-1", annotations: { "projectcalico.org/IPv4Address": "10.0.0.21/24" } }, status: { addresses: [{ type: "InternalIP", address: "10.0.0.21" }] } },
    ],
    services: [
      { metadata: { namespace: "default", name: "kubernetes" }, spec: { clusterIP: "10.96.0.1" } },
      { metadata: { namespace: "web", name: "ingress" }, spec: { selector: { app: "ingress" }, externalIPs: ["10.0.0.21"] } },
    ],
    endpoints: [{ metadata: { namespace: "default", name: "kubernetes" }, subsets: [{ addresses: [{ ip: "10.0.0.11" }] }] }],
    pods: [
      {
        metadata: { namespace: "kube-system", name: "etcd-cp-1", labels: { component: "etcd", tier: "control-plane" }, annotations: { "kubernetes.io/config.mirror": "h" } },
        spec: { containers: [{ name: "etcd", command: ["etcd", "--advertise-client-urls=https://10.0.0.11:2379"] }] },
      },
      { metadata: { namespace: "app", name: "client" }, spec: { containers: [{ name: "c", env: [{ name: "API", value: "https://10.0.0.11:6443" }] }] } },
    ],
    secrets: [{ metadata: { namespace: "app", name: "creds" }, data: { url: Buffer.from("postgres://10.0.0.21:5432/db").toString("base64") } }],
  };
}

const brief = (fs: Finding[]) =>
  fs.map((f) => `${f.code} ${f.object}${f.path ? ` ${f.path}` : ""}`).sort();

describe("lib/preflight oldNodeAddresses", () => {
  it("finds nothing and does nothing when no node address changes", () => {
    assert.deepEqual(checkOldNodeAddresses(input(cluster(), config([]))), []);
  });

  it("lists every other place holding an old node address, with the object and the path", () => {
    const findings = checkOldNodeAddresses(input(cluster()));
    assert.deepEqual(brief(findings), [
      `OLD_NODE_CIDR ConfigMap net/allow data["narrow"]`,
      `OLD_NODE_IP ConfigMap kube-system/kube-proxy data["kubeconfig.conf"] line 3`,
      `OLD_NODE_IP ConfigMap monitoring/scrape data["targets.yaml"] line 1`,
      `OLD_NODE_IP Node worker-1 metadata.annotations["projectcalico.org/IPv4Address"]`,
      `OLD_NODE_IP Pod app/client spec.containers[0].env[0].value`,
      `OLD_NODE_IP Service web/ingress spec.externalIPs[0]`,
      "OLD_NODE_IP_IN_SECRET Secret app/creds",
    ]);
    assert.ok(findings.every((f) => f.severity === "warning" && f.action.length > 0));
  });

  it("says which node's address it is and what to do", () => {
    const findings = checkOldNodeAddresses(input(cluster()));
    const scrape = findings.find((f) => f.object === "ConfigMap monitoring/scrape")!;
    assert.equal(scrape.message, "10.0.0.21 is node worker-1's old address (it moves to 10.1.0.21)");
    assert.match(scrape.action, /replace it with 10\.1\.0\.21, or refer to the node by name/);
    const annotation = findings.find((f) => f.object === "Node worker-1")!;
    assert.match(annotation.action, /the run restarts the node's CNI agent once 10\.0\.0\.21 is gone \(step address-agents\), which writes projectcalico\.org\/IPv4Address again with 10\.1\.0\.21, and verify checks it/);
    const narrow = findings.find((f) => f.code === "OLD_NODE_CIDR")!;
    assert.match(narrow.message, /10\.0\.0\.0\/24 covers node cp-1's old address 10\.0\.0\.11 but not its new one 10\.1\.0\.11/);
    assert.match(narrow.action, /add 10\.1\.0\.11\/32/);
  });

  it("shows where in a Secret only with --allow-secret-values", () => {
    const findings = checkOldNodeAddresses(input(cluster(), config(CHANGES), true));
    const secret = findings.filter((f) => f.object === "Secret app/creds");
    assert.deepEqual(brief(secret), [`OLD_NODE_IP Secret app/creds data["url"]`]);
  });

  it("matches IPv6 node addresses as /128", () => {
    const cfg = config([{ name: "worker-1", from: "fd00:1::21", to: "fd00:2::21" }], (v) => {
      v.serviceCidr = { from: "fd00:10:96::/112", to: "fd00:10:97::/112" };
      v.podCidr = { from: "fd00:244::/56", to: "fd00:48::/56", nodeMaskSize: 64 };
      v.etcd = { endpoints: ["https://[fd00:1::11]:2379"], caCert: { secure: "v1:ca" } };
      v.nodes = [
        { name: "cp-1", host: "fd00:1::11", role: "control-plane" },
        { name: "worker-1", host: "fd00:1::21", role: "worker" },
      ];
    });
    const objects = { configMaps: [{ metadata: { namespace: "app", name: "peers" }, data: { peers: "[fd00:1::21]:7946 [fd00:1::211]:7946 fd00:1:0::21" } }] };
    const findings = checkOldNodeAddresses(input(objects, cfg));
    assert.deepEqual(findings.map((f) => f.message), [
      "fd00:1::21 is node worker-1's old address (it moves to fd00:2::21)",
      "fd00:1:0::21 is node worker-1's old address (it moves to fd00:2::21)",
    ]);
  });

  it("is one of the preflight checks", () => {
    const codes = preflightFindings(input(cluster())).map((f) => f.code);
    assert.ok(codes.includes("OLD_NODE_IP") && codes.includes("OLD_NODE_IP_IN_SECRET"), JSON.stringify(codes));
  });

  it("addresses alone (no serviceCidr or podCidr): the same references, the versions, a DNS Service with one pod while a worker drains; no check of a range", () => {
    const alone = config(CHANGES, (v) => { delete v.serviceCidr; delete v.podCidr; });
    const withDns: Partial<ClusterObjects> = {
      ...cluster(),
      services: [...cluster().services!, { metadata: { namespace: "kube-system", name: "kube-dns" }, spec: { clusterIP: "10.96.0.10", selector: { "k8s-app": "kube-dns" } } }],
      pods: [...cluster().pods!, { metadata: { namespace: "kube-system", name: "coredns-1", labels: { "k8s-app": "kube-dns" } }, spec: { containers: [] }, status: { conditions: [{ type: "Ready", status: "True" }] } }],
    };
    const both = [preflightFindings(input(withDns)), preflightFindings(input(withDns, alone))].map((fs) => new Set(fs.map((f) => f.code)));
    const [ranged, addressesOnly] = both;
    for (const code of ["OLD_NODE_IP", "OLD_NODE_IP_IN_SECRET", "APISERVER_VERSION", "DNS_SINGLE_REPLICA"]) assert.ok(addressesOnly.has(code), `${code} in ${[...addressesOnly]}`);
    for (const code of ["SERVICE_RANGE_CAPACITY", "POD_RANGE_CAPACITY"]) assert.ok(ranged.has(code) && !addressesOnly.has(code), code);
  });
});
