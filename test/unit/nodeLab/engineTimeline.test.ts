import { strict as assert } from "assert";
import { phaseWindows, TimedEvent } from "../../testbed/nodes/engineTimeline";

const STACK = "urn:pulumi:nodes::cidr-migration::pulumi:pulumi:Stack::cidr-migration-nodes";
const provider = "urn:pulumi:nodes::cidr-migration::pulumi:providers:command::default::id";
const urn = (chain: string, name: string) => `urn:pulumi:nodes::cidr-migration::${chain}::${name}`;
const pre = (at: number, u: string, withProvider = true): TimedEvent => ({ at, event: { resourcePreEvent: { metadata: { urn: u, provider: withProvider ? provider : "" } } } });
const out = (at: number, u: string, withProvider = true): TimedEvent => ({ at, event: { resOutputsEvent: { metadata: { urn: u, provider: withProvider ? provider : "" } } } });

describe("node lab: engine timeline", () => {
  const controlPlane = urn("cidr-migration:controlPlane:ControlPlane", "control-plane");
  const nodes = urn("cidr-migration:nodeRollout:NodeRollout", "nodes");
  const cpEdit = urn("cidr-migration:controlPlane:ControlPlane$command:remote:Command", "control-plane-cp-1-apiserver");
  const drain1 = urn("cidr-migration:nodeRollout:NodeRollout$pulumi-nodejs:dynamic:Resource", "nodes-worker-1-drain");
  const rejoin1 = urn("cidr-migration:nodeRollout:NodeRollout$command:remote:Command", "nodes-worker-1-rejoin");
  const drain10 = urn("cidr-migration:nodeRollout:NodeRollout$pulumi-nodejs:dynamic:Resource", "nodes-worker-10-drain");
  const snapshot = urn("pulumi-nodejs:dynamic:Resource", "etcd-snapshot");

  it("times each top-level part from its real resources, not from its component's registration", () => {
    const events: TimedEvent[] = [
      pre(0, STACK, false), pre(0, provider), out(1, provider),
      pre(1, controlPlane, false), out(1, controlPlane, false), pre(2, nodes, false), out(2, nodes, false),
      pre(10, snapshot), out(15, snapshot),
      pre(20, cpEdit), out(60, cpEdit),
      pre(100, drain1), out(110, drain1), pre(111, rejoin1), out(130, rejoin1),
      pre(140, drain10), out(150, drain10),
    ];
    const { phases, nodes: perNode } = phaseWindows(events, ["worker-1", "worker-10"]);
    assert.deepEqual(phases, [
      { name: "etcd-snapshot", start: 10, end: 15 },
      { name: "control-plane", start: 20, end: 60 },
      { name: "nodes", start: 100, end: 150 },
    ]);
    // worker-1's steps do not swallow worker-10's (the longest node name that prefixes the step wins)
    assert.deepEqual(perNode, [{ name: "worker-1", start: 100, end: 130 }, { name: "worker-10", start: 140, end: 150 }]);
  });

  it("leaves out a resource that never finished", () => {
    const { phases } = phaseWindows([pre(1, controlPlane, false), pre(5, cpEdit)], []);
    assert.deepEqual(phases, []);
  });
});
