/**
 * The Calico path end to end under the real Pulumi engine, on the sandbox, both ways (test/e2e/calicoProgram.ts
 * runs index.ts's Calico half alone; the whole program stops at the control plane's first SSH step here):
 * - IPPool objects (no operator): the new pool with the old one's settings, the old one disabled; the first `up`
 *   stops at the removal while IPAM blocks remain in the old range; once they are released (what the node
 *   rollout does), a re-run deletes the old pool;
 * - through the Tigera operator (the pool-controller stand-in running, test/support): the Installation gains the
 *   new pool and closes the old one, the operator creates and edits the IPPools; the re-run unlists the old pool
 *   and the operator deletes it.
 * The sandbox's Calico objects are put back after each test.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { calicoProgram } from "./calicoProgram";
import { EngineStack, REPO_ROOT } from "./engineStack";
import { startSandboxForEngine } from "./sandboxForEngine";
import { resolveTestBedVersion } from "../testbed/kubeVersion";
import { installOperator, OperatorInstall } from "../support/tigeraOperatorFixture";
import { cidrsOverlap } from "../../lib/net/cidr";

const PROJECT = path.join(__dirname, "calico-project");
const CALICO = { group: "crd.projectcalico.org", version: "v1" };
const TIGERA = { group: "operator.tigera.io", version: "v1" };
const KINDS = ["ippools", "ipamblocks", "blockaffinities"];
const OLD = "10.244.0.0/16";
const NEW = "10.48.0.0/16";
const NEW_POOL = "cidr-migration-10-48-0-0-16";
const STILL_IN_USE = /Calico IPPool default-ipv4-ippool \(10\.244\.0\.0\/16\) is still in use: 4 IPAM block\(s\)/;

interface CalicoObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; labels?: Record<string, string>; [k: string]: unknown };
  spec: Record<string, any>;
}

describe(`the real Pulumi engine runs the Calico path on the sandbox, both ways (Kubernetes ${resolveTestBedVersion().kube})`, function () {
  this.timeout(600_000);
  let kc: KubeConfig;
  let seeded: Record<string, CalicoObject[]>;
  let operator: OperatorInstall | undefined;
  const stacks: EngineStack[] = [];
  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const list = async (plural: string, group = CALICO) => ((await custom().listClusterCustomObject({ ...group, plural })) as { items: CalicoObject[] }).items;
  const pool = async (name: string) => (await list("ippools")).find((p) => p.metadata.name === name);

  before(async () => {
    const sandbox = await startSandboxForEngine();
    kc = new KubeConfig();
    kc.loadFromFile(path.join(sandbox.clusterDir, "admin.kubeconfig"));
    seeded = {};
    for (const plural of KINDS) seeded[plural] = await list(plural);
  });

  afterEach(async () => {
    await operator?.remove();
    operator = undefined;
    // Back to the sandbox's seed, for the suites that follow.
    for (const plural of KINDS) {
      for (const o of await list(plural)) await custom().deleteClusterCustomObject({ ...CALICO, plural, name: o.metadata.name });
      for (const o of seeded[plural]) {
        const { name, labels } = o.metadata;
        await custom().createClusterCustomObject({ ...CALICO, plural, body: { apiVersion: o.apiVersion, kind: o.kind, metadata: { name, ...(labels ? { labels } : {}) }, spec: o.spec } });
      }
    }
  });

  after(async () => {
    for (const s of stacks) await s.remove();
  });

  async function newStack(label: string): Promise<EngineStack> {
    const config = fs.readFileSync(path.join(REPO_ROOT, "Pulumi.sandbox.yaml"), "utf8");
    const stack = await EngineStack.init(`calico-${label}-${process.pid}`, config, PROJECT);
    stacks.push(stack);
    return stack;
  }

  /** What the node rollout does for Calico: each drained node's blocks in the old range are released. */
  async function releaseOldBlocks(): Promise<void> {
    for (const plural of ["ipamblocks", "blockaffinities"]) {
      for (const o of await list(plural)) {
        if (cidrsOverlap(o.spec.cidr, OLD)) await custom().deleteClusterCustomObject({ ...CALICO, plural, name: o.metadata.name });
      }
    }
  }

  const all = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`;

  function assertNoSecretIn(text: string): void {
    const user = kc.getCurrentUser();
    for (const secret of [user?.keyData, user?.token].filter((s): s is string => typeof s === "string" && s.length > 0)) {
      assert.ok(!text.includes(secret), "the kubeconfig's credentials appear in plaintext");
    }
  }

  it("IPPool objects: the new pool with the old one's settings, the old one disabled; deleted once its blocks are released", async () => {
    const stack = await newStack("manifest");
    const preview = await stack.runProgram(calicoProgram(), ["preview", "--diff"]);
    assert.equal(preview.exitCode, 0, all(preview));
    assert.match(preview.stdout, /calico-pool-new/);
    assert.match(preview.stdout, /calico-pool-disable-old/);
    assert.match(all(preview), /Calico pools: calico \(pools: IPPool objects\); no Tigera operator Installation: the IPPool objects are edited directly/);
    assert.doesNotMatch(preview.stdout, /InstallationPatch/);

    const first = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(first.exitCode, 1, all(first));
    assert.match(all(first), STILL_IN_USE);
    const created = (await pool(NEW_POOL))!;
    assert.deepEqual(created.spec, { cidr: NEW, blockSize: 26, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, nodeSelector: "all()", disabled: false });
    assert.equal((await pool("default-ipv4-ippool"))!.spec.disabled, true);

    await releaseOldBlocks();
    const second = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(second.exitCode, 0, all(second));
    assert.equal(await pool("default-ipv4-ippool"), undefined, "the old pool is deleted");
    assert.deepEqual((await list("ippools")).map((p) => p.metadata.name), [NEW_POOL]);
    const outputs = JSON.parse(await stack.pulumiOk(["stack", "output", "--json"]));
    assert.equal(outputs.calicoPools.management, "manifest");
    assertNoSecretIn((await stack.exportState()).text);
  });

  it("through the Tigera operator: the Installation gains the new pool and closes the old one; the operator creates, edits and finally deletes the IPPools", async () => {
    const entry = { name: "default-ipv4-ippool", cidr: OLD, blockSize: 26, encapsulation: "IPIP", natOutgoing: "Enabled", nodeSelector: "all()", assignmentMode: "Automatic" };
    operator = await installOperator(kc, { pools: [entry], apiServerReady: true });
    const installationPools = async () => ((await custom().getClusterCustomObject({ ...TIGERA, plural: "installations", name: "default" })) as { spec: { calicoNetwork: { ipPools: Array<Record<string, unknown>> } } }).spec.calicoNetwork.ipPools;

    const stack = await newStack("operator");
    const preview = await stack.runProgram(calicoProgram(), ["preview", "--diff"]);
    assert.equal(preview.exitCode, 0, all(preview));
    for (const name of ["calico-pool-add-new-pool", "calico-pool-close-old-pool", "calico-old-pool-remove-from-installation"]) assert.match(preview.stdout, new RegExp(name));
    assert.match(preview.stdout, /kubernetes:operator\.tigera\.io\/v1:InstallationPatch/);
    assert.match(all(preview), /Calico pools: calico \(pools: through Installation default\); Installation default lists pool default-ipv4-ippool \(10\.244\.0\.0\/16\)/);
    assert.doesNotMatch(preview.stdout, /calico-pool-disable-old/, "no direct edit of the operator's IPPools");

    const first = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(first.exitCode, 1, all(first));
    assert.match(all(first), STILL_IN_USE);
    const copied = { name: NEW_POOL, cidr: NEW, blockSize: 26, encapsulation: "IPIP", natOutgoing: "Enabled", nodeSelector: "all()", assignmentMode: "Automatic", disableBGPExport: false };
    assert.deepEqual(await installationPools(), [{ ...entry, disableBGPExport: false, nodeSelector: "!all()" }, copied]);
    const made = (await pool(NEW_POOL))!;
    assert.equal(made.metadata.labels?.["app.kubernetes.io/managed-by"], "tigera-operator", "the operator made the new pool");
    assert.deepEqual({ cidr: made.spec.cidr, ipipMode: made.spec.ipipMode, vxlanMode: made.spec.vxlanMode, natOutgoing: made.spec.natOutgoing, blockSize: made.spec.blockSize }, { cidr: NEW, ipipMode: "Always", vxlanMode: "Never", natOutgoing: true, blockSize: 26 });
    assert.equal((await pool("default-ipv4-ippool"))!.spec.nodeSelector, "!all()");
    assert.equal((await pool("default-ipv4-ippool"))!.spec.disabled, undefined, "the operator's pool is closed by its selector, never disabled by hand");

    await releaseOldBlocks();
    const second = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(second.exitCode, 0, all(second));
    assert.deepEqual(await installationPools(), [copied]);
    assert.deepEqual((await list("ippools")).map((p) => p.metadata.name), [NEW_POOL]);
    assert.ok(operator.standIn.actions.includes("delete default-ipv4-ippool"), `the operator deleted the old pool: ${operator.standIn.actions.join(", ")}`);
    const removal = (await stack.exportState()).resources.find((r) => r.urn.endsWith("::calico-old-pool-deleted"));
    // The operator may delete it before the step first looks (already-absent) or while it waits (deleted-by-operator).
    assert.ok(["deleted-by-operator", "already-absent"].includes(String(removal?.outputs?.result)), `removal result ${removal?.outputs?.result}`);
    const outputs = JSON.parse(await stack.pulumiOk(["stack", "output", "--json"]));
    assert.equal(outputs.calicoPools.management, "operator");
    assertNoSecretIn((await stack.exportState()).text);

    // A third run finds the move done: nothing left to do for the Calico steps.
    const third = await stack.runProgram(calicoProgram(), ["up", "--yes", "--skip-preview"]);
    assert.equal(third.exitCode, 0, all(third));
    assert.deepEqual(await installationPools(), [copied]);
    assert.deepEqual(JSON.parse(await stack.pulumiOk(["stack", "output", "--json"])).nothingToDo.length, 2);
  });
});
