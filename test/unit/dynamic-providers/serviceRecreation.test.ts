// The ServiceRecreation provider's check and diff (pure: they run during preview and never reach the cluster),
// and the resources it and the DNS continuity components declare, under the SDK's mock monitor (graph shape and
// inputs only; test/integration/serviceRecreation.test.ts runs the same inputs through the real host).
import { strict as assert } from "assert";
import * as pulumi from "@pulumi/pulumi";
import { DnsFinalSwap, DnsTemporaryService } from "../../../components/dnsContinuity";
import { ServiceRecreation, serviceRecreationProvider } from "../../../dynamic-providers/serviceRecreation";
import { validateConfig } from "../../../lib/config/config";
import { DEFAULT_SERVICE_PARALLELISM } from "../../../lib/config/migrationConfig";
import { DEFAULT_DELETE_TIMEOUT_SECONDS } from "../../../lib/serviceMove/moveTypes";
import { withMoverDefaults } from "../../../lib/serviceMove/moverContext";
import { captureGraph, isWireSecret, plaintextOf } from "../../support/pulumiMocks";
import { baseValues } from "../../support/stackValues";

const UNKNOWN = pulumi.runtime.unknownValue as unknown as string;
const KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: S0VZLU1BVEVSSUFM\n";
const DYNAMIC = "pulumi-nodejs:dynamic/cidr-migration:ServiceRecreation";

type Inputs = Record<string, unknown>;
const check = async (news: Inputs) => {
  const result = await serviceRecreationProvider.check!({}, news);
  return { inputs: result.inputs!, failures: result.failures ?? [] };
};
/** olds as the state would hold them: these tests give the inputs' shape, which the outputs extend. */
type RecreationState = Parameters<NonNullable<typeof serviceRecreationProvider.diff>>[1];
const diff = (olds: Inputs, news: Inputs) => serviceRecreationProvider.diff!("id", olds as unknown as RecreationState, news);

function inputs(overrides: Inputs = {}): Inputs {
  return {
    kubeconfig: KUBECONFIG,
    moves: {
      "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.7.7", type: "ClusterIP" },
      "shop/edge": { fromIP: "10.96.7.8", toIP: "10.100.7.8", type: "NodePort" },
    },
    serviceCidr: "10.100.0.0/16",
    ...overrides,
  };
}

