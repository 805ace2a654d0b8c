import * as assert from "node:assert/strict";
import { inspect } from "node:util";
import { validateConfig } from "../../../lib/config/config";
import { ConfigSource } from "../../../lib/config/configReader";
import { ConfigError } from "../../../lib/config/errors";
import { Inventory } from "../../../lib/plan/inventory";
import { baseValues } from "../../support/stackValues";


function problemsOf(values: Record<string, unknown>, inventory?: Inventory, secretKeys?: Set<string>): Array<{ key: string; message: string }> {
  try {
    validateConfig({ values, secretKeys } as ConfigSource, { inventory });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.problems;
  }
  return [];
}

/** Asserts exactly one problem, on `key`, whose message matches every pattern. */
function rejects(values: Record<string, unknown>, key: string, patterns: RegExp[], inventory?: Inventory): void {
  const problems = problemsOf(values, inventory);
  assert.equal(problems.length, 1, `expected one problem, got ${JSON.stringify(problems)}`);
  assert.equal(problems[0].key, `cidr-migration:${key}`);
  for (const p of patterns) assert.match(problems[0].message, p);
}

function withValue(path: string, value: unknown): Record<string, unknown> {
  const values = baseValues();
  const parts = path.split(".");
  let obj = values as Record<string, unknown>;
  for (const p of parts.slice(0, -1)) obj = obj[p] as Record<string, unknown>;
  if (value === undefined) delete obj[parts[parts.length - 1]];
  else obj[parts[parts.length - 1]] = value;
  return values;
}

function inventoryWith(services: number, nodes: number): Inventory {
  return {
    serverVersion: { major: "1", minor: "20", gitVersion: "v1.20.2" },
    services: Array.from({ length: services }, (_, i) => ({
      namespace: "default",
      name: `s${i}`,
      type: "ClusterIP" as const,
      clusterIP: `10.96.${Math.floor((i + 11) / 256)}.${(i + 11) % 256}`,
      hasSelector: true,
    })),
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `n${i}`,
      internalIPs: [`192.168.${Math.floor(i / 250)}.${(i % 250) + 1}`],
      controlPlane: i === 0,
      labels: {},
      unschedulable: false,
    })),
    cni: { detected: "calico", calicoPools: [] },
  };
}

