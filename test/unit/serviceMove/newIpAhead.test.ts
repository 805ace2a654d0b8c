import { strict as assert } from "assert";
import { validateConfig } from "../../../lib/config/config";
import { checkBridgeAdmission } from "../../../lib/preflight/bridgeAdmission";
import { emptyClusterObjects } from "../../../lib/preflight/clusterObjects";
import { checkServices } from "../../../lib/preflight/services";
import { KubeObject, KubeRest, kubeApiError } from "../../../lib/serviceMove/kubeRest";
import { AHEAD_ANNOTATION, removeNewIpsAhead, routedAheadIpsOf, routeNewIpsAhead, withoutNewIpAhead } from "../../../lib/serviceMove/newIpAhead";
import { buildRecreateBody } from "../../../lib/serviceMove/recreateBody";
import { baseValues } from "../../support/stackValues";

const values = (services: Record<string, unknown> = {}) => ({ ...baseValues(), services });

const service = (externalIPs?: string[], annotations: Record<string, string> = { "example.com/owner": "team-a" }): KubeObject => ({
  apiVersion: "v1", kind: "Service",
  metadata: { name: "web", namespace: "shop", resourceVersion: "7", uid: "u-1", annotations },
  spec: { clusterIP: "10.96.0.20", clusterIPs: ["10.96.0.20"], ports: [{ port: 80 }], ...(externalIPs ? { externalIPs } : {}) },
});

/** An apiserver of one namespace's Services: merge patches honour metadata.resourceVersion, as the real one does. */
function fakeRest(objects: KubeObject[], conflictsFirst = 0): KubeRest & { patches: unknown[] } {
  const store = new Map(objects.map((o) => [`/api/v1/namespaces/${o.metadata!.namespace}/services/${o.metadata!.name}`, structuredClone(o)]));
  let conflicts = conflictsFirst;
  const patches: unknown[] = [];
  const merge = (target: Record<string, unknown>, patch: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(patch)) {
      if (v === null) delete target[k];
      else if (typeof v === "object" && !Array.isArray(v)) merge((target[k] ??= {}) as Record<string, unknown>, v as Record<string, unknown>);
      else target[k] = v;
    }
  };
  const rest = {
    patches,
    async list() { return [...store.values()].map((o) => structuredClone(o)); },
    async getOptional(path: string) { const o = store.get(path); return o && structuredClone(o); },
    async mergePatch(path: string, patch: Record<string, any>) {
      const current = store.get(path)!;
      if (conflicts > 0 || patch.metadata?.resourceVersion !== current.metadata!.resourceVersion) {
        conflicts--;
        current.metadata!.resourceVersion = String(Number(current.metadata!.resourceVersion) + 1); // someone else wrote
        throw kubeApiError(409, "Conflict", "the object has been modified", "PATCH", path);
      }
      patches.push(patch);
      const { resourceVersion: _rv, ...meta } = patch.metadata ?? {};
      merge(current as Record<string, unknown>, { ...patch, metadata: meta });
      current.metadata!.resourceVersion = String(Number(current.metadata!.resourceVersion) + 1);
      return structuredClone(current);
    },
  };
  return rest as unknown as KubeRest & { patches: unknown[] };
}

