// The re-create body built from real Service dumps: every user field kept, server-set fields dropped, only the
// ClusterIP(s) and the annotations that carried the old IP changed. Plus the DNS stand-in body.
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { correctIpAnnotations, LAST_APPLIED_ANNOTATION } from "../../../lib/serviceMove/ipAnnotations";
import { replaceAddress } from "../../../lib/net/replaceAddress";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";
import {
  buildRecreateBody, clusterIpsOf, differingUserFields, holdsNoClusterIp, SERVER_SET_METADATA,
} from "../../../lib/serviceMove/recreateBody";
import { buildStandInBody } from "../../../lib/serviceMove/standIn";
import { bridgeEndpoints, bridgeSlices, bridgesOwnSlices, controllerSlicesOf, handOverPatch, ownSliceCopies } from "../../../lib/serviceMove/endpointBridge";

const FIXTURES = path.join(__dirname, "..", "..", "fixtures", "services");

function load(file: string): KubeObject[] {
  const text = fs.readFileSync(path.join(FIXTURES, file), "utf8");
  const docs = file.endsWith(".json") ? [JSON.parse(text)] : parseAllDocuments(text).map((d) => d.toJS());
  return docs.flatMap((doc) => (doc.kind === "List" || doc.kind === "ServiceList" ? doc.items : [doc])) as KubeObject[];
}

function one(file: string): KubeObject {
  const [doc] = load(file);
  return doc;
}

const withoutIps = (spec: unknown) => {
  const { clusterIP: _ip, clusterIPs: _ips, ...rest } = spec as Record<string, unknown>;
  return rest;
};

