// `cidr-migration preflight` against a real control plane (etcd + kube-apiserver + kube-controller-manager of the test-bed version, on
// loopback): a clean kubeadm-shaped cluster reports facts only; each seeded problem gives its exact finding (code,
// object, path); the CLI's exit codes and JSON; a real TLS etcd; and a KCM crash that is predicted, then happens.
import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, NetworkingV1Api, V1Pod } from "@kubernetes/client-node";
import * as assert from "assert";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { Finding, FindingReport } from "../../lib/report/findings";
import { runPreflight } from "../../lib/preflight";
import { collectClusterObjects } from "../../lib/preflight/collect";
import { EtcdProcess, freePort, startEtcd } from "../testbed/etcd";
import { freshNamespace, useTestCluster } from "../testbed/fixture";
import { registerNode } from "../testbed/kubelet";
import { minorNumber, resolveTestBedVersion } from "../testbed/kubeVersion";
import { waitFor } from "../testbed/processes";
import { KUBE_VERSION } from "../testbed/seed";
import {
  controlPlaneMirrorPods,
  createRunningPod,
  kubeadmConfigMap,
  migrationConfig,
  NEW_POD_CIDR,
  NODES,
  OLD_POD_CIDR,
  OLD_SERVICE_CIDR,
  runCli,
  seedKubeadmShape,
  seedManyObjects,
  stackValues,
  writeStackFile,
} from "./preflightSeed";

type Brief = { code: string; object: string; path?: string };
const brief = (f: Finding): Brief => (f.path === undefined ? { code: f.code, object: f.object } : { code: f.code, object: f.object, path: f.path });
/** Blockers and warnings, sorted as the report sorts them. */
const problems = (r: FindingReport) => r.findings.filter((f) => f.severity !== "info").map(brief);
const infoCodes = (r: FindingReport) => r.findings.filter((f) => f.severity === "info").map((f) => f.code);
const byObjectPath = (a: { object: string; path?: string }, b: { object: string; path?: string }) => (`${a.object} ${a.path}` < `${b.object} ${b.path}` ? -1 : 1);
/** 1.33+ serves ServiceCIDR: preflight says so, and that the graph moves the default ServiceCIDR itself. */
const SERVES_SERVICE_CIDR = minorNumber() >= 33;
const CLEAN_INFO = ["APISERVER_VERSION", "ETCD_HEALTHY", "KUBEADM_CLUSTER", "POD_RANGE_CAPACITY", ...(SERVES_SERVICE_CIDR ? ["SERVICECIDR_API_PRESENT"] : []), "SERVICE_RANGE_CAPACITY", "SNAPSHOT_DIR_WRITABLE"];
const NOW = { gracePeriodSeconds: 0 };


/** This suite's controllers answer within 30 s. */
const waitForSeen = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 30_000);

