import * as assert from "node:assert/strict";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError } from "../../../lib/config/errors";
import { movesRanges } from "../../../lib/config/migrationConfig";
import { Inventory } from "../../../lib/plan/inventory";
import { baseValues } from "../../support/stackValues";

/** nodeAddresses (issue 16): validated like every key; a control-plane node's change is refused before any change unless the caller only plans. */

function withAddresses(entries: unknown, edit: (values: Record<string, unknown>) => void = () => {}): Record<string, unknown> {
  const values = baseValues();
  values.nodeAddresses = entries;
  edit(values);
  return values;
}

function problemsOf(values: Record<string, unknown>, opts: { inventory?: Inventory; planOnly?: boolean } = {}): Array<{ key: string; message: string }> {
  try {
    validateConfig({ values }, opts);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.problems;
  }
  return [];
}

/** Exactly one problem, on `key`, matching every pattern; with planOnly so hostAddress may be left out. */
function rejects(values: Record<string, unknown>, key: string, patterns: RegExp[], inventory?: Inventory): void {
  const problems = problemsOf(values, { inventory, planOnly: true });
  assert.equal(problems.length, 1, `expected one problem, got ${JSON.stringify(problems)}`);
  assert.equal(problems[0].key, `cidr-migration:${key}`);
  for (const p of patterns) assert.match(problems[0].message, p);
}

function inventory(nodes: Array<{ name: string; ips: string[]; controlPlane?: boolean }>): Inventory {
  return {
    serverVersion: { major: "1", minor: "33", gitVersion: "v1.33.1" },
    services: [],
    nodes: nodes.map((n) => ({ name: n.name, internalIPs: n.ips, controlPlane: n.controlPlane ?? false, labels: {}, unschedulable: false })),
    cni: { detected: "calico", calicoPools: [] },
  };
}

const IPV6_VALUES = (values: Record<string, unknown>) => {
  values.serviceCidr = { from: "fd00:10:96::/112", to: "fd00:10:97::/112" };
  values.podCidr = { from: "fd00:244::/56", to: "fd00:48::/56", nodeMaskSize: 64 };
  values.etcd = { endpoints: ["https://[fd00:1::11]:2379"], caCert: { secure: "v1:ca" }, cert: { secure: "v1:c" }, key: { secure: "v1:k" } };
  values.nodes = [
    { name: "cp-1", host: "fd00:1::11", role: "control-plane" },
    { name: "cp-2", host: "fd00:1::12", role: "control-plane" },
    { name: "cp-3", host: "fd00:1::13", role: "control-plane" },
    { name: "worker-1", host: "fd00:1::21", role: "worker" },
    { name: "worker-2", host: "fd00:1::22", role: "worker" },
  ];
};