describe("serviceMove: the re-create body", () => {
  it("kube-dns dump: server fields go, IPs change to the planned one, every other field is kept as it was", () => {
    const original = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    const { body } = buildRecreateBody(original, "10.96.0.10", "10.100.0.10");
    for (const key of SERVER_SET_METADATA) assert.equal(body.metadata?.[key], undefined, `metadata.${key} must not be copied`);
    assert.equal(body.status, undefined);
    assert.deepEqual(body.metadata, {
      annotations: { "prometheus.io/port": "9153", "prometheus.io/scrape": "true" },
      labels: { "k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS" },
      name: "kube-dns",
      namespace: "kube-system",
    });
    const spec = body.spec as Record<string, unknown>;
    assert.equal(spec.clusterIP, "10.100.0.10");
    assert.deepEqual(spec.clusterIPs, ["10.100.0.10"]);
    assert.deepEqual(withoutIps(spec), withoutIps(original.spec));
    // ports in detail, since they are what clients use
    assert.deepEqual(spec.ports, [
      { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
      { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
      { name: "metrics", port: 9153, protocol: "TCP", targetPort: 9153 },
    ]);
    assert.equal(spec.internalTrafficPolicy, "Cluster");
    assert.deepEqual(spec.ipFamilies, ["IPv4"]);
    assert.equal(spec.ipFamilyPolicy, "SingleStack");
  });

  it("cluster-info dump (JSON ServiceList): the kube-dns item gives the same body as the YAML dump of another cluster", () => {
    const [fromJson] = load("kube-system-servicelist-json-cluster-info-dump.json");
    const fromYaml = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    const a = buildRecreateBody(fromJson, "10.96.0.10", "10.100.0.10").body;
    const b = buildRecreateBody(fromYaml, "10.96.0.10", "10.100.0.10").body;
    assert.deepEqual(a.spec, b.spec);
    assert.deepEqual(a.metadata, b.metadata);
    assert.notEqual(fromJson.metadata?.uid, fromYaml.metadata?.uid);
  });

  it("does not change the object it was given (the journal's copy stays the original)", () => {
    const original = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    const before = JSON.stringify(original);
    buildRecreateBody(original, "10.96.0.10", "10.100.0.10");
    assert.equal(JSON.stringify(original), before);
  });

  it("LoadBalancer dump: finalizer, nodePorts, healthCheckNodePort and externalTrafficPolicy kept; selfLink dropped; clusterIPs filled in", () => {
    const original = one("lb-svc-dump-etp-local-healthchecknodeport-finalizer.yaml");
    const { body } = buildRecreateBody(original, "172.20.195.54", "172.21.195.54");
    const spec = body.spec as Record<string, unknown>;
    assert.deepEqual(body.metadata?.finalizers, ["service.kubernetes.io/load-balancer-cleanup"]);
    assert.equal(body.metadata?.selfLink, undefined);
    assert.deepEqual(body.metadata?.annotations, original.metadata?.annotations);
    assert.deepEqual(body.metadata?.labels, original.metadata?.labels);
    assert.equal(spec.healthCheckNodePort, 32739);
    assert.equal(spec.externalTrafficPolicy, "Local");
    assert.deepEqual((spec.ports as Array<{ nodePort: number }>).map((p) => p.nodePort), [31452, 30402, 30403]);
    assert.equal(spec.clusterIP, "172.21.195.54");
    assert.deepEqual(spec.clusterIPs, ["172.21.195.54"]);
    assert.deepEqual(withoutIps(spec), withoutIps(original.spec));
  });

  it("popeye list: a fixed nodePort NodePort keeps its nodePort and policy; the ClusterIP-less shapes are recognised", () => {
    const [svc1, , svc3] = load("popeye-svc-list-duplicate-clusterips.yaml");
    const { body } = buildRecreateBody(svc1, "10.96.66.245", "10.100.66.245");
    const spec = body.spec as Record<string, unknown>;
    assert.deepEqual(spec.ports, [{ name: "http", nodePort: 30400, port: 9090, protocol: "TCP", targetPort: 9090 }]);
    assert.equal(spec.type, "NodePort");
    assert.equal(spec.externalTrafficPolicy, "Local");
    // An ExternalName that also carries a clusterIP (the dump has one) still holds no ClusterIP to move.
    assert.equal(holdsNoClusterIp(svc3), true);
    assert.equal(holdsNoClusterIp(one("kube-prometheus-kube-state-metrics-headless.yaml")), true);
    assert.equal(holdsNoClusterIp(one("kuar-externalname-service.yaml")), true);
    assert.equal(holdsNoClusterIp(svc1), false);
  });

  it("ClientIP affinity with named targetPorts: affinity and target port names kept", () => {
    const original = { ...one("kube-prometheus-alertmanager-sessionaffinity-clientip-named-targetports.yaml") };
    original.spec = { ...(original.spec as object), clusterIP: "10.96.40.2", sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } } };
    const { body } = buildRecreateBody(original, "10.96.40.2", "10.100.40.2");
    const spec = body.spec as Record<string, unknown>;
    assert.equal(spec.sessionAffinity, "ClientIP");
    assert.deepEqual(spec.sessionAffinityConfig, { clientIP: { timeoutSeconds: 10800 } });
    assert.deepEqual((spec.ports as Array<{ targetPort: unknown }>).map((p) => p.targetPort), ["web", "reloader-web"]);
  });

  it("fields this code has never heard of survive (deny-list, not allow-list)", () => {
    const original: KubeObject = {
      apiVersion: "v1", kind: "Service",
      metadata: { name: "x", namespace: "n", uid: "u", resourceVersion: "1", generateName: "x-", vendorField: { a: 1 } },
      spec: { clusterIP: "10.96.0.5", trafficDistribution: "PreferClose", loadBalancerClass: "example.com/lb", allocateLoadBalancerNodePorts: false, ports: [{ port: 1, appProtocol: "h2c" }] },
      status: { loadBalancer: { ingress: [{ ip: "203.0.113.9" }] } },
      extraTopLevel: "kept",
    };
    const { body } = buildRecreateBody(original, "10.96.0.5", "10.100.0.5");
    assert.equal((body.metadata as Record<string, unknown>).vendorField !== undefined, true);
    assert.equal(body.metadata?.generateName, "x-");
    assert.equal((body.spec as Record<string, unknown>).trafficDistribution, "PreferClose");
    assert.equal((body.spec as Record<string, unknown>).loadBalancerClass, "example.com/lb");
    assert.equal((body.spec as Record<string, unknown>).allocateLoadBalancerNodePorts, false);
    assert.equal(body.extraTopLevel, "kept");
    assert.equal(body.status, undefined);
  });

  it("the garbage collector's deletion finalizers are not carried over, the user's are", () => {
    const original: KubeObject = {
      metadata: { name: "x", namespace: "n", finalizers: ["example.com/protect", "foregroundDeletion", "orphan"], deletionTimestamp: "2024-01-01T00:00:00Z" },
      spec: { clusterIP: "10.96.0.5" },
    };
    const { body } = buildRecreateBody(original, "10.96.0.5", "10.100.0.5");
    assert.deepEqual(body.metadata?.finalizers, ["example.com/protect"]);
    assert.equal(body.metadata?.deletionTimestamp, undefined);
  });

  it("dual-stack: only the moved family's address changes, whichever family is primary", () => {
    const v4First: KubeObject = { metadata: { name: "d", namespace: "n" }, spec: { clusterIP: "10.96.1.1", clusterIPs: ["10.96.1.1", "fd00:10:96::1"], ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "PreferDualStack" } };
    const a = buildRecreateBody(v4First, "10.96.1.1", "10.100.1.1").body.spec as Record<string, unknown>;
    assert.deepEqual(a.clusterIPs, ["10.100.1.1", "fd00:10:96::1"]);
    assert.equal(a.clusterIP, "10.100.1.1");
    const [flow] = load("dual-stack-preferdualstack-ipv6-first-flowstyle.yaml");
    const v6First: KubeObject = { ...flow, metadata: { ...flow.metadata, namespace: "n" }, spec: { ...(flow.spec as object), clusterIP: "fd00:10:96::7", clusterIPs: ["fd00:10:96::7", "10.96.1.7"] } };
    const b = buildRecreateBody(v6First, "10.96.1.7", "10.100.1.7").body.spec as Record<string, unknown>;
    assert.deepEqual(b.clusterIPs, ["fd00:10:96::7", "10.100.1.7"]);
    assert.equal(b.clusterIP, "fd00:10:96::7");
    assert.deepEqual(b.ipFamilies, ["IPv6", "IPv4"]);
    assert.equal(b.ipFamilyPolicy, "PreferDualStack");
  });

  it("dual-stack with otherFamily: both families move in one body, in the Service's order, annotations of both corrected", () => {
    const [flow] = load("dual-stack-preferdualstack-ipv6-first-flowstyle.yaml");
    const v6First: KubeObject = {
      ...flow,
      metadata: { ...flow.metadata, namespace: "n", annotations: { "example.com/v6": "fd00:10:96::7", "example.com/v4": "10.96.1.7" } },
      spec: { ...(flow.spec as object), clusterIP: "fd00:10:96::7", clusterIPs: ["fd00:10:96::7", "10.96.1.7"] },
    };
    const built = buildRecreateBody(v6First, "fd00:10:96::7", "fd00:10:100::7", { fromIP: "10.96.1.7", toIP: "10.100.1.7" });
    const spec = built.body.spec as Record<string, unknown>;
    assert.deepEqual(spec.clusterIPs, ["fd00:10:100::7", "10.100.1.7"]);
    assert.equal(spec.clusterIP, "fd00:10:100::7");
    assert.deepEqual(spec.ipFamilies, ["IPv6", "IPv4"]);
    assert.deepEqual(built.body.metadata?.annotations, { "example.com/v6": "fd00:10:100::7", "example.com/v4": "10.100.1.7" });
    assert.deepEqual([...built.correctedAnnotations].sort(), ["example.com/v4", "example.com/v6"]);
    assert.throws(() => buildRecreateBody(v6First, "fd00:10:96::7", "fd00:10:100::7", { fromIP: "10.96.1.8", toIP: "10.100.1.8" }), /does not hold 10\.96\.1\.8/);
  });

  it("refuses to build a body for a Service that does not hold the old IP", () => {
    const svc = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    assert.throws(() => buildRecreateBody(svc, "10.96.0.11", "10.100.0.11"), /kube-system\/kube-dns does not hold 10\.96\.0\.11 \(it holds 10\.96\.0\.10\)/);
  });

  it("clusterIpsOf reads clusterIP when clusterIPs is missing (pre-1.20 dumps)", () => {
    assert.deepEqual(clusterIpsOf(one("lb-svc-dump-etp-local-healthchecknodeport-finalizer.yaml")), ["172.20.195.54"]);
    assert.deepEqual(clusterIpsOf(one("kuar-selectorless-service.yaml")), []);
  });

  it("differingUserFields: equal after a create that only added defaults; names each field that changed", () => {
    const original = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    const { body } = buildRecreateBody(original, "10.96.0.10", "10.100.0.10");
    const served: KubeObject = structuredClone(body);
    served.metadata = { ...served.metadata, uid: "new", resourceVersion: "9", creationTimestamp: "2024-01-01T00:00:00Z" };
    served.spec = { ...(served.spec as object), someNewDefault: "x" };
    assert.deepEqual(differingUserFields(body, served), []);
    const changed = structuredClone(served);
    changed.metadata!.labels = { ...changed.metadata!.labels, extra: "1" };
    (changed.spec as Record<string, unknown>).sessionAffinity = "ClientIP";
    assert.deepEqual(differingUserFields(body, changed), ["metadata.labels", "spec.sessionAffinity"]);
  });
});

