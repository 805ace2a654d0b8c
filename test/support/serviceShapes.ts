// Every Service shape the Service mover must carry across, seeded onto the real test bed from the real-world dumps
// in test/fixtures/services, plus what hangs off them (hand-made Endpoints, objects owned by a Service, a Service
// owned by another object), and a field-by-field comparison of a namespace before and after a move.
// Shared by test/integration/serviceRecreation.test.ts, serviceFaults.test.ts and bench/services.bench.ts.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { KubeObject, KubeRest, paths } from "../../lib/serviceMove/kubeRest";

const FIXTURES = path.join(__dirname, "..", "fixtures", "services");
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function fixture(file: string): KubeObject[] {
  const text = fs.readFileSync(path.join(FIXTURES, file), "utf8");
  return parseAllDocuments(text).map((d) => d.toJS()).flatMap((doc) => (doc.kind === "List" ? doc.items : [doc]));
}

/** A dump turned into a create body: server fields and status dropped, the namespace set, no ClusterIP (allocated). */
function asCreate(object: KubeObject, namespace: string, name?: string): KubeObject {
  const copy = structuredClone(object);
  const meta = copy.metadata ?? {};
  for (const key of ["uid", "resourceVersion", "creationTimestamp", "selfLink", "managedFields"]) delete meta[key];
  meta.namespace = namespace;
  if (name) meta.name = name;
  copy.metadata = meta;
  delete copy.status;
  const spec = (copy.spec ?? {}) as Record<string, unknown>;
  if (spec.clusterIP !== "None") {
    delete spec.clusterIP;
    delete spec.clusterIPs;
  }
  copy.apiVersion = "v1";
  return copy;
}

function lastOctets(ip: string): string {
  return ip.split(".").slice(2).join(".");
}

/** The offset-keeping map the plan uses between two /16 ranges: 10.96.a.b → 10.100.a.b. */
export function mapIp(ip: string, toPrefix: string): string {
  return `${toPrefix}.${lastOctets(ip)}`;
}

export interface SeededShapes {
  namespace: string;
  /** Services that hold a ClusterIP in the old range: name → old IP. */
  moving: Record<string, string>;
  /** Services that hold no ClusterIP (headless, ExternalName). */
  untouched: string[];
  /** Annotations each moving Service must carry after the move, given its new IP. */
  expectedAnnotations(name: string, newIp: string): Record<string, string> | undefined;
}

export interface SeedOptions {
  /** 0..19: keeps nodePorts and pinned IPs of several seeded namespaces apart. */
  index: number;
  /** First two octets of the old range, e.g. "10.96". */
  oldPrefix: string;
  /** Also run one Ready pod behind Service `web` on this node (a simulated kubelet). */
  readyPodOnNode?: string;
}