describe("preflight against a real control plane", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
  let kc: KubeConfig;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  let ns: string;
  let work: string;
  const cleanups: Array<() => Promise<unknown>> = [];

  before(async function () {
    this.timeout(120_000);
    kc = cluster().kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    work = fs.mkdtempSync(path.join(os.tmpdir(), "preflight-it-"));
    await seedKubeadmShape(kc, { serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR, dnsIP: "10.96.0.10" });
    ns = await freshNamespace(kc, "apps");
  });

  // Each test seeds one problem and removes it again, so the next one starts from the clean cluster.
  afterEach(async function () {
    this.timeout(60_000);
    for (const undo of cleanups.splice(0).reverse()) await undo();
  });

  after(() => fs.rmSync(work, { recursive: true, force: true }));

  async function preflight(overrides: Record<string, unknown> = {}, allowSecretValues = false): Promise<FindingReport> {
    const config = migrationConfig(stackValues(cluster(), path.join(work, "snapshots"), overrides));
    return (await runPreflight({ config, kubeConfig: kc, etcd: {}, allowSecretValues })).report;
  }

  it("a clean kubeadm cluster: exit 0 from the CLI, facts only, the ServiceCIDR API as this version serves it", async () => {
    const stack = writeStackFile(work, "clean", stackValues(cluster(), path.join(work, "snapshots")));
    const json = await runCli(["preflight", "--config", stack, "--json"]);
    assert.strictEqual(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as FindingReport;
    assert.deepStrictEqual(problems(report), []);
    assert.deepStrictEqual(infoCodes(report).sort(), CLEAN_INFO);
    assert.strictEqual(report.exitCode, 0);
    const version = report.findings.find((f) => f.code === "APISERVER_VERSION")!;
    assert.strictEqual(version.message, `kube-apiserver ${KUBE_VERSION}; ServiceCIDR API ${SERVES_SERVICE_CIDR ? "served (networking.k8s.io/v1)" : "not served"}`);
    const table = await runCli(["preflight", "--config", stack]);
    assert.strictEqual(table.code, 0, table.stderr);
    assert.match(table.stdout, /^SEVERITY +CODE +OBJECT +PATH$/m);
    assert.ok(table.stdout.endsWith(`preflight: 0 blockers, 0 warnings, ${CLEAN_INFO.length} info: clean (exit 0)\n`), table.stdout);
  });

  it("a Prometheus config pinned to an old ClusterIP: the ConfigMap key and line", async () => {
    const svc = await core.createNamespacedService({ namespace: ns, body: { metadata: { name: "prometheus" }, spec: { selector: { app: "prometheus" }, ports: [{ port: 9090 }] } } });
    const ip = svc.spec!.clusterIP!;
    const promYml = [
      "global:",
      "  scrape_interval: 15s",
      "  evaluation_interval: 15s",
      "alerting:",
      "  alertmanagers:",
      "    - static_configs:",
      "        - targets: ['alertmanager.monitoring.svc:9093']",
      "scrape_configs:",
      "  - job_name: prometheus",
      "    static_configs:",
      "      - targets:",
      `          - http://${ip}:9090`,
      "  - job_name: node",
      "    kubernetes_sd_configs: [{ role: node }]",
    ].join("\n");
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "prometheus-config" }, data: { "prometheus.yml": promYml } } });
    cleanups.push(() => core.deleteNamespacedService({ namespace: ns, name: "prometheus" }), () => core.deleteNamespacedConfigMap({ namespace: ns, name: "prometheus-config" }));
    const report = await preflight();
    assert.deepStrictEqual(problems(report), [{ code: "HARDCODED_SERVICE_IP", object: `ConfigMap ${ns}/prometheus-config`, path: 'data["prometheus.yml"] line 12' }]);
    const f = report.findings.find((x) => x.code === "HARDCODED_SERVICE_IP")!;
    assert.strictEqual(f.message, `${ip} is in the old Service range 10.96.0.0/12 (now the ClusterIP of Service ${ns}/prometheus)`);
    assert.match(f.action, new RegExp(`prometheus\\.${ns}\\.svc`));
  });

  it("env, args and command of a Deployment, StatefulSet, DaemonSet and a bare Pod", async () => {
    const template = (env: { name: string; value: string }[], args: string[]) => ({
      metadata: { labels: { app: "x" } },
      spec: { automountServiceAccountToken: false, containers: [{ name: "app", image: "nginx", env, args }] },
    });
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: { metadata: { name: "api" }, spec: { replicas: 0, selector: { matchLabels: { app: "x" } }, template: template([{ name: "A", value: "1" }, { name: "B", value: "2" }, { name: "PEER", value: "10.244.1.17" }], []) } },
    });
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: { metadata: { name: "cache" }, spec: { replicas: 0, serviceName: "cache", selector: { matchLabels: { app: "x" } }, template: template([], ["--upstream", "http://10.96.3.3:6379"]) } },
    });
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: { metadata: { name: "agent" }, spec: { selector: { matchLabels: { app: "x" } }, template: { ...template([], []), spec: { ...template([], []).spec, nodeSelector: { "no-such-node": "true" }, containers: [{ name: "agent", image: "busybox", command: ["sh", "-c", "exec agent --dns 10.96.0.10"] }] } } } },
    });
    await createRunningPod(kc, ns, { metadata: { name: "debug" }, spec: { containers: [{ name: "sh", image: "busybox", env: [{ name: "TARGET", value: "10.96.9.9" }] }] } }, "10.244.1.40");
    cleanups.push(
      () => apps.deleteNamespacedDeployment({ namespace: ns, name: "api" }),
      () => apps.deleteNamespacedStatefulSet({ namespace: ns, name: "cache" }),
      () => apps.deleteNamespacedDaemonSet({ namespace: ns, name: "agent" }),
      () => core.deleteNamespacedPod({ namespace: ns, name: "debug", ...NOW }),
    );
    const report = await preflight();
    assert.deepStrictEqual(problems(report).sort(byObjectPath), [
      { code: "HARDCODED_SERVICE_IP", object: `DaemonSet ${ns}/agent`, path: "spec.template.spec.containers[0].command[2]" },
      { code: "HARDCODED_POD_IP", object: `Deployment ${ns}/api`, path: "spec.template.spec.containers[0].env[2].value" },
      { code: "HARDCODED_SERVICE_IP", object: `Pod ${ns}/debug`, path: "spec.containers[0].env[0].value" },
      { code: "BARE_POD_BLOCKS_DRAIN", object: `Pod ${ns}/debug` },
      { code: "HARDCODED_SERVICE_IP", object: `StatefulSet ${ns}/cache`, path: "spec.template.spec.containers[0].args[1]" },
    ]);
    const dns = report.findings.find((f) => f.object === `DaemonSet ${ns}/agent`)!;
    assert.match(dns.message, /10\.96\.0\.10 is in the old Service range 10\.96\.0\.0\/12 \(now the ClusterIP of Service kube-system\/kube-dns\)/);
  });

  it("Ingress and Service annotations", async () => {
    await kc.makeApiClient(NetworkingV1Api).createNamespacedIngress({
      namespace: ns,
      body: {
        metadata: { name: "web", annotations: { "nginx.ingress.kubernetes.io/whitelist-source-range": "192.168.0.0/16,10.244.0.0/16" } },
        spec: { rules: [{ host: "web.example.com", http: { paths: [{ path: "/", pathType: "Prefix", backend: { service: { name: "web", port: { number: 80 } } } }] } }] },
      },
    });
    await core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: "legacy", annotations: { "example.com/upstream": "tcp://10.96.44.44:5432" } }, spec: { selector: { app: "legacy" }, ports: [{ port: 80 }] } },
    });
    cleanups.push(() => kc.makeApiClient(NetworkingV1Api).deleteNamespacedIngress({ namespace: ns, name: "web" }), () => core.deleteNamespacedService({ namespace: ns, name: "legacy" }));
    assert.deepStrictEqual(problems(await preflight()), [
      { code: "HARDCODED_POD_CIDR", object: `Ingress ${ns}/web`, path: 'metadata.annotations["nginx.ingress.kubernetes.io/whitelist-source-range"]' },
      { code: "HARDCODED_SERVICE_IP", object: `Service ${ns}/legacy`, path: 'metadata.annotations["example.com/upstream"]' },
    ]);
  });

  it("hand-made Endpoints and EndpointSlices of a selector-less Service (the mirrored slice is not reported twice)", async () => {
    await core.createNamespacedService({ namespace: ns, body: { metadata: { name: "external-db" }, spec: { ports: [{ name: "pg", port: 5432 }] } } });
    await core.createNamespacedEndpoints({
      namespace: ns,
      body: { metadata: { name: "external-db" }, subsets: [{ addresses: [{ ip: "192.168.9.9" }, { ip: "10.244.77.7" }], ports: [{ name: "pg", port: 5432 }] }] },
    });
    await custom.createNamespacedCustomObject({
      group: "discovery.k8s.io",
      version: "v1",
      namespace: ns,
      plural: "endpointslices",
      body: {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: { name: "external-db-manual", labels: { "kubernetes.io/service-name": "external-db" } },
        addressType: "IPv4",
        endpoints: [{ addresses: ["10.244.77.8"] }],
        ports: [{ name: "pg", port: 5432 }],
      },
    });
    cleanups.push(
      () => core.deleteNamespacedService({ namespace: ns, name: "external-db" }),
      () => core.deleteNamespacedEndpoints({ namespace: ns, name: "external-db" }).catch(() => undefined),
      () => custom.deleteNamespacedCustomObject({ group: "discovery.k8s.io", version: "v1", namespace: ns, plural: "endpointslices", name: "external-db-manual" }),
    );
    // KCM's EndpointSlice mirroring controller copies the hand-made Endpoints into a slice of its own.
    await waitForSeen("the mirrored EndpointSlice", async () => {
      const list = (await custom.listNamespacedCustomObject({ group: "discovery.k8s.io", version: "v1", namespace: ns, plural: "endpointslices", labelSelector: "endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io" })) as { items: unknown[] };
      return list.items.length > 0 ? true : undefined;
    });
    const report = await preflight();
    assert.deepStrictEqual(problems(report), [
      { code: "HARDCODED_POD_IP", object: `EndpointSlice ${ns}/external-db-manual`, path: "endpoints[0].addresses[0]" },
      { code: "HARDCODED_POD_IP", object: `Endpoints ${ns}/external-db`, path: "subsets[0].addresses[1].ip" },
    ]);
    assert.ok(report.findings.some((f) => f.code === "SELECTORLESS_SERVICE" && f.object === `Service ${ns}/external-db`));
  });

  it("a Secret: a count only, and the paths with --allow-secret-values", async () => {
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: "db-creds" }, stringData: { url: "postgres://app:hunter2@10.96.5.6:5432/app", replica: "10.244.8.8" } } });
    cleanups.push(() => core.deleteNamespacedSecret({ namespace: ns, name: "db-creds" }));
    const counted = await preflight();
    assert.deepStrictEqual(problems(counted), [{ code: "HARDCODED_IN_SECRET", object: `Secret ${ns}/db-creds` }]);
    assert.strictEqual(counted.findings.find((f) => f.code === "HARDCODED_IN_SECRET")!.message, "holds 2 addresses in the old Service or Pod range (values and keys not shown)");
    const text = JSON.stringify(counted);
    assert.ok(!text.includes("10.96.5.6") && !text.includes("hunter2") && !text.includes('"url"'), "no value or key of the Secret is shown");
    const shown = await preflight({}, true);
    assert.deepStrictEqual(problems(shown), [
      { code: "HARDCODED_POD_IP", object: `Secret ${ns}/db-creds`, path: 'data["replica"]' },
      { code: "HARDCODED_SERVICE_IP", object: `Secret ${ns}/db-creds`, path: 'data["url"]' },
    ]);
  });

  it("Services that need a decision: LoadBalancer, NodePort, a pinned ClusterIP, externalIPs", async () => {
    const create = (name: string, spec: Record<string, unknown>) =>
      core.createNamespacedService({ namespace: ns, body: { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80 }], ...spec } } });
    await create("lb", { type: "LoadBalancer" });
    await create("np", { type: "NodePort", ports: [{ port: 80, nodePort: 30080 }] });
    await create("pinned", { clusterIP: "10.96.100.100" });
    await create("ext", { externalIPs: ["10.244.250.1"] });
    for (const name of ["lb", "np", "pinned", "ext"]) cleanups.push(() => core.deleteNamespacedService({ namespace: ns, name }));
    const report = await preflight();
    assert.deepStrictEqual(problems(report), [
      { code: "LOADBALANCER_NEEDS_CONSENT", object: `Service ${ns}/lb` },
      { code: "EXTERNAL_IP_IN_OLD_RANGE", object: `Service ${ns}/ext`, path: "spec.externalIPs[0]" },
      { code: "PINNED_CLUSTER_IP", object: `Service ${ns}/pinned`, path: "spec.clusterIP" },
    ]);
    assert.match(report.findings.find((f) => f.code === "NODEPORT_SERVICE" && f.object === `Service ${ns}/np`)!.message, /same nodePorts \(30080\)/);
    const consent = await preflight({ services: { allowLoadBalancerRecreate: true } });
    assert.deepStrictEqual(problems(consent).map((f) => f.code), ["EXTERNAL_IP_IN_OLD_RANGE", "LOADBALANCER_RECREATE", "PINNED_CLUSTER_IP"]);
  });

  it("a PodDisruptionBudget that allows no eviction, as KCM's disruption controller computes it", async () => {
    const pod = (name: string, app: string): V1Pod => ({ metadata: { name, labels: { app } }, spec: { nodeName: "worker-1", containers: [{ name: "app", image: "nginx" }] } });
    await createRunningPod(kc, ns, pod("solo", "solo"), "10.244.1.50");
    await createRunningPod(kc, ns, pod("pair-a", "pair"), "10.244.1.51");
    await createRunningPod(kc, ns, pod("pair-b", "pair"), "10.244.1.52");
    for (const app of ["solo", "pair"]) {
      await custom.createNamespacedCustomObject({
        group: "policy",
        version: "v1",
        namespace: ns,
        plural: "poddisruptionbudgets",
        body: { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name: app }, spec: { minAvailable: 1, selector: { matchLabels: { app } } } },
      });
      cleanups.push(() => custom.deleteNamespacedCustomObject({ group: "policy", version: "v1", namespace: ns, plural: "poddisruptionbudgets", name: app }));
    }
    for (const name of ["solo", "pair-a", "pair-b"]) cleanups.push(() => core.deleteNamespacedPod({ namespace: ns, name, ...NOW }));
    await waitForSeen("PDB status from the disruption controller", async () => {
      const list = (await custom.listNamespacedCustomObject({ group: "policy", version: "v1", namespace: ns, plural: "poddisruptionbudgets" })) as { items: { status?: { expectedPods?: number; currentHealthy?: number } }[] };
      return list.items.length === 2 && list.items.every((p) => (p.status?.currentHealthy ?? 0) > 0) ? true : undefined;
    });
    const report = await preflight();
    assert.deepStrictEqual(problems(report), [
      { code: "PDB_BLOCKS_DRAIN", object: `PodDisruptionBudget ${ns}/solo` },
      { code: "BARE_POD_BLOCKS_DRAIN", object: `Pod ${ns}/pair-a` },
      { code: "BARE_POD_BLOCKS_DRAIN", object: `Pod ${ns}/pair-b` },
      { code: "BARE_POD_BLOCKS_DRAIN", object: `Pod ${ns}/solo` },
    ]);
    assert.match(report.findings[0].message, /it allows 0 disruptions now \(1 healthy, 1 required, 1 expected\)/);
  });

  it("control-plane nodes whose static pods disagree on the range flags", async () => {
    const cp2 = { name: "cp-2", internalIP: "192.168.50.12", controlPlane: true };
    await registerNode(kc, { name: cp2.name, internalIP: cp2.internalIP, labels: { "node-role.kubernetes.io/master": "" } });
    const [apiserver, kcm] = controlPlaneMirrorPods(cp2, { serviceCidr: "10.100.0.0/16", podCidr: OLD_POD_CIDR });
    kcm.spec!.containers[0].command = kcm.spec!.containers[0].command!.map((t) => (t.startsWith("--service-cluster-ip-range=") ? `--service-cluster-ip-range=${OLD_SERVICE_CIDR}` : t.replace("--node-cidr-mask-size=24", "--node-cidr-mask-size=25")));
    for (const body of [apiserver, kcm]) {
      await core.createNamespacedPod({ namespace: "kube-system", body });
      cleanups.push(() => core.deleteNamespacedPod({ namespace: "kube-system", name: body.metadata!.name!, ...NOW }));
    }
    cleanups.push(() => core.deleteNode({ name: cp2.name }));
    const nodes = [...NODES, cp2].map((n) => ({ name: n.name, host: n.internalIP, role: n.controlPlane ? "control-plane" : "worker" }));
    const report = await preflight({ nodes });
    assert.deepStrictEqual(problems(report), [
      { code: "CONTROL_PLANE_RANGE_FLAGS_DIFFER", object: "kube-apiserver static pods", path: "--service-cluster-ip-range" },
      { code: "CONTROL_PLANE_RANGE_FLAGS_DIFFER", object: "kube-controller-manager static pods", path: "--node-cidr-mask-size" },
      { code: "RANGE_FLAG_MISMATCH", object: "Pod kube-system/kube-apiserver-cp-2", path: "--service-cluster-ip-range" },
    ]);
    assert.strictEqual(report.findings[0].message, "control-plane nodes disagree on --service-cluster-ip-range: cp-1=10.96.0.0/12, cp-2=10.100.0.0/16");
    // the same cluster, with cp-2 missing from the config
    assert.ok(problems(await preflight()).some((f) => f.code === "CONTROL_PLANE_NODE_NOT_CONFIGURED" && f.object === "Node cp-2"));
  });

  it("not a kubeadm control plane: no kubeadm-config, no static pods", async () => {
    await core.deleteNamespacedConfigMap({ namespace: "kube-system", name: "kubeadm-config" });
    const mirrors = controlPlaneMirrorPods(NODES[0], { serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
    for (const m of mirrors) await core.deleteNamespacedPod({ namespace: "kube-system", name: m.metadata!.name!, ...NOW });
    cleanups.push(
      () => core.createNamespacedConfigMap({ namespace: "kube-system", body: kubeadmConfigMap({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR }) }),
      ...mirrors.map((body) => () => core.createNamespacedPod({ namespace: "kube-system", body })),
    );
    assert.deepStrictEqual(problems(await preflight()), [
      { code: "CONTROL_PLANE_PODS_MISSING", object: "Namespace kube-system" },
      { code: "NOT_KUBEADM", object: "ConfigMap kube-system/kubeadm-config" },
      // on 1.33 no static pod shows whether the apiservers dual-write the legacy allocator, so preflight fails closed
      ...(minorNumber() === 33 ? [{ code: "SERVICE_ALLOCATOR_DUAL_WRITE", object: "kube-apiserver", path: "--feature-gates" }] : []),
    ]);
  });

  it("a StatefulSet with PVCs gives the rebuild advice with its reason", async () => {
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: "pg" },
        spec: {
          replicas: 0,
          serviceName: "pg",
          selector: { matchLabels: { app: "pg" } },
          template: { metadata: { labels: { app: "pg" } }, spec: { containers: [{ name: "pg", image: "postgres" }] } },
          volumeClaimTemplates: [{ metadata: { name: "data" }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } }],
        },
      },
    });
    for (const i of [0, 1]) {
      await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: { metadata: { name: `data-pg-${i}` }, spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } } } });
      cleanups.push(() => core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: `data-pg-${i}` }));
    }
    cleanups.push(() => apps.deleteNamespacedStatefulSet({ namespace: ns, name: "pg" }));
    const report = await preflight();
    assert.deepStrictEqual(problems(report), [{ code: "STATEFULSET_WITH_PVCS", object: `StatefulSet ${ns}/pg` }]);
    assert.match(report.findings[0].message, /keeps state on 2 PVCs \(templates data\)/);
    assert.strictEqual(report.findings.find((f) => f.code === "CONSIDER_REBUILD")!.message, `the runbook's advice applies: 1 StatefulSet with PVCs (${ns}/pg)`);
  });

  it("a new Service range too small for the cluster's Services", async () => {
    await core.createNamespacedService({ namespace: ns, body: { metadata: { name: "extra" }, spec: { selector: { app: "extra" }, ports: [{ port: 80 }] } } });
    cleanups.push(() => core.deleteNamespacedService({ namespace: ns, name: "extra" }));
    // kubernetes, kube-dns and extra need three addresses; a /30 has two
    const report = await preflight({ serviceCidr: { from: OLD_SERVICE_CIDR, to: "10.112.0.0/30" } });
    assert.deepStrictEqual(problems(report), [{ code: "SERVICE_RANGE_TOO_SMALL", object: "cluster" }]);
    assert.strictEqual(report.findings[0].message, "3 Services need a ClusterIP but the new Service range 10.112.0.0/30 has 2 usable addresses");
  });

  describe("through the CLI: exit codes 1, 2, 3 and etcd over TLS", () => {
    let etcd: EtcdProcess;
    before(async function () {
      this.timeout(60_000);
      etcd = await startEtcd({ tls: true });
    });
    after(async () => etcd?.stop());

    const secure = { secure: "v1:placeholder:AAAA" };
    const tlsValues = () => stackValues(cluster(), path.join(work, "snapshots"), { etcd: { endpoints: [etcd.endpoint], caCert: secure, cert: secure, key: secure } });

    it("secure: etcd credentials the CLI cannot decrypt: the health check is skipped and says why (exit 1)", async () => {
      const result = await runCli(["preflight", "--config", writeStackFile(work, "tls", tlsValues()), "--json"]);
      assert.strictEqual(result.code, 1, result.stderr);
      const report = JSON.parse(result.stdout) as FindingReport;
      assert.deepStrictEqual(problems(report), [{ code: "ETCD_CHECK_SKIPPED", object: `etcd ${etcd.endpoint}` }]);
      assert.match(report.findings[0].message, /cidr-migration:etcd\.caCert, cidr-migration:etcd\.cert, cidr-migration:etcd\.key are secure: values the CLI cannot decrypt/);
    });

    it("--etcd-ca/--etcd-cert/--etcd-key: a real TLS etcd is checked and healthy (exit 0)", async () => {
      const tls = etcd.tls!;
      const result = await runCli(["preflight", "--config", writeStackFile(work, "tls", tlsValues()), "--json", "--etcd-ca", tls.caCertPath, "--etcd-cert", tls.certPath, "--etcd-key", tls.keyPath]);
      assert.strictEqual(result.code, 0, result.stdout + result.stderr);
      const healthy = (JSON.parse(result.stdout) as FindingReport).findings.find((f) => f.code === "ETCD_HEALTHY")!;
      assert.match(healthy.message, new RegExp(`^1 of 1 endpoints answer; etcd ${resolveTestBedVersion().etcd.replace(/\./g, "\\.")}; largest database`));
    });

    it("a blocker gives exit 1 and the table names it", async () => {
      const notADir = path.join(work, "snapshots-is-a-file");
      fs.writeFileSync(notADir, "x");
      const stack = writeStackFile(work, "blocked", stackValues(cluster(), path.join(work, "snapshots"), { snapshot: { directory: notADir, trigger: "t" } }));
      const result = await runCli(["preflight", "--config", stack]);
      assert.strictEqual(result.code, 1, result.stderr);
      assert.match(result.stdout, new RegExp(`^BLOCKER +SNAPSHOT_DIR_NOT_WRITABLE +snapshot directory ${notADir}$`, "m"));
      assert.match(result.stdout, /^ {4}it exists but is not a directory$/m);
      assert.match(result.stdout, new RegExp(`preflight: 1 blocker, 0 warnings, ${CLEAN_INFO.length - 1} info: findings need attention \\(exit 1\\)\n$`));
    });

    it("an unreachable etcd and a snapshot directory that is a file are blockers", async () => {
      const closed = await freePort();
      const notADir = path.join(work, "a-file");
      fs.writeFileSync(notADir, "x");
      const report = await preflight({ etcd: { endpoints: [`http://127.0.0.1:${closed}`] }, snapshot: { directory: notADir, trigger: "t" } });
      assert.deepStrictEqual(problems(report), [
        { code: "ETCD_UNREACHABLE", object: `etcd http://127.0.0.1:${closed}` },
        { code: "SNAPSHOT_DIR_NOT_WRITABLE", object: `snapshot directory ${notADir}` },
      ]);
    });

    it("invalid input exits 2 with one line, before any cluster call", async () => {
      const stack = writeStackFile(work, "bad", stackValues(cluster(), path.join(work, "snapshots"), { serviceCidr: { from: OLD_SERVICE_CIDR, to: "10.112.0.1/12" } }));
      const result = await runCli(["preflight", "--config", stack]);
      assert.strictEqual(result.code, 2);
      assert.strictEqual(result.stdout, "");
      assert.deepStrictEqual(result.stderr.trimEnd().split("\n"), ['cidr-migration: cidr-migration:serviceCidr.to: "10.112.0.1/12" has host bits set: did you mean 10.112.0.0/12?']);
      const missing = await runCli(["preflight", "--config", writeStackFile(work, "tls", tlsValues()), "--etcd-ca", path.join(work, "nope.crt")]);
      assert.strictEqual(missing.code, 2);
      assert.match(missing.stderr, /^cidr-migration: --etcd-ca .*nope\.crt: cannot read the file \(ENOENT\)/);
    });

    it("an unreachable apiserver exits 3 with one line", async () => {
      const closed = await freePort();
      const kubeconfig = path.join(work, "closed.kubeconfig");
      fs.writeFileSync(kubeconfig, fs.readFileSync(cluster().kubeconfigPath, "utf8").replace(/server: https:\/\/127\.0\.0\.1:\d+/, `server: https://127.0.0.1:${closed}`));
      const result = await runCli(["preflight", "--config", writeStackFile(work, "clean", stackValues(cluster(), path.join(work, "snapshots"))), "--kubeconfig", kubeconfig]);
      assert.strictEqual(result.code, 3, result.stderr);
      assert.strictEqual(result.stdout, "");
      assert.match(result.stderr, new RegExp(`^cidr-migration: cannot reach the cluster at https://127\\.0\\.0\\.1:${closed} while .* \\(ECONNREFUSED\\); check the kubeconfig's server and that the apiserver is up\\n$`));
    });
  });

  // Mocha runs a suite's own tests before its nested suites: this one comes last because it leaves hundreds of
  // objects behind, which the cluster's teardown removes.
  describe("at scale", () => {
    it("hundreds of objects (300 ConfigMaps, 200 Services, 100 Deployments): every hard-coded address, paged lists", async function () {
      this.timeout(300_000);
      const bulk = await freshNamespace(kc, "bulk");
      const expected = await seedManyObjects(kc, bulk, { configMaps: 300, services: 200, deployments: 100, hardCodedEvery: 10 });
      const report = await preflight();
      const hardCoded = problems(report).filter((f) => f.code === "HARDCODED_SERVICE_IP");
      assert.deepStrictEqual(hardCoded.map(({ object, path: p }) => ({ object, path: p })).sort(byObjectPath), expected.sort(byObjectPath));
      assert.strictEqual(expected.length, 40);
      assert.deepStrictEqual(problems(report).filter((f) => f.code !== "HARDCODED_SERVICE_IP"), [{ code: "MANY_FIXED_IP_DEPENDENCIES", object: "cluster" }]);
      // pages of 50 see exactly what one page of 500 sees
      const [small, large] = await Promise.all([collectClusterObjects(kc, { pageSize: 50 }), collectClusterObjects(kc)]);
      for (const kind of ["configMaps", "services", "deployments", "pods", "nodes"] as const) {
        assert.deepStrictEqual(small[kind].map((o) => o.metadata?.uid).sort(), large[kind].map((o) => o.metadata?.uid).sort(), kind);
      }
      assert.ok(small.configMaps.length > 300 && small.services.length > 200);
    });
  });
});

