import * as assert from "node:assert/strict";
import { validateConfig } from "../../../lib/config/config";
import { ConfigError } from "../../../lib/config/errors";
import { planNodeAddresses } from "../../../lib/plan/nodeAddressPlan";
import { openShiftRunbook } from "../../../lib/plan/openShiftRunbook";
import { renderOpenShiftRunbook } from "../../../lib/plan/openShiftRunbookReport";
import { baseValues } from "../../support/stackValues";

/** platform: openshift (issue 16): planned and printed as oc steps, never run. */

function openShiftValues(nodeAddresses: unknown, edit: (v: Record<string, unknown>) => void = () => {}): Record<string, unknown> {
  const values = { ...baseValues(), platform: "openshift", cni: "ovn-kubernetes", nodeAddresses };
  edit(values);
  return values;
}

function problemsOf(values: Record<string, unknown>, planOnly: boolean): Array<{ key: string; message: string }> {
  try {
    validateConfig({ values }, { planOnly });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    return err.problems;
  }
  return [];
}

const CHANGES = [
  { name: "worker-1", from: "10.0.0.21", to: "10.1.0.21", prefix: 24 },
  { name: "cp-2", from: "10.0.0.12", to: "10.1.0.12" },
];

describe("OpenShift node address runbook (planned only)", () => {
  it("is accepted by a plan and refused before any change by every run, naming the key", () => {
    assert.deepEqual(problemsOf(openShiftValues(CHANGES), true), []);
    const run = problemsOf(openShiftValues(CHANGES), false);
    // every problem is named (hostAddress too, which a run would need), the platform first
    assert.deepEqual(run.map((p) => p.key), ["cidr-migration:platform", "cidr-migration:hostAddress"]);
    assert.match(run[0].message, /"openshift" is planned only: cidr-migration does not run on OpenShift/);
    assert.match(run[0].message, /run `cidr-migration plan` for the oc runbook/);
    // the platform is read and kept; kubeadm is the default
    assert.equal(validateConfig({ values: openShiftValues(CHANGES) }, { planOnly: true }).platform, "openshift");
    assert.equal(validateConfig({ values: baseValues() }).platform, "kubeadm");
  });

  it("refuses a CNI that does not go with the platform, and an unknown platform", () => {
    const flannelOnOpenShift = problemsOf(openShiftValues(CHANGES, (v) => { v.cni = "flannel"; }), true);
    assert.deepEqual(flannelOnOpenShift.map((p) => p.key), ["cidr-migration:cni"]);
    assert.match(flannelOnOpenShift[0].message, /is "flannel" but platform is "openshift".*set cni to "ovn-kubernetes" or "auto"/);
    const ovnOnKubeadm = problemsOf({ ...baseValues(), cni: "ovn-kubernetes" }, true);
    assert.deepEqual(ovnOnKubeadm.map((p) => p.key), ["cidr-migration:cni"]);
    assert.match(ovnOnKubeadm[0].message, /planned only on OpenShift; set platform to "openshift"/);
    const unknown = problemsOf({ ...baseValues(), platform: "okd" }, true);
    assert.deepEqual(unknown.map((p) => p.key), ["cidr-migration:platform"]);
    assert.match(unknown[0].message, /okd/);
  });

  it("orders the oc steps as the planner does: Machine API paused first, workers, each control-plane node alone between quorum checks", () => {
    const config = validateConfig({ values: openShiftValues(CHANGES) }, { planOnly: true });
    const plan = planNodeAddresses(config);
    const runbook = openShiftRunbook(plan, config, "20261205");
    assert.deepEqual(runbook.sections.map((s) => s.title.split(" (")[0].split(",")[0]), ["Before the first node", "batch 0: worker-1", "batch 1: cp-2", "After the last node"]);
    assert.match(runbook.warnings[0], /Planned only: cidr-migration does not run these steps on OpenShift/);
    assert.match(runbook.warnings[1], /MachineSet then creates a new machine.*never scale a MachineSet down.*pause every MachineHealthCheck/);

    const [before, worker, cp, after] = runbook.sections.map((s) => s.commands);
    assert.ok(before.includes('oc annotate machinehealthcheck -n openshift-machine-api --all cluster.x-k8s.io/paused=""'));
    // the backup runs on a control-plane node whose address stays
    assert.ok(before.includes("oc debug node/cp-1 -- chroot /host /usr/local/bin/cluster-backup.sh /home/core/assets/backup"));
    assert.ok(after.includes("oc annotate machinehealthcheck -n openshift-machine-api --all cluster.x-k8s.io/paused-"));
    assert.match(after.join("\n"), /name 10\.0\.0\.21, 10\.0\.0\.12/);

    // a worker: drained, its address changed over SSH to its old one, its CSRs approved, Ready at the new address
    const w = worker.join("\n");
    const at = (text: string) => worker.findIndex((c) => c.includes(text));
    assert.ok(at("oc adm drain worker-1") < at("ssh core@10.0.0.21") && at("ssh core@10.0.0.21") < at("system:node:worker-1") && at("system:node:worker-1") < at("oc adm uncordon worker-1"));
    assert.match(w, /ipv4\.addresses 10\.1\.0\.21\/24/);
    assert.match(w, /--timeout=300s/);
    assert.doesNotMatch(w, /etcd/, "a worker has no etcd step");

    // a control-plane node: quorum checked first and last; peer URL before the reboot; certificates after it
    const c = (text: string) => cp.findIndex((l) => l.includes(text));
    assert.ok(cp[0].includes("EtcdMembersAvailable") && cp[cp.length - 3].includes("EtcdMembersAvailable"));
    assert.ok(c("member update") < c("ssh core@10.0.0.12") && c("ssh core@10.0.0.12") < c("oc delete secret -n openshift-etcd etcd-peer-cp-2 etcd-serving-cp-2 etcd-serving-metrics-cp-2"));
    assert.ok(cp.some((l) => l.includes("--peer-urls=https://10.1.0.12:2380")));
    assert.ok(cp.some((l) => l.includes('"forceRedeploymentReason":"node-address-cp-2-20261205"') && l.startsWith("oc patch etcd cluster")));
    assert.ok(cp.some((l) => l.startsWith("oc patch kubeapiserver cluster")));
    assert.match(cp.join("\n"), /10\.1\.0\.12\/<prefix>/, "an unknown prefix is left for the operator, not guessed");
  });

  it("brackets an IPv6 peer URL and edits the IPv6 addresses of the connection", () => {
    const values = openShiftValues([{ name: "cp-3", from: "fd00::13", to: "fd01::13", prefix: 64 }], (v) => {
      v.nodes = [
        { name: "cp-1", host: "fd00::11", role: "control-plane" },
        { name: "cp-2", host: "fd00::12", role: "control-plane" },
        { name: "cp-3", host: "fd00::13", role: "control-plane" },
      ];
      v.etcd = { ...(v.etcd as object), endpoints: ["https://[fd00::11]:2379"] };
    });
    const config = validateConfig({ values }, { planOnly: true });
    const text = openShiftRunbook(planNodeAddresses(config), config, "20261205").sections.flatMap((s) => s.commands).join("\n");
    assert.match(text, /--peer-urls=https:\/\/\[fd01::13\]:2380/);
    assert.match(text, /ipv6\.addresses fd01::13\/64/);
  });

  it("reaches a node over its SSH host, a management address the change leaves alone", () => {
    const values = openShiftValues([CHANGES[0]], (v) => {
      v.nodes = (v.nodes as Array<{ name: string }>).map((n) => (n.name === "worker-1" ? { ...n, host: "worker-1.mgmt.example" } : n));
    });
    const config = validateConfig({ values }, { planOnly: true });
    const worker = openShiftRunbook(planNodeAddresses(config), config, "20261205").sections[1].commands.join("\n");
    assert.match(worker, /ssh core@worker-1\.mgmt\.example 'CON=/);
    assert.doesNotMatch(worker, /ssh core@10\.0\.0\.21/);
  });

  it("prints it under a heading that says it is not executed", () => {
    const config = validateConfig({ values: openShiftValues(CHANGES) }, { planOnly: true });
    const plan = planNodeAddresses(config);
    const text = renderOpenShiftRunbook(plan, openShiftRunbook(plan, config, "20261205"));
    assert.match(text.split("\n")[0], /PLANNED ONLY: cidr-migration does not execute it/);
    assert.match(text, /Estimate: the published manual runbook's 2h 0m to 6h 0m; cidr-migration runs none of it on OpenShift/);
    const none = validateConfig({ values: openShiftValues(undefined) }, { planOnly: true });
    assert.match(renderOpenShiftRunbook(planNodeAddresses(none), openShiftRunbook(planNodeAddresses(none), none, "x")), /nodeAddresses lists no node, so there is nothing to plan/);
  });
});