describe("lib/config validateConfig", () => {
  it("accepts a complete config and fills the documented defaults", () => {
    const config = validateConfig({ values: baseValues() });
    assert.deepEqual(config.serviceCidr, { from: "10.96.0.0/12", to: "10.112.0.0/12" });
    assert.deepEqual(config.podCidr, { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 });
    assert.deepEqual(config.dns, { namespace: "kube-system", name: "kube-dns" });
    assert.equal(config.nodeRollout.strategy, "reregister");
    assert.equal(config.nodeRollout.maxUnavailable, 1);
    assert.equal(config.services.parallelism, 8);
    assert.equal(config.services.allowLoadBalancerRecreate, false);
    assert.equal(config.services.moveInPlace, true, "Services with a selector move in place unless the operator asks for re-creates: their names never stop resolving");
    assert.equal(config.nodes[0].port, 22);
    assert.equal(config.nodes[0].user, "ubuntu");
    assert.deepEqual(config.kubeconfig, { path: "/etc/kubernetes/admin.conf" });
  });

  it("normalizes IPv6 ranges", () => {
    const values = baseValues();
    values.serviceCidr = { from: "FD00:10:96::/112", to: "fd00:10:97::/112" };
    values.podCidr = { from: "fd00:244::/56", to: "fd00:48::/56", nodeMaskSize: 64 };
    values.nodes = [{ name: "cp-1", host: "fd00:1::11", role: "control-plane" }];
    const config = validateConfig({ values });
    assert.equal(config.serviceCidr?.from, "fd00:10:96::/112");
  });

  it("rejects an unparsable CIDR", () => rejects(withValue("serviceCidr.to", "10.112.0.0"), "serviceCidr.to", [/"10\.112\.0\.0"/]));
  it("rejects a prefix out of range", () => rejects(withValue("podCidr.to", "10.48.0.0/33"), "podCidr.to", [/10\.48\.0\.0\/33/]));
  it("rejects host bits set and names the network", () =>
    rejects(withValue("serviceCidr.from", "10.96.0.1/12"), "serviceCidr.from", [/10\.96\.0\.1\/12/, /10\.96\.0\.0\/12/]));
  it("rejects from equal to to", () => rejects(withValue("serviceCidr.to", "10.96.0.0/12"), "serviceCidr.to", [/equals/, /10\.96\.0\.0\/12/]));
  it("rejects a new range that partly overlaps the old one", () =>
    rejects(withValue("podCidr.to", "10.244.128.0/17"), "podCidr.to", [/10\.244\.128\.0\/17/, /disjoint/, /contain/]));
  it("accepts an expansion that contains the old range", () => {
    const config = validateConfig({ values: withValue("podCidr.to", "10.240.0.0/12") });
    assert.equal(config.podCidr?.to, "10.240.0.0/12");
  });
  it("rejects Service and Pod ranges that overlap", () =>
    rejects(withValue("serviceCidr.to", "10.48.0.0/16"), "serviceCidr.to", [/10\.48\.0\.0\/16/, /overlaps podCidr\.to/]));
  it("rejects an old Service range overlapping the old Pod range", () => {
    const problems = problemsOf(withValue("podCidr.from", "10.96.0.0/16"));
    assert.ok(problems.some((p) => p.key === "cidr-migration:serviceCidr.from" && /overlaps podCidr\.from/.test(p.message)), JSON.stringify(problems));
  });
  it("rejects a range containing a node address from config", () =>
    rejects(withValue("podCidr.to", "10.0.0.0/16"), "podCidr.to", [/10\.0\.0\.0\/16/, /cp-1/, /10\.0\.0\.11/]));
  it("rejects a range containing a node InternalIP from the inventory", () => {
    const inv = inventoryWith(1, 1);
    inv.nodes[0].internalIPs = ["10.48.3.3"];
    rejects(baseValues(), "podCidr.to", [/Node n0/, /10\.48\.3\.3/], inv);
  });
  it("rejects nodeMaskSize not longer than the pod prefix", () =>
    rejects(withValue("podCidr.nodeMaskSize", 16), "podCidr.nodeMaskSize", [/16/, /longer than the pod prefix \/16/]));
  it("rejects nodeMaskSize more than 16 bits longer", () =>
    rejects(withValue("podCidr.nodeMaskSize", 33), "podCidr.nodeMaskSize", [/33/, /more than 16 bits/]));
  it("rejects a Service range larger than Kubernetes accepts", () =>
    rejects(withValue("serviceCidr.to", "10.128.0.0/11"), "serviceCidr.to", [/10\.128\.0\.0\/11/, /at most \/12/]));
  it("rejects an IPv6 Service range larger than /108", () => {
    const values = baseValues();
    values.serviceCidr = { from: "fd00:10:96::/112", to: "fd00:20::/100" };
    values.podCidr = { from: "fd00:244::/56", to: "fd00:48::/56", nodeMaskSize: 64 };
    values.nodes = [{ name: "cp-1", host: "fd00:1::11", role: "control-plane" }];
    rejects(values, "serviceCidr.to", [/fd00:20::\/100/, /at most \/108/]);
  });
  it("rejects a new pod range too small for the node count", () =>
    rejects(withValue("podCidr.to", "10.48.0.0/22"), "podCidr.to", [/holds 4 node subnets/, /5 nodes/], inventoryWith(0, 5)));
  it("rejects a new Service range too small for the Services that move", () =>
    rejects(withValue("serviceCidr.to", "10.112.0.0/28"), "serviceCidr.to", [/room for 13/, /14 must move/], inventoryWith(14, 1)));
  it("accepts a Service range exactly large enough", () => {
    const config = validateConfig({ values: withValue("serviceCidr.to", "10.112.0.0/28") }, { inventory: inventoryWith(13, 1) });
    assert.equal(config.serviceCidr?.to, "10.112.0.0/28");
  });
  it("rejects a new range of another family: the primary family cannot change in place", () =>
    rejects(withValue("serviceCidr.to", "fd00:10:97::/112"), "serviceCidr.to", [/lists IPv6 first but serviceCidr.from lists IPv4 first/, /primary family/]));
  it("rejects Service and Pod ranges of different families", () =>
    rejects(withValue("podCidr", { from: "fd00:10:244::/56", to: "fd00:10:48::/56", nodeMaskSize: 64 }), "podCidr.to", [/IPv6 only but serviceCidr.to is IPv4 only/]));
  it("rejects an unknown top-level key and suggests the nearest", () => {
    const values = baseValues();
    values.serviceCIDR = values.serviceCidr;
    rejects(values, "serviceCIDR", [/unknown key/, /did you mean "serviceCidr"/]);
  });
  it("rejects an unknown nested key and suggests the nearest", () =>
    rejects(withValue("podCidr.nodeMask", 24), "podCidr.nodeMask", [/unknown key/, /"nodeMaskSize"/]));
  it("rejects an unknown key in a node entry", () => {
    const values = baseValues();
    (values.nodes as Array<Record<string, unknown>>)[3].rol = "worker";
    const problems = problemsOf(values);
    assert.ok(problems.some((p) => p.key === "cidr-migration:nodes[3].rol" && /did you mean "role"/.test(p.message)), JSON.stringify(problems));
  });
  it("rejects a bad cni with a suggestion", () => rejects(withValue("cni", "calco"), "cni", [/"calco"/, /did you mean "calico"/]));
  it("accepts kubeadm-rejoin with one or two control-plane nodes: it resets workers only, control-plane nodes re-register", () => {
    const one = baseValues();
    one.nodes = [{ name: "cp-1", host: "10.0.0.11", role: "control-plane" }, { name: "w", host: "10.0.0.21", role: "worker" }];
    one.nodeRollout = { strategy: "kubeadm-rejoin" };
    assert.equal(validateConfig({ values: one }).nodeRollout.strategy, "kubeadm-rejoin");
    const two = baseValues();
    two.nodes = (two.nodes as unknown[]).filter((_, i) => i !== 2);
    two.nodeRollout = { strategy: "kubeadm-rejoin" };
    assert.equal(validateConfig({ values: two }).nodeRollout.strategy, "kubeadm-rejoin");
  });
  it("nodeRollout.ignorePreflightErrors: a list of kubeadm check names; anything else refused by its index", () => {
    const values = baseValues();
    values.nodeRollout = { strategy: "kubeadm-rejoin", ignorePreflightErrors: ["SystemVerification"] };
    assert.deepEqual(validateConfig({ values }).nodeRollout.ignorePreflightErrors, ["SystemVerification"]);
    values.nodeRollout = { ignorePreflightErrors: "SystemVerification" };
    rejects(values, "nodeRollout.ignorePreflightErrors", [/expected a list/]);
    values.nodeRollout = { ignorePreflightErrors: ["Swap", "$(id)"] };
    rejects(values, "nodeRollout.ignorePreflightErrors[1]", [/"\$\(id\)" is not a kubeadm preflight check name/]);
  });
  it("nodeRollout.dnsDisruptionBudget: on unless set to false; anything but a boolean refused by name", () => {
    const values = baseValues();
    assert.equal(validateConfig({ values }).nodeRollout.dnsDisruptionBudget, true);
    values.nodeRollout = { dnsDisruptionBudget: false };
    assert.equal(validateConfig({ values }).nodeRollout.dnsDisruptionBudget, false);
    values.nodeRollout = { dnsDisruptionBudget: "no" };
    rejects(values, "nodeRollout.dnsDisruptionBudget", [/"no"/]);
  });
  it("accepts kubeadm-rejoin with three control-plane nodes", () => {
    const values = baseValues();
    values.nodeRollout = { strategy: "kubeadm-rejoin" };
    assert.equal(validateConfig({ values }).nodeRollout.strategy, "kubeadm-rejoin");
  });
  it("accepts a single control-plane cluster with reregister", () => {
    const values = baseValues();
    values.nodes = [{ name: "cp-1", host: "10.0.0.11", role: "control-plane" }];
    assert.equal(validateConfig({ values }).nodes.length, 1);
  });
  it("rejects a canary that is not a node", () => rejects(withValue("nodeRollout", { canary: "worker-9" }), "nodeRollout.canary", [/"worker-9"/, /"worker-1"/]));
  it("rejects a plaintext secret in a stack file and shows the --secret command", () => {
    const problems = problemsOf(withValue("ssh.privateKey", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc"));
    assert.equal(problems.length, 1);
    assert.equal(problems[0].key, "cidr-migration:ssh.privateKey");
    assert.match(problems[0].message, /pulumi config set --secret/);
    assert.doesNotMatch(problems[0].message, /BEGIN|abc/);
  });
  it("takes secrets Pulumi decrypted and never prints them", () => {
    const values = withValue("ssh.privateKey", "PRIVATE-KEY-TEXT");
    const config = validateConfig({ values, secretKeys: new Set(["ssh"]) });
    assert.equal(config.ssh.privateKey?.reveal("test"), "PRIVATE-KEY-TEXT");
    assert.doesNotMatch(JSON.stringify(config), /PRIVATE-KEY-TEXT/);
    assert.doesNotMatch(inspect(config, { depth: 10 }), /PRIVATE-KEY-TEXT/);
    assert.doesNotMatch(String(config.ssh.privateKey), /PRIVATE-KEY-TEXT/);
  });
  it("requires etcd.cert and etcd.key together", () => {
    const values = baseValues();
    delete (values.etcd as Record<string, unknown>).key;
    rejects(values, "etcd.key", [/go together/]);
  });
  it("requires the etcd CA for https endpoints", () => {
    const values = baseValues();
    delete (values.etcd as Record<string, unknown>).caCert;
    rejects(values, "etcd.caCert", [/https/, /--secret/]);
  });
  it("rejects an etcd endpoint that is not a URL", () => rejects(withValue("etcd.endpoints", ["10.0.0.11:2379"]), "etcd.endpoints[0]", [/"10\.0\.0\.11:2379"/]));
  it("rejects kubeconfig content given in plaintext", () =>
    rejects(withValue("kubeconfig", "apiVersion: v1\nkind: Config\n"), "kubeconfig", [/plaintext/, /--secret/]));
  it("rejects a missing required key with the command that sets it", () =>
    rejects(withValue("podCidr.nodeMaskSize", undefined), "podCidr.nodeMaskSize", [/required/, /pulumi config set --path 'podCidr\.nodeMaskSize' 24/]));
  // an example in an error, never a value: a run must not move the cluster to a range nobody chose
  for (const key of ["serviceCidr.from", "serviceCidr.to", "podCidr.from", "podCidr.to"]) {
    it(`rejects a missing ${key} instead of taking the example range`, () =>
      rejects(withValue(key, undefined), key, [/is required/, new RegExp(`pulumi config set --path '${key.replace(".", "\\.")}'`)]));
  }
  it("rejects a node without a control-plane role in the list", () => {
    const values = baseValues();
    values.nodes = [{ name: "w", host: "10.0.0.21", role: "worker" }];
    rejects(values, "nodes", [/control-plane/]);
  });
  it("rejects a duplicate node name", () => {
    const values = baseValues();
    (values.nodes as Array<Record<string, unknown>>)[3].name = "cp-1";
    rejects(values, "nodes[3].name", [/"cp-1" appears twice/]);
  });
  it("rejects a malformed dns.service", () => rejects(withValue("dns", { service: "kube-dns" }), "dns.service", [/NAMESPACE\/NAME/]));
  it("reports every problem at once", () => {
    const values = withValue("serviceCidr.to", "nope");
    (values.podCidr as Record<string, unknown>).nodeMaskSize = 8;
    values.cni = "weave";
    const keys = problemsOf(values).map((p) => p.key).sort();
    assert.deepEqual(keys, ["cidr-migration:cni", "cidr-migration:podCidr.nodeMaskSize", "cidr-migration:serviceCidr.to"]);
  });
});

describe("lib/config validateConfig: dual-stack pairs (issue 17)", () => {
  const V6 = { serviceFrom: "fd00:10:96::/112", serviceTo: "fd00:10:112::/112", podFrom: "fd00:10:244::/56", podTo: "fd00:10:48::/56" };
  /** A valid dual-stack config: IPv4 primary, both families moving. */
  function dual(): Record<string, unknown> {
    const values = baseValues();
    values.serviceCidr = { from: ["10.96.0.0/12", V6.serviceFrom], to: ["10.112.0.0/12", V6.serviceTo] };
    values.podCidr = { from: ["10.244.0.0/16", V6.podFrom], to: ["10.48.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } };
    return values;
  }
  const set = (values: Record<string, unknown>, key: "serviceCidr" | "podCidr", field: string, value: unknown) => {
    (values[key] as Record<string, unknown>)[field] = value;
    return values;
  };

  it("a valid pair is accepted: each family's ranges and mask, primary first", () => {
    const config = validateConfig({ values: dual() } as ConfigSource);
    assert.deepEqual([config.serviceCidr, config.podCidr], [{ from: "10.96.0.0/12", to: "10.112.0.0/12" }, { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 }]);
    assert.deepEqual(config.secondFamily, {
      family: "IPv6", role: "move",
      serviceCidr: { from: V6.serviceFrom, to: V6.serviceTo }, podCidr: { from: V6.podFrom, to: V6.podTo, nodeMaskSize: 64 },
    });
  });
  it("rejects two ranges of one family, naming the family", () =>
    rejects(set(dual(), "serviceCidr", "to", ["10.112.0.0/12", "10.128.0.0/12"]), "serviceCidr.to", [/two IPv4 ranges/, /one IPv4 and one IPv6/]));
  it("rejects pairs whose families do not line up", () =>
    rejects(set(dual(), "podCidr", "to", [V6.podTo, "10.48.0.0/16"]), "podCidr.to", [/lists IPv6 first but podCidr.from lists IPv4 first/]));
  it("rejects dual-stack → single-stack with the reason", () =>
    rejects(set(dual(), "serviceCidr", "to", "10.112.0.0/12"), "serviceCidr.to", [/IPv4 only but serviceCidr.from is dual-stack \(IPv4, IPv6\)/, /cannot drop a family in place/]));
  it("rejects a mask too long for one family only, naming that family's key", () =>
    rejects(set(dual(), "podCidr", "nodeMaskSize", { ipv4: 24, ipv6: 120 }), "podCidr.nodeMaskSize.ipv6", [/^\(IPv6\) 120 is more than 16 bits longer than \/56/]));
  it("rejects one mask for two families", () =>
    rejects(set(dual(), "podCidr", "nodeMaskSize", 24), "podCidr.nodeMaskSize", [/one mask for two families/, /ipv6: 64/]));
  it("rejects a missing family mask", () =>
    rejects(set(dual(), "podCidr", "nodeMaskSize", { ipv4: 24 }), "podCidr.nodeMaskSize.ipv6", [/required for the IPv6 pod range/]));
  it("checks each family's ranges, naming the family and its key", () => {
    rejects(set(dual(), "serviceCidr", "to", ["10.112.0.0/12", "fd00:10:112::/96"]), "serviceCidr.to[1]", [/^\(IPv6\) /, /larger than Kubernetes accepts/, /\/108/]);
    rejects(set(dual(), "serviceCidr", "to", ["10.112.0.0/12", "fd00:10:48::/112"]), "serviceCidr.to[1]", [/^\(IPv6\) /, /overlaps podCidr.to\[1\] fd00:10:48::\/56/]);
    rejects(set(dual(), "podCidr", "to", ["10.48.0.0/16", "fd00:10:244::/56"]), "podCidr.to[1]", [/^\(IPv6\) /, /equals podCidr.from; nothing to migrate/]);
  });
  it("adding a family keeps the first family's range: valid, an \"add\" of the second family", () => {
    const values = baseValues();
    values.serviceCidr = { from: "10.96.0.0/12", to: ["10.96.0.0/12", V6.serviceTo] };
    values.podCidr = { from: "10.244.0.0/16", to: ["10.244.0.0/16", V6.podTo], nodeMaskSize: { ipv4: 24, ipv6: 64 } };
    const config = validateConfig({ values: structuredClone(values) } as ConfigSource);
    assert.deepEqual(config.secondFamily, { family: "IPv6", role: "add", serviceCidr: { to: V6.serviceTo }, podCidr: { to: V6.podTo, nodeMaskSize: 64 } });
    (values.serviceCidr as Record<string, unknown>).to = ["10.112.0.0/12", V6.serviceTo];
    rejects(values, "serviceCidr.to[0]", [/adds the IPv6 family keeps the IPv4 range as it is/, /set serviceCidr.to\[0\] to 10.96.0.0\/12/]);
  });
  it("a single range may still be written as a list of one", () => {
    const config = validateConfig({ values: withValue("serviceCidr.to", ["10.112.0.0/12"]) } as ConfigSource);
    assert.equal(config.serviceCidr?.to, "10.112.0.0/12");
  });
});