describe("preflight predicts the kube-controller-manager crash, and KCM agrees", function () {
  const cluster = useTestCluster({ serviceCidr: OLD_SERVICE_CIDR, podCidr: OLD_POD_CIDR });
  let kc: KubeConfig;
  let work: string;

  before(async function () {
    this.timeout(60_000);
    kc = cluster().kubeConfig();
    work = fs.mkdtempSync(path.join(os.tmpdir(), "preflight-kcm-"));
    const core = kc.makeApiClient(CoreV1Api);
    // cp-1 and worker-1 already hold subnets of the new range, as after the rollout; worker-9 is in no config.
    for (const [i, n] of NODES.entries()) {
      await core.createNode({ body: { metadata: { name: n.name }, spec: { podCIDR: `10.48.${i}.0/24`, podCIDRs: [`10.48.${i}.0/24`] } } });
    }
    await registerNode(kc, { name: "worker-9", internalIP: "192.168.50.19" });
    await waitForSeen("worker-9's podCIDR", async () => (await core.readNode({ name: "worker-9" })).spec?.podCIDR);
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  const crashFindings = async () => {
    const config = migrationConfig(stackValues(cluster(), path.join(work, "snapshots")));
    const { report } = await runPreflight({ config, kubeConfig: kc, etcd: {} });
    return report.findings.filter((f) => f.code === "KCM_CRASH_PREDICTED");
  };

  it("names the Node the rollout leaves in the old range; KCM on the new --cluster-cidr then exits at start", async () => {
    const podCIDR = (await kc.makeApiClient(CoreV1Api).readNode({ name: "worker-9" })).spec!.podCIDR!;
    const found = await crashFindings();
    assert.deepStrictEqual(found.map(brief), [{ code: "KCM_CRASH_PREDICTED", object: "Node worker-9", path: "spec.podCIDRs[0]" }]);
    assert.match(found[0].message, new RegExp(`^podCIDR ${podCIDR.replace(/\./g, "\\.")} lies outside the new --cluster-cidr 10\\.48\\.0\\.0/16`));
    await cluster().restartControllerManager({ clusterCidr: NEW_POD_CIDR });
    const code = await cluster().waitControllerManagerExit();
    assert.notStrictEqual(code, 0);
    assert.match(cluster().controllerManagerLog(), /out the range of cluster cidr/);
  });

  it("with that Node gone: no prediction, and KCM on the new --cluster-cidr runs", async () => {
    await kc.makeApiClient(CoreV1Api).deleteNode({ name: "worker-9" });
    await waitForSeen("worker-9 deleted", async () => ((await kc.makeApiClient(CoreV1Api).listNode()).items.some((n) => n.metadata?.name === "worker-9") ? undefined : true));
    assert.deepStrictEqual(await crashFindings(), []);
    await cluster().restartControllerManager({ clusterCidr: NEW_POD_CIDR, serviceClusterIpRange: OLD_SERVICE_CIDR });
    await cluster().waitControllerManagerHealthy();
    assert.strictEqual(cluster().controllerManagerExited(), false);
  });
});

