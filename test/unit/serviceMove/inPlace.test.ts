import * as assert from "node:assert/strict";
import { HOPPING_ANNOTATION, hopInBody, hopOutPatch, hopStandInName, isHoppedOut, movesInPlace, pickStandInIps, standInHostName } from "../../../lib/serviceMove/inPlace";
import { buildStandInBody } from "../../../lib/serviceMove/standIn";
import { KubeObject } from "../../../lib/serviceMove/kubeRest";

const service = (spec: Record<string, unknown>): KubeObject => ({ metadata: { name: "web", namespace: "shop" }, spec: { clusterIP: "10.96.0.20", clusterIPs: ["10.96.0.20"], ...spec } });
const move = { namespace: "shop", name: "web", fromIP: "10.96.0.20", toIP: "10.100.0.20" };

describe("in-place Service moves: which go, names, addresses and the two writes", () => {
  it("goes in place only for a single-stack ClusterIP Service with a selector", () => {
    assert.equal(movesInPlace(service({ selector: { app: "web" } }), move), true);
    assert.equal(movesInPlace(service({ type: "ClusterIP", selector: { app: "web" } }), move), true);
    assert.equal(movesInPlace(service({ type: "NodePort", selector: { app: "web" } }), move), false, "its node ports would be released");
    assert.equal(movesInPlace(service({ type: "LoadBalancer", selector: { app: "web" } }), move), false, "its load balancer would be released");
    assert.equal(movesInPlace(service({}), move), false, "no selector: no pods a stand-in could select");
    assert.equal(movesInPlace(service({ selector: { app: "web" }, clusterIPs: ["10.96.0.20", "fd00::20"] }), move), false, "dual-stack");
    assert.equal(movesInPlace(service({ selector: { app: "web" } }), { ...move, otherFamily: { fromIP: "fd00::20", toIP: "fd01::20" } }), false);
    assert.equal(movesInPlace(service({ selector: { app: "web" } }), { ...move, vacate: { namespace: "kube-system", name: "dns-temp" } }), false, "the DNS swap has its own stand-in");
  });

  it("names a stand-in after its Service, within 63 characters, and keeps shortened names apart", () => {
    assert.match(hopStandInName("web"), /^web-hop-[0-9a-f]{5}$/);
    const long = "a".repeat(49) + "-" + "b".repeat(13);
    const other = "a".repeat(49) + "-" + "c".repeat(13);
    assert.ok(hopStandInName(long).length <= 63, hopStandInName(long));
    assert.notEqual(hopStandInName(long), hopStandInName(other));
    assert.match(hopStandInName("a".repeat(49) + "-x"), /^a{49}-hop-/, "no double dash where the name was cut");
    assert.equal(standInHostName({ namespace: "shop", name: hopStandInName("web") }, "corp.example"), `${hopStandInName("web")}.shop.svc.corp.example`);
  });

  it("picks stand-in addresses from the top of the new range down, past every held or planned one", () => {
    const taken = new Set(["10.100.255.254", "10.100.255.252"]);
    assert.deepEqual(pickStandInIps("10.100.0.0/16", "10.100.0.20", taken, 3), ["10.100.255.253", "10.100.255.251", "10.100.255.250"]);
    assert.deepEqual(pickStandInIps("10.100.0.0/29", "10.100.0.1", new Set(), 5), ["10.100.0.6", "10.100.0.5", "10.100.0.4", "10.100.0.3", "10.100.0.2"], "never the network, broadcast or kubernetes Service's address");
    assert.equal(pickStandInIps("10.100.0.0/29", "10.100.0.1", new Set(["10.100.0.2"]), 5), undefined, "too small: refused, not partly picked");
    assert.deepEqual(pickStandInIps("10.100.0.0/16,fd00:100::/112", "fd00:100::20", new Set(), 1), ["fd00:100::fffe"], "the range of the Service's family");
    assert.deepEqual(pickStandInIps("10.100.0.0/16", "10.100.0.20", taken, 0), []);
  });

  it("the first write: ExternalName naming the stand-in, the planned IP noted, only at the journaled resourceVersion", () => {
    const patch = hopOutPatch("41", "web-hop-1a2b3.shop.svc.cluster.local", "10.100.0.20");
    assert.deepEqual(patch, {
      metadata: { resourceVersion: "41", annotations: { [HOPPING_ANNOTATION]: "10.100.0.20" } },
      spec: { type: "ExternalName", externalName: "web-hop-1a2b3.shop.svc.cluster.local" },
    });
    const hopped = service({ type: "ExternalName", externalName: "x" });
    hopped.metadata!.annotations = { [HOPPING_ANNOTATION]: "10.100.0.20" };
    assert.equal(isHoppedOut(hopped, "10.100.0.20"), true);
    assert.equal(isHoppedOut(hopped, "10.100.0.21"), false, "a hop to another IP is not this move's");
    assert.equal(isHoppedOut(service({ type: "ExternalName", externalName: "db.example.com" }), "10.100.0.20"), false, "a user's own ExternalName Service");
    assert.equal(isHoppedOut(undefined, "10.100.0.20"), false);
  });

  it("the second write: the re-create body over the hopped object, with its uid and resourceVersion", () => {
    const body: KubeObject = { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "shop", labels: { app: "web" } }, spec: { clusterIP: "10.100.0.20", clusterIPs: ["10.100.0.20"], selector: { app: "web" } } };
    const live: KubeObject = { metadata: { name: "web", namespace: "shop", uid: "u-1", resourceVersion: "42", annotations: { [HOPPING_ANNOTATION]: "10.100.0.20" } }, spec: { type: "ExternalName", externalName: "x" } };
    assert.deepEqual(hopInBody(body, live), { ...body, metadata: { ...body.metadata, uid: "u-1", resourceVersion: "42" } });
  });

  it("a stand-in can answer at extra addresses and carry an extra label", () => {
    const source = service({ selector: { app: "web" }, ports: [{ port: 80, nodePort: 30080 }] });
    const body = buildStandInBody(source, { namespace: "shop", name: "web-hop-1", of: { namespace: "shop", name: "web" }, ip: "10.100.255.254" }, { labels: { "cidr-migration.io/hop-stand-in": "true" }, externalIPs: ["10.100.0.20"] });
    assert.deepEqual((body.spec as Record<string, unknown>).externalIPs, ["10.100.0.20"]);
    assert.equal(body.metadata?.labels?.["cidr-migration.io/hop-stand-in"], "true");
    assert.deepEqual((body.spec as Record<string, unknown>).ports, [{ port: 80 }]);
  });
});
