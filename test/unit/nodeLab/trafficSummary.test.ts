import { strict as assert } from "assert";
import { phasesAt, summarizeTraffic } from "../../testbed/nodes/trafficSummary";

describe("node lab: traffic summary", () => {
  const phases = [
    { name: "services", start: 10_000, end: 20_000 },
    { name: "nodes", start: 30_000, end: 50_000 },
    { name: "flannel", start: 40_000, end: 45_000 },
  ];

  it("places a moment in every phase running then, or before, between or after them", () => {
    assert.deepEqual(phasesAt(5_000, phases), ["before"]);
    assert.deepEqual(phasesAt(15_000, phases), ["services"]);
    assert.deepEqual(phasesAt(25_000, phases), ["between"]);
    assert.deepEqual(phasesAt(42_000, phases), ["nodes", "flannel"]);
    assert.deepEqual(phasesAt(60_000, phases), ["after"]);
  });

  it("counts each second in its phases and the longest outage per probe and target", () => {
    const records = [
      { kind: "start", t: 0 },
      { kind: "second", probe: "dns", target: "echo-a", t: 16, ok: 20, fail: 0 },
      { kind: "second", probe: "oldip", target: "10.96.0.20", t: 16, ok: 2, fail: 3 },
      { kind: "second", probe: "oldip", target: "10.96.0.20", t: 43, ok: 0, fail: 5 },
      { kind: "second", probe: "name", target: "echo-a", t: 61, ok: 5, fail: 0 },
      { kind: "failure", probe: "oldip", target: "10.96.0.20", t: 15_400, error: "dial tcp 10.96.0.20:80: i/o timeout" },
      { kind: "outage", probe: "oldip", target: "10.96.0.20", from: 15_400, to: 15_900, failures: 3 },
      { kind: "outage", probe: "oldip", target: "10.96.0.20", from: 41_000, to: 52_000, failures: 50, open: true },
    ];
    const summary = summarizeTraffic(records, phases);
    assert.deepEqual(summary.byPhase.map((r) => [r.phase, r.counts.dns, r.counts.oldip]), [
      ["services", { ok: 20, fail: 0 }, { ok: 2, fail: 3 }],
      ["nodes", { ok: 0, fail: 0 }, { ok: 0, fail: 5 }],
      ["flannel", { ok: 0, fail: 0 }, { ok: 0, fail: 5 }],
      ["after", { ok: 0, fail: 0 }, { ok: 0, fail: 0 }],
    ]);
    assert.deepEqual(summary.total.oldip, { ok: 2, fail: 8 });
    assert.equal(summary.longest.length, 1);
    assert.deepEqual(summary.longest[0], {
      probe: "oldip", target: "10.96.0.20", millis: 11_000, failures: 50, open: true, phases: ["nodes", "flannel", "after"], firstError: undefined,
    });
  });

  it("names the first error of the outage it reports", () => {
    const summary = summarizeTraffic([
      { kind: "failure", probe: "dns", target: "echo-b", t: 12_000, error: "lookup echo-b: i/o timeout" },
      { kind: "outage", probe: "dns", target: "echo-b", from: 12_000, to: 14_000, failures: 40 },
    ], phases);
    assert.equal(summary.longest[0].firstError, "lookup echo-b: i/o timeout");
    assert.deepEqual(summary.longest[0].phases, ["services"]);
  });
});