/** Creates the namespace and every shape in it. */
export async function seedServiceShapes(rest: KubeRest, namespace: string, opts: SeedOptions): Promise<SeededShapes> {
  const i = opts.index;
  const nodePort = (base: number) => base + i * 7;
  await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
  const create = (body: KubeObject) => rest.create(paths.services(namespace), body);

  const [popeyeNodePort, popeyeClusterIp] = fixture("popeye-svc-list-duplicate-clusterips.yaml");
  const web = asCreate(popeyeClusterIp, namespace, "web");
  web.metadata!.labels = { app: "web", tier: "front" };
  web.metadata!.annotations = { "example.com/owner": "team-a" };
  (web.spec as Record<string, unknown>).selector = { app: "web" };

  const nodeport = asCreate(popeyeNodePort, namespace, "nodeport");
  (nodeport.spec as { ports: Array<{ nodePort: number }> }).ports[0].nodePort = nodePort(30400);

  const [lbDump] = fixture("lb-svc-dump-etp-local-healthchecknodeport-finalizer.yaml");
  const lb = asCreate(lbDump, namespace, "lb");
  const lbSpec = lb.spec as { ports: Array<{ nodePort: number }>; healthCheckNodePort: number; loadBalancerIP?: string; loadBalancerSourceRanges?: string[] };
  lbSpec.ports.forEach((p, k) => { p.nodePort = nodePort(31000 + k); });
  lbSpec.healthCheckNodePort = nodePort(32000);
  // The dump has no loadBalancerIP (a gap noted in its SOURCES): these are the fields a user would set.
  lbSpec.loadBalancerIP = "203.0.113.10";
  lbSpec.loadBalancerSourceRanges = ["203.0.113.0/24", "198.51.100.0/24"];

  const [alertmanagerDump] = fixture("kube-prometheus-alertmanager-sessionaffinity-clientip-named-targetports.yaml");
  const alertmanager = asCreate(alertmanagerDump, namespace);
  (alertmanager.spec as Record<string, unknown>).sessionAffinityConfig = { clientIP: { timeoutSeconds: 3600 } };

  // Pinned IPs sit in the range's static band (the first 256 addresses of a /16): the apiserver hands out dynamic
  // ClusterIPs from above it first, so a Service created without an IP never takes one of these by chance.
  const pinnedIp = `${opts.oldPrefix}.0.${20 + 2 * i}`;
  const [dnsDump] = fixture("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
  const pinned = asCreate(dnsDump, namespace, "pinned");
  (pinned.spec as Record<string, unknown>).clusterIP = pinnedIp;
  (pinned.spec as Record<string, unknown>).selector = { "k8s-app": "pinned" };

  const lastAppliedIp = `${opts.oldPrefix}.0.${21 + 2 * i}`;
  const manifest = { apiVersion: "v1", kind: "Service", metadata: { name: "applied", namespace }, spec: { clusterIP: lastAppliedIp, ports: [{ port: 8080, targetPort: "http" }], selector: { app: "applied" } } };
  const lastApplied = JSON.stringify(manifest) + "\n";
  const applied: KubeObject = {
    apiVersion: "v1", kind: "Service",
    metadata: { name: "applied", namespace, annotations: { "kubectl.kubernetes.io/last-applied-configuration": lastApplied, "example.com/peer": `tcp://${lastAppliedIp}:8080`, "example.com/unrelated": `${lastAppliedIp}0` } },
    spec: manifest.spec,
  };

  const externalIps: KubeObject = {
    apiVersion: "v1", kind: "Service",
    metadata: { name: "external-ips", namespace },
    spec: { selector: { app: "ext" }, ports: [{ name: "https", port: 443, targetPort: 8443, protocol: "TCP" }], externalIPs: ["198.51.100.7"], publishNotReadyAddresses: true },
  };

  const [selectorlessDump] = fixture("kuar-selectorless-service.yaml");
  const [endpointsDump] = fixture("kuar-manual-endpoints-for-selectorless-service.yaml");
  const [headlessDump] = fixture("kube-prometheus-kube-state-metrics-headless.yaml");
  const [externalNameDump] = fixture("kuar-externalname-service.yaml");

  const owner = await rest.create(paths.configMaps(namespace), { metadata: { name: "owner" }, data: { role: "owns the Service owned" } });
  const owned: KubeObject = {
    apiVersion: "v1", kind: "Service",
    metadata: { name: "owned", namespace, ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata!.uid!, blockOwnerDeletion: true }] },
    spec: { selector: { app: "owned" }, ports: [{ port: 9000 }] },
  };

  // A selector-less Service whose addresses live only in hand-made EndpointSlices (no Endpoints, no owner): the
  // shape the Kubernetes docs' "Services without selectors" section gives now that Endpoints are deprecated (1.33).
  const slicesOnly: KubeObject = {
    apiVersion: "v1", kind: "Service",
    metadata: { name: "slices-only", namespace },
    spec: { ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 9376 }] },
  };

  const services = [web, nodeport, lb, alertmanager, pinned, applied, externalIps, asCreate(selectorlessDump, namespace), slicesOnly, owned, asCreate(headlessDump, namespace), asCreate(externalNameDump, namespace)];
  const created = await Promise.all(services.map(create));
  const byName = new Map(created.map((s) => [s.metadata!.name!, s]));
  await rest.create(paths.endpointsList(namespace), { ...asEndpoints(endpointsDump), metadata: { ...endpointsDump.metadata, namespace, labels: { source: "hand-made" }, annotations: { "example.com/why": "database outside the cluster" } } });

  // Objects owned by Service web: the garbage collector would delete them with it.
  const webUid = byName.get("web")!.metadata!.uid!;
  const webRef = { apiVersion: "v1", kind: "Service", name: "web", uid: webUid };
  await rest.create(paths.configMaps(namespace), { metadata: { name: "web-dependent", labels: { a: "1" }, ownerReferences: [webRef] }, data: { config: "kept" } });
  await rest.create(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, {
    apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice",
    metadata: { name: "web-extra", labels: { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "operator.example.com" }, ownerReferences: [webRef] },
    addressType: "IPv4", endpoints: [{ addresses: ["192.168.50.5"], conditions: { ready: true } }], ports: [{ name: "service", port: 3000, protocol: "TCP" }],
  });
  await rest.create(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, HAND_MADE_SLICE);
  if (opts.readyPodOnNode) await runReadyPod(rest, namespace, "web-1", { app: "web" }, opts.readyPodOnNode, `10.244.${100 + i}.5`);

  const moving: Record<string, string> = {};
  const untouched: string[] = [];
  for (const s of created) {
    const ip = (s.spec as { clusterIP?: string }).clusterIP;
    if (!ip || ip === "None" || (s.spec as { type?: string }).type === "ExternalName") untouched.push(s.metadata!.name!);
    else moving[s.metadata!.name!] = ip;
  }
  return {
    namespace,
    moving,
    untouched,
    expectedAnnotations(name, newIp) {
      if (name !== "applied") return byName.get(name)?.metadata?.annotations;
      return {
        "kubectl.kubernetes.io/last-applied-configuration": JSON.stringify({ ...manifest, spec: { ...manifest.spec, clusterIP: newIp } }) + "\n",
        "example.com/peer": `tcp://${newIp}:8080`,
        "example.com/unrelated": `${lastAppliedIp}0`,
      };
    },
  };
}