describe("serviceMove: annotations carrying the old IP", () => {
  it("replaces only whole addresses", () => {
    assert.equal(replaceAddress("10.96.0.1", "10.96.0.1", "10.100.0.1"), "10.100.0.1");
    assert.equal(replaceAddress("10.96.0.10", "10.96.0.1", "10.100.0.1"), "10.96.0.10");
    assert.equal(replaceAddress("110.96.0.1", "10.96.0.1", "10.100.0.1"), "110.96.0.1");
    assert.equal(replaceAddress("https://10.96.0.1:443/x, 10.96.0.1.", "10.96.0.1", "10.100.0.1"), "https://10.100.0.1:443/x, 10.100.0.1.");
    assert.equal(replaceAddress("10.96.0.1.5", "10.96.0.1", "10.100.0.1"), "10.96.0.1.5");
    assert.equal(replaceAddress("[fd00::1]:53 fd00::10", "fd00::1", "fd01::1"), "[fd01::1]:53 fd00::10");
    assert.equal(replaceAddress("no address here", "10.96.0.1", "10.100.0.1"), "no address here");
  });

  it("last-applied: spec.clusterIP(s) fixed in kubectl's JSON, key order and trailing newline kept, nothing else touched", () => {
    const manifest = one("kube-prometheus-alertmanager-sessionaffinity-clientip-named-targetports.yaml");
    const pinned = { ...manifest, spec: { clusterIP: "10.96.40.2", ...(manifest.spec as object) } };
    const lastApplied = JSON.stringify(pinned) + "\n";
    const { annotations, changed, pinnedInLastApplied } = correctIpAnnotations({ [LAST_APPLIED_ANNOTATION]: lastApplied, other: "x" }, "10.96.40.2", "10.100.40.2");
    assert.deepEqual(changed, [LAST_APPLIED_ANNOTATION]);
    assert.equal(pinnedInLastApplied, true);
    assert.equal(annotations[LAST_APPLIED_ANNOTATION], JSON.stringify({ ...pinned, spec: { ...pinned.spec, clusterIP: "10.100.40.2" } }) + "\n");
    assert.equal(annotations.other, "x");
  });

  it("last-applied without a pinned IP is left byte for byte", () => {
    const manifest = JSON.stringify(one("kube-prometheus-alertmanager-sessionaffinity-clientip-named-targetports.yaml")) + "\n";
    const result = correctIpAnnotations({ [LAST_APPLIED_ANNOTATION]: manifest }, "10.96.40.2", "10.100.40.2");
    assert.equal(result.annotations[LAST_APPLIED_ANNOTATION], manifest);
    assert.deepEqual(result.changed, []);
    assert.equal(result.pinnedInLastApplied, false);
  });

  it("other annotations: the exact old IP replaced wherever it stands", () => {
    const { annotations, changed } = correctIpAnnotations({ "external-dns.alpha.kubernetes.io/target": "10.96.3.3", "example.com/peers": "10.96.3.30,10.96.3.3" }, "10.96.3.3", "10.100.3.3");
    assert.deepEqual(annotations, { "external-dns.alpha.kubernetes.io/target": "10.100.3.3", "example.com/peers": "10.96.3.30,10.100.3.3" });
    assert.deepEqual(changed.sort(), ["example.com/peers", "external-dns.alpha.kubernetes.io/target"]);
  });

  it("the body carries the corrected annotations", () => {
    const original: KubeObject = { metadata: { name: "x", namespace: "n", annotations: { note: "was 10.96.0.5" } }, spec: { clusterIP: "10.96.0.5" } };
    const result = buildRecreateBody(original, "10.96.0.5", "10.100.0.5");
    assert.deepEqual(result.body.metadata?.annotations, { note: "was 10.100.0.5" });
    assert.deepEqual(result.correctedAnnotations, ["note"]);
  });
});