describe("ServiceRecreation provider: check", () => {
  it("accepts a plan's moves and fills the defaults", async () => {
    const result = await check(inputs());
    assert.deepEqual(result.failures, []);
    const checked = result.inputs as Inputs;
    assert.equal(checked.parallelism, DEFAULT_SERVICE_PARALLELISM);
    assert.equal(checked.allowLoadBalancerRecreate, false);
    assert.equal(checked.journalNamespace, "kube-system");
    assert.equal(checked.adoptJournals, true);
    assert.equal(checked.deleteTimeoutSeconds, 120);
    assert.deepEqual(checked.standIns, {});
  });

  it("refuses a LoadBalancer without consent, naming the Service and the config key; accepts it with consent", async () => {
    const lb = inputs({ moves: { "shop/edge": { fromIP: "10.96.7.8", toIP: "10.100.7.8", type: "LoadBalancer" } } });
    const refused = await check(lb);
    assert.deepEqual(refused.failures, [{
      property: 'moves["shop/edge"]',
      reason: "Service shop/edge is a LoadBalancer: re-creating it can give its cloud load balancer a new external address; set cidr-migration:services.allowLoadBalancerRecreate to true to consent, or leave it out",
    }]);
    assert.deepEqual((await check({ ...lb, allowLoadBalancerRecreate: true })).failures, []);
  });

  it("refuses bad moves with one readable reason each", async () => {
    const result = await check(inputs({
      moves: {
        "no-slash": { fromIP: "10.96.0.1", toIP: "10.100.0.1" },
        "shop/a": { fromIP: "10.96.0.300", toIP: "10.100.0.2" },
        "shop/b": { fromIP: "10.96.0.3", toIP: "10.101.0.3" },
        "shop/c": { fromIP: "10.96.0.4", toIP: "10.100.0.2" },
        "shop/d": { fromIP: "10.96.0.5", toIP: "10.100.0.5", vacate: "nope" },
      },
      parallelism: 0,
    }));
    assert.deepEqual(result.failures.map((f) => `${f.property}: ${f.reason}`), [
      'parallelism: parallelism (cidr-migration:services.parallelism) must be a whole number of at least 1; got 0',
      'moves["no-slash"]: "no-slash" is not a Service key; use "namespace/name"',
      'moves["shop/a"]: Service shop/a: fromIP must be an IP address; got "10.96.0.300"',
      'moves["shop/b"]: Service shop/b: toIP 10.101.0.3 is outside the new range 10.100.0.0/16',
      'moves["shop/c"]: Services shop/a and shop/c are both planned at 10.100.0.2; each needs its own IP',
      'moves["shop/d"]: Service shop/d: vacate must be a "namespace/name"; got "nope"',
    ]);
  });

  it("a dual-stack pair: each planned address checked against its own family's range, the second family's too (issue 17)", async () => {
    const result = await check(inputs({
      serviceCidr: "10.100.0.0/16,fd00:10:100::/112",
      moves: {
        "shop/a": { fromIP: "10.96.0.2", toIP: "10.100.0.2", otherFamily: { fromIP: "fd00:10:96::2", toIP: "fd00:10:100::2" } },
        "shop/b": { fromIP: "fd00:10:96::3", toIP: "fd00:10:101::3" },
        "shop/c": { fromIP: "10.96.0.4", toIP: "10.100.0.4", otherFamily: { fromIP: "fd00:10:96::4", toIP: "fd00:10:100::2" } },
        "shop/d": { fromIP: "10.96.0.5", toIP: "10.100.0.5", otherFamily: { fromIP: "nope", toIP: "fd00:10:100::5" } },
      },
    }));
    assert.deepEqual(result.failures.map((f) => `${f.property}: ${f.reason}`), [
      'moves["shop/b"]: Service shop/b: toIP fd00:10:101::3 is outside the new range fd00:10:100::/112',
      'moves["shop/c"]: Services shop/a and shop/c are both planned at fd00:10:100::2; each needs its own IP',
      'moves["shop/d"]: Service shop/d: otherFamily.fromIP must be an IP address; got "nope"',
    ]);
    const pair = await check(inputs({ serviceCidr: "10.100.0.0/16,10.101.0.0/16" }));
    assert.match(pair.failures.map((f) => f.reason).join("\n"), /serviceCidr must be .* or a dual-stack pair/);
  });

  it("serviceWatchersBefore: a count or unknown (preflight's output at preview); anything else refused; a new count is no change", async () => {
    assert.deepEqual((await check(inputs({ serviceWatchersBefore: 11 }))).failures, []);
    assert.deepEqual((await check(inputs({ serviceWatchersBefore: UNKNOWN }))).failures, []);
    assert.deepEqual((await check(inputs({ serviceWatchersBefore: -1 }))).failures.map((f) => f.property), ["serviceWatchersBefore"]);
    assert.deepEqual((await check(inputs({ serviceWatchersBefore: "11" }))).failures.map((f) => f.property), ["serviceWatchersBefore"]);
    const olds = (await check(inputs({ serviceWatchersBefore: 11 }))).inputs;
    assert.equal((await diff(olds, (await check(inputs({ serviceWatchersBefore: 9 }))).inputs)).changes, false, "a re-run's preflight count moves nothing again");
  });

  it("never echoes the kubeconfig, and wants its content rather than a path", async () => {
    const missing = await check(inputs({ kubeconfig: undefined }));
    assert.deepEqual(missing.failures.map((f) => f.property), ["kubeconfig"]);
    const blank = await check(inputs({ kubeconfig: "  " }));
    assert.match(blank.failures[0].reason, /content \(a non-empty string\), not a path/);
    const bad = await check(inputs({ kubeconfig: KUBECONFIG, parallelism: 1.5 }));
    assert.equal(bad.failures.length, 1);
    assert.ok(!JSON.stringify(bad.failures).includes("S0VZLU1BVEVSSUFM"));
  });

  it("preview: unknown values anywhere are accepted and not judged", async () => {
    for (const news of [
      inputs({ moves: UNKNOWN }),
      inputs({ kubeconfig: UNKNOWN, parallelism: UNKNOWN, serviceCidr: UNKNOWN }),
      inputs({ moves: { "shop/cart": UNKNOWN, "shop/edge": { fromIP: UNKNOWN, toIP: "10.100.7.8", type: "LoadBalancer" } }, allowLoadBalancerRecreate: UNKNOWN }),
      inputs({ kubernetesService: UNKNOWN, standIns: UNKNOWN }),
    ]) {
      assert.deepEqual((await check(news)).failures, [], JSON.stringify(news));
    }
  });

  it("checks the kubernetes Service and stand-in requests", async () => {
    const result = await check(inputs({ kubernetesService: { fromIP: "10.96.0.1", toIP: "x" }, standIns: { "kube-system/t": { of: "kube-dns", ip: "10.100.0.10" } } }));
    assert.deepEqual(result.failures.map((f) => f.property), ["kubernetesService", 'standIns["kube-system/t"]']);
  });
});