/** The docs' example EndpointSlice for a Service without a selector, managed by people, not by a controller. */
const HAND_MADE_SLICE: KubeObject = {
  apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice",
  metadata: { name: "slices-only-1", labels: { "kubernetes.io/service-name": "slices-only", "endpointslice.kubernetes.io/managed-by": "cluster-admins" } },
  addressType: "IPv4",
  ports: [{ name: "http", appProtocol: "http", protocol: "TCP", port: 9376 }],
  endpoints: [{ addresses: ["10.4.5.6"] }, { addresses: ["10.1.2.3"] }],
};

/**
 * The selector-less Services' slices have settled: the mirroring controller keeps exactly one mirror of the
 * hand-made Endpoints (no duplicate left from the old Service), and mirrors nothing for the slices-only Service.
 */
export function selectorlessSlicesSettled(state: NamespaceState): boolean {
  return slicesOf(state, "external-ip-database", MIRRORING_CONTROLLER).length === 1 && sliceAddresses(state, "external-ip-database", MIRRORING_CONTROLLER).includes("192.168.0.1")
    && slicesOf(state, "slices-only", MIRRORING_CONTROLLER).length === 0;
}

function asEndpoints(dump: KubeObject): KubeObject {
  const { metadata: _m, ...rest } = structuredClone(dump);
  return { ...rest, apiVersion: "v1" };
}

/** A pod as a kubelet would report it: scheduled on `node`, Running and Ready with `ip`. */
export async function runReadyPod(rest: KubeRest, namespace: string, name: string, labels: Record<string, string>, node: string, ip: string): Promise<void> {
  // The ServiceAccount admission plugin needs the namespace's default ServiceAccount (KCM creates it).
  for (let i = 0; !(await rest.getOptional(`/api/v1/namespaces/${namespace}/serviceaccounts/default`)); i++) {
    if (i > 300) throw new Error(`no default ServiceAccount in ${namespace} after 30 s: is kube-controller-manager running?`);
    await sleep(100);
  }
  const podPath = `/api/v1/namespaces/${namespace}/pods`;
  await rest.create(podPath, {
    apiVersion: "v1", kind: "Pod",
    metadata: { name, labels },
    spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: "main", image: "registry.k8s.io/pause:3.2", ports: [{ name: "http", containerPort: 3000 }, { name: "web", containerPort: 9093 }] }] },
  });
  const now = new Date().toISOString();
  await rest.mergePatch(`${podPath}/${name}/status`, {
    status: {
      phase: "Running", podIP: ip, podIPs: [{ ip }], hostIP: "127.0.0.1", startTime: now,
      conditions: ["Initialized", "Ready", "ContainersReady", "PodScheduled"].map((type) => ({ type, status: "True", lastTransitionTime: now })),
      containerStatuses: [{ name: "main", ready: true, restartCount: 0, image: "registry.k8s.io/pause:3.2", imageID: "", started: true, state: { running: { startedAt: now } } }],
    },
  });
}

export interface NamespaceState {
  services: Map<string, KubeObject>;
  endpoints: Map<string, KubeObject>;
  endpointSlices: KubeObject[];
  configMaps: Map<string, KubeObject>;
}