describe("new ClusterIP routed first (services.routeNewIpsFirst)", () => {
  it("config: on by default with the recreate strategy, off under etcd-rewrite, a boolean when set", () => {
    assert.equal(validateConfig({ values: values() }).services.routeNewIpsFirst, true);
    assert.equal(validateConfig({ values: values({ routeNewIpsFirst: false }) }).services.routeNewIpsFirst, false);
    assert.equal(validateConfig({ values: { ...values({ strategy: "etcd-rewrite" }), nodeRollout: { strategy: "etcd-rewrite" } } }).services.routeNewIpsFirst, false);
    assert.throws(() => validateConfig({ values: values({ routeNewIpsFirst: "yes" }) }), /cidr-migration:services\.routeNewIpsFirst: expected true or false/);
  });

  it("routes the planned IP after the user's externalIPs, under the version read, and returns the Service as patched", async () => {
    const rest = fakeRest([service(["192.0.2.50"])]);
    const [routed] = await routeNewIpsAhead(rest, [{ live: service(["192.0.2.50"]), toIPs: ["10.112.0.20"] }]);
    assert.deepEqual((routed.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50", "10.112.0.20"]);
    assert.deepEqual(routedAheadIpsOf(routed), ["10.112.0.20"]);
    assert.equal(routed.metadata?.annotations?.["example.com/owner"], "team-a");
    assert.deepEqual(rest.patches, [{ metadata: { resourceVersion: "7", annotations: { [AHEAD_ANNOTATION]: "10.112.0.20" } }, spec: { externalIPs: ["192.0.2.50", "10.112.0.20"] } }]);
    // again (a re-run): nothing written
    await routeNewIpsAhead(rest, [{ live: routed, toIPs: ["10.112.0.20"] }]);
    assert.equal(rest.patches.length, 1);
  });

  it("a dual-stack Service is routed ahead in both families, one annotation naming both; the re-create body and the sweep take both", async () => {
    const dual = (externalIPs?: string[], annotations?: Record<string, string>): KubeObject => {
      const s = service(externalIPs, annotations);
      Object.assign(s.spec as Record<string, unknown>, { clusterIPs: ["10.96.0.20", "fd00:10:96::14"], ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "PreferDualStack" });
      return s;
    };
    const rest = fakeRest([dual(["192.0.2.50"])]);
    const [routed] = await routeNewIpsAhead(rest, [{ live: dual(["192.0.2.50"]), toIPs: ["10.112.0.20", "fd00:10:112::14"] }]);
    assert.deepEqual((routed.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50", "10.112.0.20", "fd00:10:112::14"]);
    assert.equal(routed.metadata?.annotations?.[AHEAD_ANNOTATION], "10.112.0.20,fd00:10:112::14");
    await routeNewIpsAhead(rest, [{ live: routed, toIPs: ["10.112.0.20", "fd00:10:112::14"] }]);
    assert.equal(rest.patches.length, 1, "a re-run writes nothing");
    // an earlier release's annotation named the first family only: the second is added, the first not twice
    const older = fakeRest([dual(["10.112.0.20"], { [AHEAD_ANNOTATION]: "10.112.0.20" })]);
    const [completed] = await routeNewIpsAhead(older, [{ live: dual(["10.112.0.20"], { [AHEAD_ANNOTATION]: "10.112.0.20" }), toIPs: ["10.112.0.20", "fd00:10:112::14"] }]);
    assert.deepEqual((completed.spec as { externalIPs: string[] }).externalIPs, ["10.112.0.20", "fd00:10:112::14"]);
    assert.deepEqual(routedAheadIpsOf(completed), ["10.112.0.20", "fd00:10:112::14"]);

    const { body } = buildRecreateBody(withoutNewIpAhead(routed), "10.96.0.20", "10.112.0.20", { fromIP: "fd00:10:96::14", toIP: "fd00:10:112::14" });
    assert.deepEqual((body.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50"]);
    assert.deepEqual((body.spec as { clusterIPs: string[] }).clusterIPs, ["10.112.0.20", "fd00:10:112::14"]);
    assert.deepEqual(await removeNewIpsAhead(rest), ["shop/web 10.112.0.20,fd00:10:112::14"]);
    const [swept] = await rest.list("");
    assert.deepEqual((swept.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50"]);
  });

  it("a Service written meanwhile is read again and patched at its new version", async () => {
    const rest = fakeRest([service()], 2);
    const [routed] = await routeNewIpsAhead(rest, [{ live: service(), toIPs: ["10.112.0.20"] }]);
    assert.deepEqual(routedAheadIpsOf(routed), ["10.112.0.20"]);
    assert.equal(rest.patches.length, 1);
  });

  it("the re-create body leaves out what was routed first: the user's externalIPs and annotations as they were", () => {
    const routed = service(["192.0.2.50", "10.112.0.20"], { "example.com/owner": "team-a", [AHEAD_ANNOTATION]: "10.112.0.20" });
    assert.deepEqual(withoutNewIpAhead(routed), service(["192.0.2.50"]));
    // the apiserver defaulted externalTrafficPolicy when our entry made the ClusterIP Service external: it goes too
    const alone = service(["10.112.0.20"], { [AHEAD_ANNOTATION]: "10.112.0.20" });
    (alone.spec as Record<string, unknown>).externalTrafficPolicy = "Cluster";
    const plain = withoutNewIpAhead(alone);
    assert.equal((plain.spec as Record<string, unknown>).externalIPs, undefined);
    assert.equal((plain.spec as Record<string, unknown>).externalTrafficPolicy, undefined);
    const nodePort = service(["10.112.0.20"], { [AHEAD_ANNOTATION]: "10.112.0.20" });
    Object.assign(nodePort.spec as Record<string, unknown>, { type: "NodePort", externalTrafficPolicy: "Local" });
    assert.equal((withoutNewIpAhead(nodePort).spec as Record<string, unknown>).externalTrafficPolicy, "Local", "a NodePort's own policy stays");
    assert.equal(plain.metadata?.annotations, undefined);
    const { body } = buildRecreateBody(withoutNewIpAhead(routed), "10.96.0.20", "10.112.0.20");
    assert.deepEqual((body.spec as { externalIPs: string[]; clusterIPs: string[] }).externalIPs, ["192.0.2.50"]);
    assert.deepEqual((body.spec as { clusterIPs: string[] }).clusterIPs, ["10.112.0.20"]);
  });

  it("the sweep removes only ours: the user's externalIPs stay, a Service without one is not written", async () => {
    const other = { ...service(["192.0.2.9"]), metadata: { ...service().metadata, name: "db" } };
    const lone = service(["10.112.0.21"], { [AHEAD_ANNOTATION]: "10.112.0.21" });
    lone.metadata!.name = "lone";
    (lone.spec as Record<string, unknown>).externalTrafficPolicy = "Cluster";
    const rest = fakeRest([service(["192.0.2.50", "10.112.0.20"], { [AHEAD_ANNOTATION]: "10.112.0.20" }), other, lone]);
    assert.deepEqual(await removeNewIpsAhead(rest), ["shop/web 10.112.0.20", "shop/lone 10.112.0.21"]);
    const [web] = (await rest.list("")).filter((s) => s.metadata?.name === "web");
    assert.deepEqual((web.spec as { externalIPs: string[] }).externalIPs, ["192.0.2.50"]);
    assert.equal(routedAheadIpsOf(web), undefined);
    const [left] = (await rest.list("")).filter((s) => s.metadata?.name === "lone");
    assert.deepEqual(left.spec, { clusterIP: "10.96.0.20", clusterIPs: ["10.96.0.20"], ports: [{ port: 80 }] }, "no externalIPs, and no traffic policy a ClusterIP Service cannot hold");
    assert.equal(rest.patches.length, 2);
  });

  it("preflight: a refused dry run blocks, naming the key and how to turn it off; our own entry on a re-run is not the user's address in the new range", () => {
    const refused = { ip: "10.96.0.1", refused: "externalIPs not allowed" };
    const input = (config = validateConfig({ values: values() })) => ({ config, cluster: emptyClusterObjects(), allowSecretValues: false, bridgeAdmission: refused });
    const [finding, ...rest] = checkBridgeAdmission(input());
    assert.deepEqual(rest, []);
    assert.equal(finding.code, "NEW_IP_FIRST_REFUSED");
    assert.equal(finding.severity, "blocker");
    assert.match(finding.message, /cidr-migration:services\.routeNewIpsFirst is true.*10\.96\.0\.1: externalIPs not allowed/);
    assert.match(finding.action, /routeNewIpsFirst to false/);
    assert.deepEqual(checkBridgeAdmission(input(validateConfig({ values: values({ routeNewIpsFirst: false }) }))), []);

    const config = validateConfig({ values: values() });
    const codes = (annotations: Record<string, string>) => checkServices({
      config, allowSecretValues: false,
      cluster: { ...emptyClusterObjects(), services: [{ metadata: { namespace: "shop", name: "web", annotations }, spec: { type: "ClusterIP", clusterIP: "10.96.0.20", clusterIPs: ["10.96.0.20"], selector: { app: "web" }, externalIPs: ["10.112.0.20"] } }] },
    }).map((f) => f.code);
    assert.ok(codes({}).includes("EXTERNAL_IP_IN_NEW_RANGE"), "a user's externalIP in the new range blocks");
    assert.ok(!codes({ [AHEAD_ANNOTATION]: "10.112.0.20" }).includes("EXTERNAL_IP_IN_NEW_RANGE"), "ours does not");
  });
});