describe("ServiceRecreation defaults: one source each", () => {
  it("parallelism: the provider's default is the config's services.parallelism default", async () => {
    const configDefault = validateConfig({ values: baseValues() }).services.parallelism;
    assert.equal(configDefault, DEFAULT_SERVICE_PARALLELISM);
    assert.equal((await check(inputs())).inputs.parallelism, configDefault);
    const graph = await captureGraph(() => new ServiceRecreation("services", { kubeconfig: KUBECONFIG, moves: {} }));
    assert.equal(graph.named("services").inputs.parallelism, configDefault);
  });

  it("delete timeout: the provider's check, its declared input and the mover all default to 120 s", async () => {
    assert.equal(DEFAULT_DELETE_TIMEOUT_SECONDS, 120);
    assert.equal((await check(inputs())).inputs.deleteTimeoutSeconds, DEFAULT_DELETE_TIMEOUT_SECONDS);
    const graph = await captureGraph(() => new ServiceRecreation("services", { kubeconfig: KUBECONFIG, moves: {} }));
    assert.equal(graph.named("services").inputs.deleteTimeoutSeconds, DEFAULT_DELETE_TIMEOUT_SECONDS);
    assert.equal(withMoverDefaults({ parallelism: 1, allowLoadBalancerRecreate: false }).deleteTimeoutMs, DEFAULT_DELETE_TIMEOUT_SECONDS * 1000);
  });
});

describe("ServiceRecreation provider: diff", () => {
  const state = (overrides: Inputs = {}) => ({ ...inputs(), parallelism: 10, version: "1", standIns: {}, results: {}, ...overrides });

  it("the same moves again: no change (a re-run after success does nothing)", async () => {
    assert.equal((await diff(state(), inputs({ version: "1" }))).changes, false);
  });

  it("Services that left the plan, or whose fromIP now reads the new IP, are not changes", async () => {
    const after = inputs({ moves: { "shop/cart": { fromIP: "10.100.7.7", toIP: "10.100.7.7" } }, version: "1" });
    assert.equal((await diff(state(), after)).changes, false);
  });

  it("a Service planned elsewhere, or a new one, is a change; never a replacement", async () => {
    const moved = await diff(state(), inputs({ moves: { "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.9.9" } }, version: "1" }));
    assert.equal(moved.changes, true);
    assert.equal(moved.replaces, undefined);
    const added = await diff(state(), inputs({ moves: { "shop/new": { fromIP: "10.96.1.1", toIP: "10.100.1.1" } }, version: "1" }));
    assert.equal(added.changes, true);
  });

  it("a dual-stack Service's second family planned elsewhere is a change", async () => {
    const dual = (toIP: string) => inputs({ moves: { "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.7.7", otherFamily: { fromIP: "fd00:10:96::7", toIP } } }, version: "1" });
    const before = state({ moves: (dual("fd00:10:100::7") as Inputs).moves });
    assert.equal((await diff(before, dual("fd00:10:100::7"))).changes, false);
    assert.equal((await diff(before, dual("fd00:10:100::8"))).changes, true);
  });

  it("parallelism or consent alone change nothing; the kubernetes Service's target or unknown moves do", async () => {
    assert.equal((await diff(state(), inputs({ parallelism: 50, allowLoadBalancerRecreate: true, version: "1" }))).changes, false);
    assert.equal((await diff(state(), inputs({ kubernetesService: { fromIP: "10.96.0.1", toIP: "10.100.0.1" }, version: "1" }))).changes, true);
    assert.equal((await diff(state(), inputs({ moves: UNKNOWN }))).changes, true);
  });
});