describe("lib/config nodeAddresses", () => {
  it("is optional: absent means no node address change", () => {
    assert.deepEqual(validateConfig({ values: baseValues() }).nodeAddresses, []);
  });

  it("a run: a worker's and a control-plane node's change are accepted with hostAddress; with the etcd-rewrite rollout refused", () => {
    const host = (v: Record<string, unknown>) => (v.hostAddress = { persistence: "netplan", prefix: 24 });
    const worker = validateConfig({ values: withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }], host) });
    assert.deepEqual(worker.nodeAddresses, [{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21", role: "worker", prefix: 24 }]);
    assert.deepEqual(worker.hostAddress, { persistence: "netplan" });
    const both = validateConfig({ values: withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }, { name: "cp-1", from: "10.0.0.11", to: "10.1.0.11" }], host) });
    assert.deepEqual(both.nodeAddresses.map((c) => `${c.name} ${c.role} ${c.from}>${c.to}/${c.prefix}`), ["worker-1 worker 10.0.0.21>10.1.0.21/24", "cp-1 control-plane 10.0.0.11>10.1.0.11/24"]);
    const rewrite = problemsOf(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }], (v) => { host(v); v.nodeRollout = { strategy: "etcd-rewrite" }; v.services = { strategy: "etcd-rewrite" }; }));
    assert.deepEqual(rewrite.map((p) => p.key), ["cidr-migration:nodeRollout.strategy"]);
    assert.match(rewrite[0].message, /keeps every Node registered, but a worker's address changes while the rollout re-registers it/);
  });

  it("stands alone: without serviceCidr and podCidr the run changes node addresses only; the Service move's settings are then refused", () => {
    const addressesOnly = (edit: (v: Record<string, unknown>) => void = () => {}) => withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }], (v) => {
      delete v.serviceCidr;
      delete v.podCidr;
      v.hostAddress = { persistence: "netplan", prefix: 24 };
      edit(v);
    });
    const config = validateConfig({ values: addressesOnly() });
    assert.equal(movesRanges(config), false);
    assert.equal(config.serviceCidr, undefined);
    assert.equal(config.podCidr, undefined);
    assert.deepEqual(config.nodeAddresses.map((c) => `${c.name} ${c.from}>${c.to}`), ["worker-1 10.0.0.21>10.1.0.21"]);
    const parallelism = problemsOf(addressesOnly((v) => (v.services = { parallelism: 4 })));
    assert.deepEqual(parallelism.map((p) => p.key), ["cidr-migration:services.parallelism"]);
    assert.match(parallelism[0].message, /this run moves no Service \(nodeAddresses without serviceCidr and podCidr: node addresses only\); remove services\.parallelism/);
    // one range key without the other is a range move missing a key, not an address-only run
    const halfway = problemsOf(addressesOnly((v) => (v.podCidr = { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 })));
    assert.deepEqual(halfway.map((p) => p.key), ["cidr-migration:serviceCidr.from", "cidr-migration:serviceCidr.to"]);
    // no nodeAddresses either: nothing to do, and the ranges are required as ever
    const nothing = baseValues();
    delete nothing.serviceCidr;
    delete nothing.podCidr;
    assert.ok(problemsOf(nothing).some((p) => p.key === "cidr-migration:serviceCidr.to" && /is required/.test(p.message)));
  });

  it("does not add the etcd-rewrite refusal when another problem is reported", () => {
    const problems = problemsOf(withAddresses([{ name: "cp-1", from: "10.0.0.11", to: "10.1.0.11" }], (v) => { v.cni = "weave"; v.hostAddress = { persistence: "none", prefix: 24 }; v.nodeRollout = { strategy: "etcd-rewrite" }; v.services = { strategy: "etcd-rewrite" }; }));
    assert.deepEqual(problems.map((p) => p.key), ["cidr-migration:cni"]);
  });

  it("hostAddress: required by a run (not by a plan), each setting checked by its key; an entry's own prefix wins", () => {
    const entries = [{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }, { name: "cp-1", from: "10.0.0.11", to: "10.1.0.11", prefix: 16 }];
    const keys = (host: unknown, planOnly = false) => problemsOf(withAddresses(entries, (v) => (v.hostAddress = host)), { planOnly }).map((p) => `${p.key} ${p.message}`);
    assert.match(keys(undefined).join("\n"), /^cidr-migration:hostAddress is required with nodeAddresses/);
    assert.deepEqual(keys(undefined, true), [], "a plan alone may leave it out");
    assert.match(keys({ persistence: "ifupdown", prefix: 24 }).join(), /hostAddress\.persistence "ifupdown" is not one of netplan, nmcli, hook, none/);
    assert.match(keys({ persistence: "hook", prefix: 24 }).join(), /hostAddress\.hookPath/);
    assert.match(keys({ persistence: "hook", prefix: 24, hookPath: "change.sh" }).join(), /hostAddress\.hookPath "change\.sh" is not an absolute path/);
    assert.match(keys({ persistence: "none" }).join(), /nodeAddresses\[0\]\.prefix worker-1's interface prefix length is not known/);
    assert.match(keys({ persistence: "none", prefix: 24, gateway: "10.0.0.1" }).join(), /hostAddress.*gateway/);
    const config = validateConfig({ values: withAddresses(entries, (v) => (v.hostAddress = { persistence: "hook", prefix: 24, hookPath: "/usr/local/sbin/change-address", interface: "eth1" })) }, { planOnly: true });
    assert.deepEqual(config.nodeAddresses.map((c) => c.prefix), [24, 16]);
    assert.deepEqual(config.hostAddress, { persistence: "hook", hookPath: "/usr/local/sbin/change-address", interface: "eth1" });
    assert.match(problemsOf(withAddresses([], (v) => (v.hostAddress = { persistence: "none" }))).map((p) => p.message).join(), /nodeAddresses lists no node/);
  });

  it("accepts a valid IPv4 multi-node list when only planning, normalized, with each node's role", () => {
    const config = validateConfig(
      {
        values: withAddresses([
          { name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" },
          { name: "cp-1", from: "10.0.0.11", to: "10.1.0.11" },
          { name: "cp-2", from: "10.0.0.12", to: "10.1.0.12" },
        ]),
      },
      { planOnly: true },
    );
    assert.deepEqual(config.nodeAddresses, [
      { name: "worker-1", from: "10.0.0.21", to: "10.1.0.21", role: "worker" },
      { name: "cp-1", from: "10.0.0.11", to: "10.1.0.11", role: "control-plane" },
      { name: "cp-2", from: "10.0.0.12", to: "10.1.0.12", role: "control-plane" },
    ]);
  });

  it("accepts a valid IPv6 multi-node list, normalized, checked against the inventory's InternalIPs", () => {
    const values = withAddresses(
      [
        { name: "worker-1", from: "FD00:1:0::21", to: "fd00:2::21" },
        { name: "worker-2", from: "fd00:1::22", to: "FD00:2:0:0::22" },
        { name: "cp-3", from: "fd00:1::13", to: "fd00:2::13" },
      ],
      IPV6_VALUES,
    );
    const inv = inventory([
      { name: "cp-3", ips: ["fd00:1::13"], controlPlane: true },
      { name: "worker-1", ips: ["fd00:1::21"] },
      { name: "worker-2", ips: ["fd00:1::22"] },
    ]);
    const config = validateConfig({ values }, { inventory: inv, planOnly: true });
    assert.deepEqual(config.nodeAddresses, [
      { name: "worker-1", from: "fd00:1::21", to: "fd00:2::21", role: "worker" },
      { name: "worker-2", from: "fd00:1::22", to: "fd00:2::22", role: "worker" },
      { name: "cp-3", from: "fd00:1::13", to: "fd00:2::13", role: "control-plane" },
    ]);
  });

  it("refuses a list that is not a list", () => rejects(withAddresses({ name: "worker-1" }), "nodeAddresses", [/expected a list of \{name, from, to\}/]));
  it("refuses an entry that is not an object", () => rejects(withAddresses(["worker-1"]), "nodeAddresses[0]", [/expected \{name, from, to\}/, /"worker-1"/]));
  it("refuses an unknown key in an entry and suggests the nearest", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", too: "10.1.0.21", to: "10.1.0.21" }]), "nodeAddresses[0].too", [/unknown key/, /did you mean "to"/]));
  it("refuses a missing name", () => rejects(withAddresses([{ from: "10.0.0.21", to: "10.1.0.21" }]), "nodeAddresses[0].name", [/is required/]));

  it("refuses a name not in nodes and suggests the closest", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }, { name: "wrker-1", from: "10.0.0.21", to: "10.1.0.22" }]), "nodeAddresses[1].name", [
      /"wrker-1" is not in nodes/,
      /did you mean "worker-1"/,
    ]));

  it("refuses a from that is not an IP address", () =>
    rejects(withAddresses([{ name: "worker-1", from: "worker-1.lan", to: "10.1.0.21" }]), "nodeAddresses[0].from", [/"worker-1\.lan" is not an IP address/, /IPv4 or IPv6/]));
  it("refuses a to that is not an IP address (a CIDR is not one)", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21/24" }]), "nodeAddresses[0].to", [/"10\.1\.0\.21\/24" is not an IP address/]));

  it("accepts a node reached at a management address that the change leaves alone; a wrong from is refused by the Node's InternalIP", () => {
    // worker-1 is reached at 10.0.0.21 (nodes[].host) while its Node address is 10.0.5.21 and moves to 10.1.0.21
    const values = withAddresses([{ name: "worker-1", from: "10.0.5.21", to: "10.1.0.21" }]);
    const config = validateConfig({ values }, { inventory: inventory([{ name: "worker-1", ips: ["10.0.5.21"] }]), planOnly: true });
    assert.deepEqual([config.nodeAddresses[0].from, config.nodes.find((n) => n.name === "worker-1")!.host], ["10.0.5.21", "10.0.0.21"]);
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.99", to: "10.1.0.21" }]), "nodeAddresses[0].from", [/"10\.0\.0\.99" is not worker-1's current address/, /Node worker-1 has InternalIP 10\.0\.5\.21/], inventory([{ name: "worker-1", ips: ["10.0.5.21"] }]));
  });

  it("refuses a from other than the Node's InternalIP when the inventory is known, the host being a DNS name", () => {
    const values = withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }], (v) => {
      (v.nodes as Array<Record<string, unknown>>)[3].host = "worker-1.example.internal";
    });
    rejects(values, "nodeAddresses[0].from", [/not worker-1's current address/, /Node worker-1 has InternalIP 10\.0\.0\.31/], inventory([{ name: "worker-1", ips: ["10.0.0.31"] }]));
  });

  it("accepts a from matching the InternalIP when the host is a DNS name", () => {
    const values = withAddresses([{ name: "worker-1", from: "10.0.0.31", to: "10.1.0.21" }], (v) => {
      (v.nodes as Array<Record<string, unknown>>)[3].host = "worker-1.example.internal";
    });
    const config = validateConfig({ values }, { inventory: inventory([{ name: "worker-1", ips: ["10.0.0.31"] }]), planOnly: true });
    assert.equal(config.nodeAddresses[0].from, "10.0.0.31");
  });

  it("refuses from equal to to", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.0.0.21" }]), "nodeAddresses[0].to", [/"10\.0\.0\.21" equals nodeAddresses\[0\]\.from/, /nothing to change/]));

  it("refuses from and to of different families", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "fd00:2::21" }]), "nodeAddresses[0].to", [/"fd00:2::21" is IPv6/, /10\.0\.0\.21 is IPv4/, /within its family/]));

  for (const [range, to, key] of [
    ["old Service", "10.96.0.5", "serviceCidr.from"],
    ["new Service", "10.112.3.4", "serviceCidr.to"],
    ["old Pod", "10.244.9.9", "podCidr.from"],
    ["new Pod", "10.48.1.1", "podCidr.to"],
  ] as const) {
    it(`refuses a to in the ${range} range, naming ${key}`, () =>
      rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to }]), "nodeAddresses[0].to", [new RegExp(`lies in ${key.replace(".", "\\.")}`), /outside every Service and Pod range/]));
  }

  it("refuses a to in an IPv6 pod range", () =>
    rejects(withAddresses([{ name: "worker-1", from: "fd00:1::21", to: "fd00:48::7" }], IPV6_VALUES), "nodeAddresses[0].to", [/lies in podCidr\.to fd00:48::\/56/]));

  it("refuses a to that is another node's current address (nodes[].host)", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.0.0.12" }]), "nodeAddresses[0].to", [/"10\.0\.0\.12" is already nodes\[1\]\.host \(cp-2\)'s address/]));

  it("refuses a to that is another Node's InternalIP from the inventory", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.0.0.77" }]), "nodeAddresses[0].to", [/Node worker-9 InternalIP/], inventory([{ name: "worker-1", ips: ["10.0.0.21"] }, { name: "worker-9", ips: ["10.0.0.77"] }])));

  it("refuses a swap: one node's to is the address another node leaves", () => {
    const problems = problemsOf(
      withAddresses([
        { name: "cp-1", from: "10.0.0.11", to: "10.0.0.12" },
        { name: "cp-2", from: "10.0.0.12", to: "10.0.0.11" },
      ]),
      { planOnly: true },
    );
    assert.deepEqual(problems.map((p) => p.key), ["cidr-migration:nodeAddresses[0].to", "cidr-migration:nodeAddresses[1].to"]);
    assert.match(problems[0].message, /already nodes\[1\]\.host \(cp-2\)'s address/);
  });

  it("refuses two entries planning the same to", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.5" }, { name: "cp-1", from: "10.0.0.11", to: "10.1.0.5" }]), "nodeAddresses[1].to", [
      /"10\.1\.0\.5" is also nodeAddresses\[0\]\.to/,
    ]));

  it("refuses two entries for one node", () =>
    rejects(withAddresses([{ name: "worker-1", from: "10.0.0.21", to: "10.1.0.21" }, { name: "worker-1", from: "10.0.0.21", to: "10.1.0.22" }]), "nodeAddresses[1].name", [
      /"worker-1" is already changed by nodeAddresses\[0\]/,
    ]));

  it("reports every problem at once, each on its own key", () => {
    const problems = problemsOf(
      withAddresses([
        { name: "wrker-1", from: "10.0.0.21", to: "10.1.0.21" },
        { name: "cp-1", from: "not-an-ip", to: "10.96.0.7" },
      ]),
      { planOnly: true },
    );
    assert.deepEqual(problems.map((p) => p.key).sort(), ["cidr-migration:nodeAddresses[0].name", "cidr-migration:nodeAddresses[1].from", "cidr-migration:nodeAddresses[1].to"]);
  });
});
