import { strict as assert } from "assert";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError } from "../../../lib/config/errors";
import { checkBridgeAdmission } from "../../../lib/preflight/bridgeAdmission";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { checkServices } from "../../../lib/preflight/services";
import { BRIDGE_ANNOTATION, bridgedIpsOf, bridgeRemovalPatch, withOldIpBridge } from "../../../lib/serviceMove/oldIpBridge";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";
import { correctIpAnnotations } from "../../../lib/serviceMove/ipAnnotations";

const values = (services: Record<string, unknown> = {}) => ({
  serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
  podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
  etcd: { endpoints: ["http://127.0.0.1:2379"] },
  nodes: [{ name: "cp-1", host: "192.168.50.10", role: "control-plane" }],
  services,
});

const body = (externalIPs?: string[]): KubeObject => ({
  apiVersion: "v1", kind: "Service",
  metadata: { name: "web", namespace: "shop", annotations: { "example.com/owner": "team-a" } },
  spec: { clusterIP: "10.112.0.20", clusterIPs: ["10.112.0.20"], ports: [{ port: 80 }], ...(externalIPs ? { externalIPs } : {}) },
});

describe("old-ClusterIP bridge (pure)", () => {
  it("config: off by default, a boolean when set, anything else refused by its key", () => {
    assert.equal(validateConfig({ values: values() }).services.bridgeOldIps, false);
    assert.equal(validateConfig({ values: values({ bridgeOldIps: true }) }).services.bridgeOldIps, true);
    assert.throws(() => validateConfig({ values: values({ bridgeOldIps: "yes please" }) }), (err: unknown) =>
      err instanceof ConfigError && /cidr-migration:services\.bridgeOldIps/.test(err.message));
  });

  it("appends the old IP after the user's externalIPs and names it in the annotation; the input is not changed", () => {
    const original = body(["192.0.2.50"]);
    const bridged = withOldIpBridge(original, ["10.96.0.20"]);
    assert.deepEqual((bridged.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50", "10.96.0.20"]);
    assert.deepEqual(bridged.metadata?.annotations, { "example.com/owner": "team-a", [BRIDGE_ANNOTATION]: "10.96.0.20" });
    assert.deepEqual(bridgedIpsOf(bridged), ["10.96.0.20"]);
    assert.deepEqual(original, body(["192.0.2.50"]));
  });

  it("a Service whose user already lists the old IP is left as it is, so the removal never takes the user's entry", () => {
    const listed = body(["10.96.0.20"]);
    assert.equal(withOldIpBridge(listed, ["10.96.0.20"]), listed);
    assert.equal(bridgeRemovalPatch(listed), undefined);
  });

  it("the removal patch restores the user's externalIPs, or drops the field they never had, under the version read", () => {
    const withUsers = { ...withOldIpBridge(body(["192.0.2.50"]), ["10.96.0.20"]) };
    withUsers.metadata = { ...withUsers.metadata, resourceVersion: "42" };
    assert.deepEqual(bridgeRemovalPatch(withUsers), {
      metadata: { resourceVersion: "42", annotations: { [BRIDGE_ANNOTATION]: null } },
      spec: { externalIPs: ["192.0.2.50"] },
    });
    const alone = withOldIpBridge(body(), ["10.96.0.20"]);
    assert.deepEqual((bridgeRemovalPatch(alone) as { spec: unknown }).spec, { externalIPs: null });
  });

  it("a dual-stack Service is bridged in both families, one annotation naming both; the removal takes both and only those", () => {
    const bridged = withOldIpBridge(body(["192.0.2.50"]), ["10.96.0.20", "fd00:10:96::14"]);
    assert.deepEqual((bridged.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50", "10.96.0.20", "fd00:10:96::14"]);
    assert.equal(bridged.metadata?.annotations?.[BRIDGE_ANNOTATION], "10.96.0.20,fd00:10:96::14");
    assert.deepEqual(bridgedIpsOf(bridged), ["10.96.0.20", "fd00:10:96::14"]);
    assert.deepEqual((bridgeRemovalPatch(bridged) as { spec: unknown }).spec, { externalIPs: ["192.0.2.50"] });
    // the user listed the IPv6 one already: only the IPv4 one is ours
    const partly = withOldIpBridge(body(["fd00:10:96::14"]), ["10.96.0.20", "fd00:10:96::14"]);
    assert.equal(partly.metadata?.annotations?.[BRIDGE_ANNOTATION], "10.96.0.20");
    assert.deepEqual((bridgeRemovalPatch(partly) as { spec: unknown }).spec, { externalIPs: ["fd00:10:96::14"] });
  });

  it("preflight: a refused dry run is a blocker naming the key, the address and admission's reason; nothing when the bridge is off", () => {
    const on = validateConfig({ values: values({ bridgeOldIps: true, routeNewIpsFirst: false }) });
    const refused = { ip: "10.96.0.1", refused: "externalIPs not allowed" };
    const [finding] = checkBridgeAdmission({ config: on, cluster: emptyClusterObjects(), allowSecretValues: false, bridgeAdmission: refused });
    assert.equal(finding.code, "OLD_IP_BRIDGE_REFUSED");
    assert.equal(finding.severity, "blocker");
    assert.match(finding.message, /cidr-migration:services\.bridgeOldIps is true.*10\.96\.0\.1: externalIPs not allowed/);
    assert.match(finding.action, /bridgeOldIps to false/);
    const off = validateConfig({ values: values({ routeNewIpsFirst: false }) });
    assert.deepEqual(checkBridgeAdmission({ config: off, cluster: emptyClusterObjects(), allowSecretValues: false, bridgeAdmission: refused }), []);
    assert.deepEqual(checkBridgeAdmission({ config: on, cluster: emptyClusterObjects(), allowSecretValues: false, bridgeAdmission: { ip: "10.96.0.1" } }), []);
  });

  it("preflight, services.strategy etcd-rewrite: the DNS and kubernetes bridges are not optional, so a refusal blocks with bridgeOldIps off too, naming the strategy", () => {
    const refused = { ip: "10.96.0.1", refused: "externalIPs not allowed" };
    const rewrite = validateConfig({ values: { ...values({ strategy: "etcd-rewrite", bridgeOldIps: false }), nodeRollout: { strategy: "etcd-rewrite" } } });
    const [finding] = checkBridgeAdmission({ config: rewrite, cluster: emptyClusterObjects(), allowSecretValues: false, bridgeAdmission: refused });
    assert.equal(finding.severity, "blocker");
    assert.match(finding.message, /services\.strategy etcd-rewrite keeps the DNS and kubernetes Services answering at their old IPs/);
    assert.match(finding.action, /use services\.strategy recreate/);
    // the rewrite bridges every moving Service unless told otherwise
    assert.equal(validateConfig({ values: values({ strategy: "etcd-rewrite" }) }).services.bridgeOldIps, true);
  });

  it("an annotation naming the old IP is corrected when a Service moves, but never the bridge's own, which its removal reads", () => {
    const corrected = correctIpAnnotations({ [BRIDGE_ANNOTATION]: "10.96.0.20", "example.com/endpoint": "10.96.0.20:80" }, "10.96.0.20", "10.112.0.20");
    assert.deepEqual(corrected.annotations, { [BRIDGE_ANNOTATION]: "10.96.0.20", "example.com/endpoint": "10.112.0.20:80" });
    assert.deepEqual(corrected.changed, ["example.com/endpoint"]);
  });

  it("preflight on a re-run: the bridge's own externalIP is not reported as the user's address in the old range", () => {
    const config = validateConfig({ values: values({ bridgeOldIps: true }) });
    const service = (annotations: Record<string, string>) => ({
      metadata: { namespace: "shop", name: "web", annotations },
      spec: { type: "ClusterIP", clusterIP: "10.112.0.20", clusterIPs: ["10.112.0.20"], selector: { app: "web" }, externalIPs: ["10.96.0.20"] },
    });
    const codes = (annotations: Record<string, string>) =>
      checkServices({ config, cluster: { ...emptyClusterObjects(), services: [service(annotations)] }, allowSecretValues: false }).map((f) => f.code);
    assert.ok(codes({}).includes("EXTERNAL_IP_IN_OLD_RANGE"), "a user's externalIP in the old range is reported");
    assert.ok(!codes({ [BRIDGE_ANNOTATION]: "10.96.0.20" }).includes("EXTERNAL_IP_IN_OLD_RANGE"), "ours is not");
    assert.ok(!codes({ [BRIDGE_ANNOTATION]: "10.96.0.20,fd00:10:96::14" }).includes("EXTERNAL_IP_IN_OLD_RANGE"), "nor when the annotation names both families");
  });
});
