import * as assert from "assert";
import { V1Endpoints, V1Node, V1Pod } from "@kubernetes/client-node";
import { validateConfig } from "../../../lib/config/config";
import { MigrationConfig } from "../../../lib/config/migrationConfig";
import { preflightFindings } from "../../../lib/preflight";
import { PreflightInput } from "../../../lib/preflight/checkInput";
import { ClusterObjects, emptyClusterObjects, EndpointSliceObject } from "../../../lib/preflight/clusterObjects";
import { checkEtcdRewriteControlPlane } from "../../../lib/preflight/etcdRewriteControlPlane";
import { Finding } from "../../../lib/report/findings";

// services.strategy etcd-rewrite needs every apiserver and controller-manager to be a static pod the run can stop.

function config(strategy: "recreate" | "etcd-rewrite", nodes = [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }, { name: "cp-2", host: "192.168.50.20", role: "control-plane" }]): MigrationConfig {
  return validateConfig({
    values: {
      serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
      podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
      etcd: { endpoints: ["http://127.0.0.1:2379"] },
      nodes: [...nodes, { name: "worker-1", host: "192.168.50.11", role: "worker" }],
      services: { strategy },
    },
  });
}

function input(cluster: Partial<ClusterObjects>, strategy: "recreate" | "etcd-rewrite" = "etcd-rewrite", cfg?: MigrationConfig): PreflightInput {
  return {
    config: cfg ?? config(strategy),
    cluster: { ...emptyClusterObjects(), serverVersion: { major: "1", minor: "32", gitVersion: "v1.32.13" }, ...cluster },
    allowSecretValues: false,
  };
}

const NODE_IPS: Record<string, string> = { "cp-1": "192.168.50.10", "cp-2": "192.168.50.20", "cp-3": "192.168.50.30" };

function mirrorPod(component: string, nodeName: string, flags: string[] = []): V1Pod {
  return {
    metadata: { namespace: "kube-system", name: `${component}-${nodeName}`, labels: { component, tier: "control-plane" }, annotations: { "kubernetes.io/config.mirror": "hash" } },
    spec: { nodeName, hostNetwork: true, containers: [{ name: component, command: [component, ...flags] }] },
    status: { podIP: NODE_IPS[nodeName], hostIP: NODE_IPS[nodeName] },
  };
}

function controlPlane(...nodes: string[]): V1Pod[] {
  return nodes.flatMap((n) => [mirrorPod("kube-apiserver", n, [`--advertise-address=${NODE_IPS[n]}`]), mirrorPod("kube-controller-manager", n)]);
}

function kubernetesEndpoints(...ips: string[]): V1Endpoints {
  return { metadata: { namespace: "default", name: "kubernetes" }, subsets: [{ addresses: ips.map((ip) => ({ ip })), ports: [{ name: "https", port: 6443 }] }] };
}

function kubernetesSlice(...ips: string[]): EndpointSliceObject {
  return { metadata: { namespace: "default", name: "kubernetes", labels: { "kubernetes.io/service-name": "kubernetes" } }, addressType: "IPv4", endpoints: ips.map((ip) => ({ addresses: [ip] })) };
}

const codes = (fs: Finding[]) => fs.map((f) => [f.code, f.severity, f.object]);

