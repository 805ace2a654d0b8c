/**
 * The operator path's pure parts on Calico's own custom-resources.yaml (test/fixtures/calico-operator): the three
 * ipPools lists, the path the plan chooses, the refusals, and when the operator counts as done.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { UserError } from "../../../lib/config/errors";
import { installationRefusals, installationStages, newInstallationPool } from "../../../lib/podNetwork/calicoInstallation";
import { poolsPending, tigeraStatusProblems } from "../../../lib/podNetwork/tigeraStatus";
import { calicoPoolPlan, calicoPoolRefusals, cniSummary } from "../../../lib/plan/calicoPools";
import { CalicoOperatorInfo, CniInfo, InstallationPool } from "../../../lib/plan/inventory";

const FIXTURE = path.join(__dirname, "../../fixtures/calico-operator/custom-resources.yaml");
const installation = parseAllDocuments(fs.readFileSync(FIXTURE, "utf8")).map((d) => d.toJS()).find((d) => d.kind === "Installation");
const POOLS: InstallationPool[] = installation.spec.calicoNetwork.ipPools;
const OLD = "192.168.0.0/16";
const NEW = "10.48.0.0/16";
const RANGE = { from: OLD, to: NEW };
const operator = (over: Partial<CalicoOperatorInfo> = {}): CalicoOperatorInfo => ({ ipPools: POOLS, apiServerState: "Ready", v3Served: true, ...over });
const livePool = { name: "default-ipv4-ippool", cidr: OLD, blockSize: 26, vxlanMode: "CrossSubnet", ipipMode: "Never", natOutgoing: true, nodeSelector: "all()" };
const cni = (calicoOperator?: CalicoOperatorInfo): CniInfo => ({ detected: "calico", calicoPools: [livePool], ...(calicoOperator ? { calicoOperator } : {}) });

describe("Calico through the Tigera operator: Installation ipPools", () => {
  it("the fixture is Calico's own: one pool, default-ipv4-ippool 192.168.0.0/16, VXLANCrossSubnet", () => {
    assert.deepEqual(POOLS, [{ name: "default-ipv4-ippool", blockSize: 26, cidr: OLD, encapsulation: "VXLANCrossSubnet", natOutgoing: "Enabled", nodeSelector: "all()" }]);
  });

  it("add / close / remove: the new pool copies the old one's settings; the old one is closed, then unlisted", () => {
    const stages = installationStages(POOLS, [RANGE]);
    const added = { name: "cidr-migration-10-48-0-0-16", blockSize: 26, cidr: NEW, encapsulation: "VXLANCrossSubnet", natOutgoing: "Enabled", nodeSelector: "all()" };
    assert.deepEqual(stages.add, [POOLS[0], added]);
    assert.deepEqual(stages.close, [{ ...POOLS[0], nodeSelector: "!all()" }, added]);
    assert.deepEqual(stages.remove, [added]);
  });

  it("a re-run part-way keeps the listed new pool as it is and the old one closed", () => {
    const mid = installationStages(POOLS, [RANGE]).close;
    const again = installationStages(mid, [RANGE]);
    assert.deepEqual(again.add, mid);
    assert.deepEqual(again.close, mid);
    assert.deepEqual(again.remove, [mid[1]]);
  });

  it("other pools are kept in every list, and disableNewAllocations is not copied", () => {
    const other = { name: "lb", cidr: "172.30.0.0/24", allowedUses: ["LoadBalancer"], encapsulation: "None", nodeSelector: "all()" };
    const pools = [{ ...POOLS[0], disableNewAllocations: false, allowedUses: ["Workload", "Tunnel"] }, other];
    const stages = installationStages(pools, [RANGE]);
    assert.deepEqual(stages.remove.map((p) => p.name), ["lb", "cidr-migration-10-48-0-0-16"]);
    assert.equal("disableNewAllocations" in stages.add[2], false);
    assert.deepEqual(stages.add[2].allowedUses, ["Workload", "Tunnel"]);
  });

  it("dual-stack: each list carries both families, each new pool copying its own family's old one; a re-run part-way keeps both", () => {
    const v6 = { name: "default-ipv6-ippool", blockSize: 122, cidr: "fd00:10:244::/56", encapsulation: "None", natOutgoing: "Disabled", nodeSelector: "all()" };
    const V6 = { from: "fd00:10:244::/56", to: "fd00:10:48::/56" };
    const stages = installationStages([POOLS[0], v6], [RANGE, V6]);
    const added4 = { ...POOLS[0], name: "cidr-migration-10-48-0-0-16", cidr: NEW };
    const added6 = { ...v6, name: "cidr-migration-fd00-10-48-56", cidr: "fd00:10:48::/56" };
    assert.deepEqual(stages.add, [POOLS[0], v6, added4, added6]);
    assert.deepEqual(stages.close, [{ ...POOLS[0], nodeSelector: "!all()" }, { ...v6, nodeSelector: "!all()" }, added4, added6]);
    assert.deepEqual(stages.remove, [added4, added6]);
    assert.deepEqual(installationStages(stages.close, [RANGE, V6]), { add: stages.close, close: stages.close, remove: [added4, added6] });
    // moved together, the IPv6 pool is no reason to refuse; a run adding IPv6 leaves its listed pool alone
    const both = operator({ ipPools: [POOLS[0], v6] });
    const live6 = { name: "default-ipv6-ippool", cidr: "fd00:10:244::/56", blockSize: 122, natOutgoing: false, nodeSelector: "all()" };
    assert.deepEqual(installationRefusals(both, [livePool, live6], [RANGE, V6]), []);
    assert.deepEqual(calicoPoolRefusals(cni(both), RANGE, { family: "IPv6", role: "move", podCidr: { ...V6, nodeMaskSize: 64 } }), []);
    const added = operator({ ipPools: [POOLS[0], { ...v6, cidr: "fd00:10:48::/56" }] });
    assert.deepEqual(calicoPoolRefusals(cni(added), RANGE, { family: "IPv6", role: "add", podCidr: { to: "fd00:10:48::/56", nodeMaskSize: 64 } }), []);
    assert.match(calicoPoolRefusals(cni(added), RANGE).join(), /lists the IPv6 pool default-ipv6-ippool fd00:10:48::\/56, and this run moves only the IPv4 pod range; a dual-stack pod network needs both families in podCidr/);
  });

  it("refuses to copy a closed old pool's nodeSelector when no new pool is listed", () => {
    assert.throws(() => newInstallationPool({ ...POOLS[0], nodeSelector: "!all()" }, NEW), (e: Error) => e instanceof UserError && /nodeSelector "!all\(\)" and no pool in 10\.48\.0\.0\/16/.test(e.message));
  });

  it("plan: the operator path when the Installation lists the old pool (or, part-way, the new one), else the manifest path, each saying why", () => {
    const op = calicoPoolPlan(cni(operator()), RANGE);
    assert.deepEqual({ ...op, reason: undefined }, { management: "operator", installation: "default", oldPool: "default-ipv4-ippool", newPool: "cidr-migration-10-48-0-0-16", reason: undefined });
    assert.match(op.reason, /Installation default lists pool default-ipv4-ippool \(192\.168\.0\.0\/16\): the Tigera operator owns the pools/);
    assert.equal(cniSummary({ cni: "calico", calicoPools: op }), "calico (pools: through Installation default)");
    const partWay = installationStages(POOLS, [RANGE]).remove;
    assert.equal(calicoPoolPlan(cni(operator({ ipPools: partWay })), RANGE).management, "operator");
    for (const [info, why] of [
      [undefined, /no Tigera operator Installation/],
      [operator({ ipPools: [] }), /manages no pools \(ipPools: \[\]\)/],
      [operator({ ipPools: undefined }), /has no ipPools yet/],
      [operator({ ipPools: [{ name: "x", cidr: "10.99.0.0/16" }] }), /lists no pool in 192\.168\.0\.0\/16/],
    ] as const) {
      const plan = calicoPoolPlan(cni(info), RANGE);
      assert.equal(plan.management, "manifest");
      assert.match(plan.reason, why);
      assert.match(plan.reason, /the IPPool objects are edited directly/);
    }
  });

  it("refuses, before any change, what the operator cannot carry out, naming the pool and the fix", () => {
    assert.deepEqual(calicoPoolRefusals(cni(operator()), RANGE), []);
    const refusal = (info: CalicoOperatorInfo, live = [livePool]) => installationRefusals(info, live, [RANGE]).join("\n");
    assert.match(refusal(operator({ ipPools: [{ ...POOLS[0], blockSize: 24 }] })), /gives pool default-ipv4-ippool blockSize 24 but IPPool default-ipv4-ippool has 26: Calico cannot change a pool's blockSize/);
    assert.match(refusal(operator({ ipPools: [...POOLS, { name: "default-ipv6-ippool", cidr: "fd00:10:244::/56" }] })), /lists the IPv6 pool default-ipv6-ippool fd00:10:244::\/56, and this run moves only the IPv4 pod range/);
    assert.match(refusal(operator({ ipPools: [...POOLS, { name: "second", cidr: "192.168.128.0/17" }] })), /lists 2 pools in the old pod range 192\.168\.0\.0\/16 \(default-ipv4-ippool 192\.168\.0\.0\/16, second 192\.168\.128\.0\/17\)/);
    assert.match(refusal(operator(), [livePool, { ...livePool, name: "by-hand", cidr: "192.168.64.0/18" }]), /IPPool by-hand \(192\.168\.64\.0\/18\) is in the old pod range but Installation default does not list it/);
    assert.match(refusal(operator({ apiServerState: undefined, v3Served: false })), /changes pools only through the Calico API server \(projectcalico\.org\/v3\), and APIServer default is absent/);
    assert.match(refusal(operator({ apiServerState: "Progressing", v3Served: false })), /APIServer default is "Progressing", not Ready/);
    assert.equal(refusal(operator({ apiServerState: undefined, v3Served: true })), "", "v3 served as CRDs needs no API server");
    assert.match(installationRefusals(operator(), [livePool], [{ from: OLD, to: "10.48.0.0/28" }]).join(), /smaller than one Calico block \(\/26/);
    assert.match(calicoPoolRefusals(cni(operator({ ipPools: [{ name: "bad", cidr: "192.168.0.1/16" }] })), RANGE).join(), /lists pool bad with cidr "192\.168\.0\.1\/16", which is not a CIDR/);
  });
});

describe("Calico through the Tigera operator: when the operator is done", () => {
  const ok = (name: string) => ({ metadata: { name }, status: { conditions: [{ type: "Available", status: "True" }, { type: "Degraded", status: "False" }] } });

  it("TigeraStatus calico (and ippools where written) Available and not Degraded", () => {
    assert.deepEqual(tigeraStatusProblems([ok("calico"), ok("ippools"), ok("apiserver")]), []);
    assert.deepEqual(tigeraStatusProblems([ok("calico")]), []);
    assert.deepEqual(tigeraStatusProblems([ok("ippools")]), ["TigeraStatus calico does not exist: is the Tigera operator running?"]);
    const degraded = { metadata: { name: "ippools" }, status: { conditions: [{ type: "Available", status: "True" }, { type: "Degraded", status: "True", reason: "ResourceNotReady", message: "Unable to modify IP pools while Calico API server is unavailable" }] } };
    assert.deepEqual(tigeraStatusProblems([ok("calico"), degraded]), ["TigeraStatus ippools is Degraded (ResourceNotReady: Unable to modify IP pools while Calico API server is unavailable)"]);
    assert.deepEqual(tigeraStatusProblems([{ metadata: { name: "calico" }, status: { conditions: [{ type: "Available", status: "False", reason: "Unknown" }] } }]), ["TigeraStatus calico is not Available (Unknown)"]);
  });

  it("pools: present (with the nodeSelector asked for) and gone, matched by normalized CIDR", () => {
    const live = [{ name: "old", cidr: OLD, nodeSelector: "all()" }, { name: "new", cidr: NEW, nodeSelector: "all()" }];
    assert.deepEqual(poolsPending(live, [{ cidr: OLD }, { cidr: NEW }], []), []);
    assert.deepEqual(poolsPending(live, [{ cidr: OLD, nodeSelector: "!all()" }], []), ['IPPool old (192.168.0.0/16) has nodeSelector "all()", not "!all()"']);
    assert.deepEqual(poolsPending(live.slice(0, 1), [{ cidr: NEW }], [OLD]), ["no IPPool in 10.48.0.0/16 yet", "IPPool old (192.168.0.0/16) still exists"]);
  });
});