export async function namespaceState(rest: KubeRest, namespace: string): Promise<NamespaceState> {
  const [services, endpoints, endpointSlices, configMaps] = await Promise.all([
    rest.list(paths.services(namespace)),
    rest.list(`/api/v1/namespaces/${namespace}/endpoints`),
    rest.list(`/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`),
    rest.list(paths.configMaps(namespace)),
  ]);
  const byName = (items: KubeObject[]) => new Map(items.map((o) => [o.metadata!.name!, o]));
  return { services: byName(services), endpoints: byName(endpoints), endpointSlices, configMaps: byName(configMaps) };
}

const withoutIps = (spec: unknown) => {
  const { clusterIP: _ip, clusterIPs: _ips, ...rest } = (spec ?? {}) as Record<string, unknown>;
  return rest;
};

/** A Service's EndpointSlices made by `manager`. */
function slicesOf(state: NamespaceState, service: string, manager: string): KubeObject[] {
  return state.endpointSlices.filter((s) => s.metadata?.labels?.["kubernetes.io/service-name"] === service && s.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === manager);
}

/** Addresses behind a Service as its EndpointSlices (made by `manager`) list them. */
export function sliceAddresses(state: NamespaceState, service: string, manager: string): string[] {
  return slicesOf(state, service, manager)
    .flatMap((s) => ((s.endpoints ?? []) as Array<{ addresses: string[] }>).flatMap((e) => e.addresses))
    .sort();
}

/**
 * Every object of the namespace compared field by field: moved Services equal in every user field with the
 * planned IPs; everything else (untouched Services, hand-made Endpoints, owned objects) as it was, dependents
 * pointing at the new Service.
 */
/** `inPlace`: the moved Services that must be the same objects still (services.moveInPlace); every other moved one is re-created. */
export function assertNamespaceIntact(seed: SeededShapes, before: NamespaceState, after: NamespaceState, planned: Record<string, string>, inPlace: ReadonlySet<string> = new Set()): void {
  const ns = seed.namespace;
  assert.deepEqual([...after.services.keys()].sort(), [...before.services.keys()].sort(), `${ns}: the same Services exist`);
  for (const [name, old] of before.services) {
    const now = after.services.get(name)!;
    const where = `Service ${ns}/${name}`;
    if (!(name in planned)) {
      assert.equal(now.metadata?.uid, old.metadata?.uid, `${where} was left alone`);
      assert.equal(now.metadata?.resourceVersion, old.metadata?.resourceVersion, `${where} was not written`);
      continue;
    }
    const ip = planned[name];
    if (inPlace.has(name)) assert.equal(now.metadata?.uid, old.metadata?.uid, `${where} was moved in place`);
    else assert.notEqual(now.metadata?.uid, old.metadata?.uid, `${where} was re-created`);
    assert.equal((now.spec as Record<string, unknown>).clusterIP, ip, `${where} holds its planned IP`);
    assert.deepEqual((now.spec as Record<string, unknown>).clusterIPs, [ip], `${where} clusterIPs`);
    assert.deepEqual(withoutIps(now.spec), withoutIps(old.spec), `${where}: every spec field but the IPs`);
    assert.deepEqual(now.metadata?.labels, old.metadata?.labels, `${where} labels`);
    assert.deepEqual(now.metadata?.annotations, seed.expectedAnnotations(name, ip), `${where} annotations`);
    assert.deepEqual(now.metadata?.ownerReferences, old.metadata?.ownerReferences, `${where} ownerReferences`);
    assert.deepEqual(now.metadata?.finalizers, old.metadata?.finalizers, `${where} finalizers`);
    assert.equal(now.metadata?.deletionTimestamp, undefined, `${where} is not terminating`);
  }
  // hand-made Endpoints of the selector-less Service: back, equal
  const handMade = before.endpoints.get("external-ip-database")!;
  const restored = after.endpoints.get("external-ip-database");
  assert.ok(restored, `${ns}: the hand-made Endpoints are back`);
  assert.deepEqual(restored.subsets, handMade.subsets, "hand-made Endpoints subsets");
  assert.deepEqual(restored.metadata?.labels, handMade.metadata?.labels, "hand-made Endpoints labels");
  assert.deepEqual(restored.metadata?.annotations, handMade.metadata?.annotations, "hand-made Endpoints annotations");
  // objects owned by web: never deleted (same uid), now owned by the new web
  const webUid = after.services.get("web")!.metadata!.uid!;
  const dependent = after.configMaps.get("web-dependent");
  assert.ok(dependent, `${ns}: the ConfigMap owned by web survived`);
  assert.equal(dependent.metadata?.uid, before.configMaps.get("web-dependent")!.metadata?.uid, "web-dependent was never deleted");
  assert.deepEqual(dependent.data, { config: "kept" });
  assert.deepEqual(dependent.metadata?.labels, { a: "1" });
  assert.deepEqual(dependent.metadata?.ownerReferences, [{ apiVersion: "v1", kind: "Service", name: "web", uid: webUid }]);
  const extraBefore = before.endpointSlices.find((s) => s.metadata?.name === "web-extra")!;
  const extra = after.endpointSlices.find((s) => s.metadata?.name === "web-extra");
  assert.ok(extra, `${ns}: the hand-made EndpointSlice owned by web survived`);
  assert.equal(extra.metadata?.uid, extraBefore.metadata?.uid, "web-extra was never deleted");
  assert.deepEqual(extra.endpoints, extraBefore.endpoints);
  assert.deepEqual(extra.metadata?.ownerReferences, [{ apiVersion: "v1", kind: "Service", name: "web", uid: webUid }]);
  // the selector-less Service's hand-made EndpointSlice: never deleted, unchanged, still nobody's; and the
  // mirroring controller keeps one mirror of the hand-made Endpoints, owned by the Endpoints now there
  const sliceBefore = before.endpointSlices.find((s) => s.metadata?.name === "slices-only-1")!;
  const sliceAfter = after.endpointSlices.find((s) => s.metadata?.name === "slices-only-1");
  assert.ok(sliceAfter, `${ns}: the hand-made EndpointSlice of slices-only survived`);
  assert.equal(sliceAfter.metadata?.uid, sliceBefore.metadata?.uid, "slices-only-1 was never deleted");
  assert.equal(sliceAfter.metadata?.resourceVersion, sliceBefore.metadata?.resourceVersion, "slices-only-1 was not written");
  assert.deepEqual([sliceAfter.endpoints, sliceAfter.ports, sliceAfter.metadata?.labels], [sliceBefore.endpoints, sliceBefore.ports, sliceBefore.metadata?.labels]);
  const mirrors = after.endpointSlices.filter((s) => s.metadata?.labels?.["endpointslice.kubernetes.io/managed-by"] === MIRRORING_CONTROLLER);
  assert.deepEqual(mirrors.map((s) => s.metadata?.labels?.["kubernetes.io/service-name"]), ["external-ip-database"], `${ns}: one mirrored slice, of the hand-made Endpoints only`);
  assert.equal(mirrors[0].metadata?.ownerReferences?.[0]?.uid, restored.metadata?.uid, "the mirror belongs to the Endpoints now there");
  // the Service owned by a ConfigMap keeps its owner, and the owner is untouched
  assert.equal(after.configMaps.get("owner")?.metadata?.uid, before.configMaps.get("owner")?.metadata?.uid);
}