describe("preflight: services.strategy etcd-rewrite needs a static-pod control plane", () => {
  it("two configured control-plane nodes whose apiservers are the only ones in default/kubernetes: nothing to say", () => {
    const cluster = { pods: controlPlane("cp-1", "cp-2"), endpoints: [kubernetesEndpoints("192.168.50.10", "192.168.50.20")], endpointSlices: [kubernetesSlice("192.168.50.10", "192.168.50.20")] };
    assert.deepStrictEqual(checkEtcdRewriteControlPlane(input(cluster)), []);
  });

  it("says nothing under services.strategy recreate, whatever runs the control plane", () => {
    const selfHosted: V1Pod = { ...mirrorPod("kube-apiserver", "cp-1"), metadata: { namespace: "kube-system", name: "kube-apiserver-x7k2p", labels: { component: "kube-apiserver" } } };
    const cluster = { pods: [selfHosted], endpoints: [kubernetesEndpoints("192.168.50.10", "10.0.0.99")] };
    assert.deepStrictEqual(checkEtcdRewriteControlPlane(input(cluster, "recreate")), []);
  });

  it("an apiserver or controller-manager pod that is not a mirror pod is a blocker naming the pod and its owner", () => {
    const daemon: V1Pod = {
      metadata: { namespace: "kube-system", name: "kube-apiserver-x7k2p", labels: { component: "kube-apiserver" }, ownerReferences: [{ apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-apiserver", uid: "u" }] },
      spec: { nodeName: "cp-2", containers: [{ name: "kube-apiserver", command: ["kube-apiserver"] }] },
    };
    // known by its name alone, as older kubeadm manifests are, but created through the API
    const bare: V1Pod = { metadata: { namespace: "kube-system", name: "kube-controller-manager-cp-2" }, spec: { nodeName: "cp-2", containers: [{ name: "kube-controller-manager" }] } };
    // the same label in another namespace is not the control plane
    const elsewhere: V1Pod = { metadata: { namespace: "tools", name: "kube-apiserver-proxy", labels: { component: "kube-apiserver" } }, spec: { nodeName: "cp-2", containers: [] } };
    const found = checkEtcdRewriteControlPlane(input({ pods: [...controlPlane("cp-1"), daemon, bare, elsewhere] }));
    assert.deepStrictEqual(codes(found), [
      ["ETCD_REWRITE_POD_NOT_STATIC", "blocker", "Pod kube-system/kube-apiserver-x7k2p"],
      ["ETCD_REWRITE_POD_NOT_STATIC", "blocker", "Pod kube-system/kube-controller-manager-cp-2"],
    ]);
    assert.strictEqual(
      found[0].message,
      "a kube-apiserver on node cp-2 that is not a static pod (no kubernetes.io/config.mirror annotation; run by DaemonSet kube-apiserver): services.strategy etcd-rewrite stops kube-apiserver by moving its manifest out of /etc/kubernetes/manifests, so this one would keep running while etcd is rewritten",
    );
    assert.match(found[1].message, /created through the API/);
    assert.match(found[0].action, /^use services\.strategy: recreate/);
  });

  it("default/kubernetes listing more apiservers than there are apiserver static pods: one blocker, naming the stray address", () => {
    const cluster = {
      pods: controlPlane("cp-1", "cp-2"),
      endpoints: [kubernetesEndpoints("192.168.50.10", "192.168.50.20", "10.0.0.99")],
      endpointSlices: [kubernetesSlice("192.168.50.10", "192.168.50.20", "10.0.0.99")],
    };
    const found = checkEtcdRewriteControlPlane(input(cluster));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_APISERVER_NOT_STATIC", "blocker", "Endpoints default/kubernetes"]]);
    assert.strictEqual(
      found[0].message,
      "lists 3 apiserver addresses (192.168.50.10, 192.168.50.20, 10.0.0.99) for the 2 kube-apiserver static pods (on cp-1, cp-2); 10.0.0.99 is the address of none of them: some apiserver is not a static pod services.strategy etcd-rewrite can stop, and it would keep serving and writing while etcd is rewritten",
    );
    assert.match(found[0].action, /^use services\.strategy: recreate .*; if an apiserver was removed minutes ago, wait/);
  });

  it("counts from the EndpointSlice alone when no Endpoints were collected", () => {
    const found = checkEtcdRewriteControlPlane(input({ pods: controlPlane("cp-1"), endpointSlices: [kubernetesSlice("192.168.50.10", "192.168.50.20")] }, "etcd-rewrite", config("etcd-rewrite", [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }])));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_APISERVER_NOT_STATIC", "blocker", "EndpointSlice default/kubernetes"]]);
    assert.match(found[0].message, /lists 2 apiserver addresses .* for the 1 kube-apiserver static pod \(on cp-1\); 192\.168\.50\.20 is the address of none/);
  });

  it("more addresses than static pods is a blocker even when every address is one of their nodes' (a second apiserver on a second NIC)", () => {
    const node: V1Node = { metadata: { name: "cp-1" }, status: { addresses: [{ type: "InternalIP", address: "192.168.50.10" }, { type: "InternalIP", address: "10.10.0.10" }] } };
    const cfg = config("etcd-rewrite", [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }]);
    const found = checkEtcdRewriteControlPlane(input({ pods: controlPlane("cp-1"), nodes: [node], endpoints: [kubernetesEndpoints("192.168.50.10", "10.10.0.10")] }, "etcd-rewrite", cfg));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_APISERVER_NOT_STATIC", "blocker", "Endpoints default/kubernetes"]]);
    assert.strictEqual(
      found[0].message,
      "lists 2 apiserver addresses (192.168.50.10, 10.10.0.10) for the 1 kube-apiserver static pod (on cp-1): some apiserver is not a static pod services.strategy etcd-rewrite can stop, and it would keep serving and writing while etcd is rewritten",
    );
  });

  it("as many addresses as static pods, but one belongs to none of them: still a blocker", () => {
    const found = checkEtcdRewriteControlPlane(input({ pods: controlPlane("cp-1", "cp-2"), endpoints: [kubernetesEndpoints("192.168.50.10", "10.0.0.99")] }));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_APISERVER_NOT_STATIC", "blocker", "Endpoints default/kubernetes"]]);
    assert.match(found[0].message, /10\.0\.0\.99 is the address of none of them/);
  });

  it("an apiserver advertising an address other than its pod IP is matched by its Node's addresses or its flag, in any IPv6 spelling", () => {
    const pods = controlPlane("cp-1");
    pods[0].status = {};
    const node: V1Node = { metadata: { name: "cp-1" }, status: { addresses: [{ type: "InternalIP", address: "192.168.50.10" }, { type: "InternalIP", address: "fd00::10" }] } };
    assert.deepStrictEqual(checkEtcdRewriteControlPlane(input({ pods, nodes: [node], endpoints: [kubernetesEndpoints("fd00:0:0::10")] }, "etcd-rewrite", config("etcd-rewrite", [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }]))), []);
    pods[0].spec!.containers[0].command = ["kube-apiserver", "--advertise-address=10.1.2.3"];
    assert.deepStrictEqual(checkEtcdRewriteControlPlane(input({ pods, endpoints: [kubernetesEndpoints("10.1.2.3")] }, "etcd-rewrite", config("etcd-rewrite", [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }]))), []);
  });

  it("fewer addresses than static pods (an apiserver restarting) is fine; other Services' endpoints are not counted", () => {
    const other: V1Endpoints = { ...kubernetesEndpoints("10.0.0.1", "10.0.0.2", "10.0.0.3"), metadata: { namespace: "web", name: "kubernetes" } };
    assert.deepStrictEqual(checkEtcdRewriteControlPlane(input({ pods: controlPlane("cp-1", "cp-2"), endpoints: [kubernetesEndpoints("192.168.50.10"), other] })), []);
  });

  it("a controller-manager static pod on a node the config does not list as control-plane is a blocker", () => {
    const pods = [...controlPlane("cp-1", "cp-2"), mirrorPod("kube-controller-manager", "cp-3")];
    const found = checkEtcdRewriteControlPlane(input({ pods }));
    assert.deepStrictEqual(codes(found), [["ETCD_REWRITE_NODE_NOT_CONFIGURED", "blocker", "Node cp-3"]]);
    assert.match(found[0].message, /runs a kube-controller-manager static pod but cidr-migration:nodes does not list it with role control-plane/);
    assert.match(found[0].action, /add \{ name: cp-3, host: <address>, role: control-plane \} to cidr-migration:nodes, or use services\.strategy: recreate/);
  });

  describe("with the other checks (preflightFindings)", () => {
    it("an unlisted node running an apiserver is CONTROL_PLANE_NODE_NOT_CONFIGURED once, not again for its controller-manager", () => {
      const pods = controlPlane("cp-1", "cp-2", "cp-3");
      const found = preflightFindings(input({ pods, endpoints: [kubernetesEndpoints("192.168.50.10", "192.168.50.20", "192.168.50.30")] }));
      const blockers = found.filter((f) => f.severity === "blocker" && (f.code.startsWith("ETCD_REWRITE_") || f.code.startsWith("CONTROL_PLANE_")));
      assert.deepStrictEqual(codes(blockers), [["CONTROL_PLANE_NODE_NOT_CONFIGURED", "blocker", "Node cp-3"]]);
    });

    it("no apiserver static pod at all (a managed or external control plane) is refused once, by CONTROL_PLANE_PODS_MISSING", () => {
      const found = preflightFindings(input({ endpoints: [kubernetesEndpoints("10.0.0.99")] }));
      assert.ok(found.some((f) => f.code === "CONTROL_PLANE_PODS_MISSING" && f.severity === "blocker"));
      assert.deepStrictEqual(found.filter((f) => f.code.startsWith("ETCD_REWRITE_")), []);
    });

    it("registers the check: a stray apiserver address is in the preflight report", () => {
      const found = preflightFindings(input({ pods: controlPlane("cp-1", "cp-2"), endpoints: [kubernetesEndpoints("192.168.50.10", "192.168.50.20", "10.0.0.99")] }));
      assert.ok(found.some((f) => f.code === "ETCD_REWRITE_APISERVER_NOT_STATIC"));
    });
  });
});