describe("serviceMove: the DNS stand-in", () => {
  it("copies selector and ports (without nodePorts) of the real kube-dns, not its labels", () => {
    const dns = one("kube-dns-svc-dump-pinned-10.96.0.10.yaml");
    const body = buildStandInBody(dns, { namespace: "kube-system", name: "kube-dns-cidr-migration-temp", of: { namespace: "kube-system", name: "kube-dns" }, ip: "10.100.0.10" });
    assert.deepEqual(body.spec, {
      type: "ClusterIP",
      clusterIP: "10.100.0.10",
      clusterIPs: ["10.100.0.10"],
      selector: { "k8s-app": "kube-dns" },
      ports: (dns.spec as { ports: unknown }).ports,
      sessionAffinity: "None",
    });
    assert.equal(body.metadata?.labels?.["k8s-app"], undefined);
    assert.equal(body.metadata?.annotations?.["cidr-migration.io/stand-in-for"], "kube-system/kube-dns");
  });

  it("refuses a DNS Service without a selector", () => {
    assert.throws(() => buildStandInBody(one("kuar-selectorless-service.yaml"), { namespace: "default", name: "t", of: { namespace: "default", name: "external-ip-database" }, ip: "10.100.0.10" }), /default\/external-ip-database has no selector/);
  });

  it("the endpoint bridge copies the stand-in's slices and Endpoints to the new DNS Service, labelled as ours and owned by it", () => {
    const standInSlice: KubeObject = {
      apiVersion: "discovery.k8s.io/v1beta1", kind: "EndpointSlice",
      metadata: { name: "kube-dns-cidr-migration-temp-x7k2p", namespace: "kube-system", uid: "s-1", resourceVersion: "9", labels: { "kubernetes.io/service-name": "kube-dns-cidr-migration-temp", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" }, ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "kube-dns-cidr-migration-temp", uid: "temp-uid" }] },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.244.0.53"], conditions: { ready: true }, targetRef: { kind: "Pod", namespace: "kube-system", name: "coredns-1" } }],
      ports: [{ name: "dns", port: 53, protocol: "UDP" }],
    };
    const target = { namespace: "kube-system", name: "kube-dns", uid: "new-uid" };
    assert.deepEqual(bridgeSlices([standInSlice], target), [{
      apiVersion: "discovery.k8s.io/v1beta1", kind: "EndpointSlice",
      metadata: {
        name: "kube-dns-cidr-migration-bridge-0", namespace: "kube-system",
        labels: { "kubernetes.io/service-name": "kube-dns", "endpointslice.kubernetes.io/managed-by": "cidr-migration.io" },
        ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "kube-dns", uid: "new-uid", blockOwnerDeletion: true }],
      },
      addressType: "IPv4", endpoints: standInSlice.endpoints, ports: standInSlice.ports,
    }]);
    const subsets = [{ addresses: [{ ip: "10.244.0.53" }], ports: [{ name: "dns", port: 53, protocol: "UDP" }] }];
    assert.deepEqual(bridgeEndpoints({ metadata: { name: "kube-dns-cidr-migration-temp" }, subsets }, target), { apiVersion: "v1", kind: "Endpoints", metadata: { name: "kube-dns", namespace: "kube-system" }, subsets });
    assert.equal(bridgeEndpoints({ metadata: {}, subsets: [] }, target), undefined);
    const controllers = { ...standInSlice, metadata: { ...standInSlice.metadata, ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "kube-dns", uid: "new-uid" }] } };
    assert.deepEqual(controllerSlicesOf([...bridgeSlices([standInSlice], target), standInSlice, controllers], "new-uid"), [controllers]);
  });

  it("a moved Service's own slices are copied with their labels (which the controller derived from the Service's): before the delete as the controller's, after the create as ours to hand over", () => {
    const ownSlice: KubeObject = {
      apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice",
      metadata: {
        name: "web-abcde", namespace: "shop", uid: "s-2", resourceVersion: "12",
        labels: { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", app: "web", tier: "front" },
        ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "web", uid: "old-uid", controller: true, blockOwnerDeletion: true }],
      },
      addressType: "IPv4",
      endpoints: [{ addresses: ["10.244.1.7"], conditions: { ready: true } }],
      ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    };
    const [copy] = ownSliceCopies([ownSlice], { namespace: "shop", name: "web" });
    assert.deepEqual(copy.metadata, {
      name: "web-cidr-migration-bridge-0", namespace: "shop",
      labels: { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io", "cidr-migration.io/bridge-copy": "true", app: "web", tier: "front" },
    }, "made before the delete: no owner, the controller's label and the Service's kept, for the controller to replace");
    assert.deepEqual([copy.addressType, copy.endpoints, copy.ports], [ownSlice.addressType, ownSlice.endpoints, ownSlice.ports], "the same endpoints and ports");
    assert.deepEqual(controllerSlicesOf([copy], "new-uid"), [], "not owned: not the new Service's own slice");
    const [afterCreate] = bridgeSlices([ownSlice], { namespace: "shop", name: "web", uid: "new-uid" }, true);
    assert.deepEqual(afterCreate.metadata, {
      name: "web-cidr-migration-bridge-0", namespace: "shop",
      labels: { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "cidr-migration.io", app: "web", tier: "front" },
      ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "web", uid: "new-uid", blockOwnerDeletion: true }],
    }, "made after the create (the fallback): owned by the new Service, the Service's labels kept, ours as manager, to be handed over");
    assert.deepEqual(bridgeSlices([ownSlice], { namespace: "shop", name: "web" })[0].metadata?.labels, { "kubernetes.io/service-name": "web", "endpointslice.kubernetes.io/managed-by": "cidr-migration.io" }, "a stand-in's labels are not copied");
    const service: KubeObject = { metadata: { name: "web" }, spec: { selector: { app: "web" } } };
    assert.equal(bridgesOwnSlices({ service }), true, "a selector Service bridges its own slices");
    assert.equal(bridgesOwnSlices({ service, endpoints: { metadata: { name: "web" } } }), false, "hand-made Endpoints are restored, not bridged");
    assert.equal(bridgesOwnSlices({ service, vacate: { namespace: "kube-system", name: "kube-dns-cidr-migration-temp" } }), false, "the DNS swap copies the stand-in's");
    assert.equal(bridgesOwnSlices({ service: { metadata: { name: "db" }, spec: {} } }), false, "no selector, no controller slices");
    assert.deepEqual(handOverPatch({ namespace: "shop", name: "web", uid: "new-uid" }), {
      metadata: {
        labels: { "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" },
        ownerReferences: [{ apiVersion: "v1", kind: "Service", name: "web", uid: "new-uid", blockOwnerDeletion: true, controller: true }],
      },
    });
  });
});