/** Waits until `predicate` holds for the namespace (controllers re-derive asynchronously). */
export async function eventually(rest: KubeRest, namespace: string, what: string, predicate: (state: NamespaceState) => boolean, timeoutMs = 30_000): Promise<NamespaceState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await namespaceState(rest, namespace);
    if (predicate(state)) return state;
    if (Date.now() > deadline) throw new Error(`${namespace}: ${what} did not happen within ${timeoutMs} ms`);
    await sleep(200);
  }
}

export const SLICE_CONTROLLER = "endpointslice-controller.k8s.io";
export const MIRRORING_CONTROLLER = "endpointslicemirroring-controller.k8s.io";

export const LB_CLEANUP_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

/**
 * Stands in for a cloud provider's service controller, which the test bed has none of: once a Service carrying
 * the load-balancer cleanup finalizer is being deleted, it "releases the load balancer" after `delayMs` and
 * removes the finalizer. Returns a stop function.
 */
export function simulateCloudServiceController(rest: KubeRest, delayMs = 250): () => Promise<void> {
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const terminating = (await rest.list("/api/v1/services")).filter((s) => s.metadata?.deletionTimestamp && (s.metadata.finalizers ?? []).includes(LB_CLEANUP_FINALIZER));
        await Promise.all(terminating.map(async (s) => {
          await sleep(delayMs);
          const rest2 = (s.metadata!.finalizers ?? []).filter((f) => f !== LB_CLEANUP_FINALIZER);
          await rest.mergePatch(paths.service(s.metadata!.namespace!, s.metadata!.name!), { metadata: { resourceVersion: s.metadata!.resourceVersion, finalizers: rest2.length ? rest2 : null } }).catch(() => undefined);
        }));
      } catch {
        // the apiserver may be restarting; try again
      }
      await sleep(50);
    }
  })();
  return async () => {
    running = false;
    await loop;
  };
}