describe("ServiceRecreation and the DNS components (under mocks)", () => {
  it("ServiceRecreation: its type token, the kubeconfig only as a secret on the wire", async () => {
    const graph = await captureGraph(() => new ServiceRecreation("services", { kubeconfig: KUBECONFIG, moves: { "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.7.7" } }, parallelism: 4 }));
    const resource = graph.named("services");
    assert.equal(resource.type, DYNAMIC);
    assert.ok(isWireSecret(resource.rawInputs.kubeconfig));
    assert.ok(!plaintextOf(resource.rawInputs).includes("S0VZLU1BVEVSSUFM"));
    assert.deepEqual(resource.inputs.moves, { "shop/cart": { fromIP: "10.96.7.7", toIP: "10.100.7.7" } });
    assert.equal(resource.inputs.parallelism, 4);
  });

  it("DnsTemporaryService: one stand-in at the final IP copying kube-dns, adopting no other journal", async () => {
    const graph = await captureGraph(() => new DnsTemporaryService("dns-temporary", { kubeconfig: KUBECONFIG, dns: { namespace: "kube-system", name: "kube-dns" }, finalIP: "10.100.0.10" }));
    const component = graph.named("dns-temporary");
    assert.equal(component.type, "cidr-migration:dns:DnsTemporaryService");
    const child = graph.named("dns-temporary-stand-in");
    assert.equal(child.type, DYNAMIC);
    assert.equal(child.parentUrn, component.urn);
    assert.deepEqual(child.inputs.moves, {});
    assert.deepEqual(child.inputs.standIns, { "kube-system/kube-dns-cidr-migration-temp": { of: "kube-system/kube-dns", ip: "10.100.0.10" } });
    assert.equal(child.inputs.adoptJournals, false);
    assert.ok(isWireSecret(child.rawInputs.kubeconfig));
  });

  it("DnsFinalSwap: the DNS move vacating the stand-in, alone, after the temporary half", async () => {
    const graph = await captureGraph(() => {
      const temporary = new DnsTemporaryService("dns-temporary", { kubeconfig: KUBECONFIG, dns: { namespace: "kube-system", name: "kube-dns" }, finalIP: "10.100.0.10" });
      return new DnsFinalSwap("dns-final", { kubeconfig: KUBECONFIG, dns: { namespace: "kube-system", name: "kube-dns" }, fromIP: "10.96.0.10", toIP: "10.100.0.10", temporary });
    });
    const swap = graph.named("dns-final-swap");
    assert.equal(swap.parentUrn, graph.named("dns-final").urn);
    assert.deepEqual(swap.inputs.moves, { "kube-system/kube-dns": { fromIP: "10.96.0.10", toIP: "10.100.0.10", vacate: "kube-system/kube-dns-cidr-migration-temp" } });
    assert.equal(swap.inputs.parallelism, 1);
    assert.equal(swap.inputs.adoptJournals, false);
    assert.ok(graph.dependsOn(swap, graph.named("dns-temporary-stand-in")));
  });

  it("the stand-in and the swap wait for what their component waits for: the SDK does not pass a component's dependsOn to its children", async () => {
    const dns = { namespace: "kube-system", name: "kube-dns" };
    const graph = await captureGraph(() => {
      const services = new ServiceRecreation("services", { kubeconfig: KUBECONFIG, moves: {} });
      const nodes = new ServiceRecreation("nodes-done", { kubeconfig: KUBECONFIG, moves: {} });
      const temporary = new DnsTemporaryService("dns-temporary", { kubeconfig: KUBECONFIG, dns, finalIP: "10.100.0.10" }, { dependsOn: [services] });
      return new DnsFinalSwap("dns-final", { kubeconfig: KUBECONFIG, dns, fromIP: "10.96.0.10", toIP: "10.100.0.10", temporary }, { dependsOn: [nodes] });
    });
    assert.ok(graph.named("dns-temporary-stand-in").dependencies.includes(graph.named("services").urn), "the stand-in is created after the Service moves");
    const swap = graph.named("dns-final-swap").dependencies;
    assert.ok(swap.includes(graph.named("nodes-done").urn), "the swap waits for the phase before it");
    assert.ok(swap.includes(graph.named("dns-temporary-stand-in").urn), "and for the stand-in");
  });

  it("the components validate their arguments with ResourceErrors that name the field", () => {
    const base = { kubeconfig: KUBECONFIG, dns: { namespace: "kube-system", name: "kube-dns" } };
    const isResourceError = (pattern: RegExp) => (e: Error) => e instanceof pulumi.ResourceError && pattern.test(e.message);
    assert.throws(() => new DnsTemporaryService("t", { ...base, finalIP: "10.100.0.300" }), isResourceError(/finalIP must be an IP address; got "10\.100\.0\.300"/));
    assert.throws(() => new DnsTemporaryService("t", { ...base, dns: { namespace: "kube-system", name: "Kube_DNS" }, finalIP: "10.100.0.10" }), isResourceError(/dns\.name must be a Service name \(cidr-migration:dns\.name\); got "Kube_DNS"/));
    assert.throws(() => new DnsTemporaryService("t", { ...base, finalIP: "10.100.0.10", standInName: "kube-dns" }), isResourceError(/standInName must differ/));
    assert.throws(() => new DnsFinalSwap("f", { ...base, fromIP: "10.96.0.10", toIP: "10.100.0.10", temporary: { namespace: "default", name: "x" } }), isResourceError(/temporary must be the DNS stand-in in namespace kube-system/));
    assert.throws(() => new DnsFinalSwap("f", { ...base, fromIP: undefined as unknown as string, toIP: "10.100.0.10", temporary: { namespace: "kube-system", name: "x" } }), isResourceError(/fromIP is missing/));
  });
});
