/**
 * The real Pulumi engine previews the migration of the sandbox (the README's walkthrough: sandbox up → pulumi stack
 * init → secrets from stdin → preview), and the preview touches nothing: the apiserver's audit log shows no write by
 * the stack's kubeconfig user. The preview shows every planned Service old → new IP, every ServiceCIDR change (1.33+)
 * and every node's new podCIDR; the gate passes on the real `pulumi preview --json`; bad config is one readable error
 * with no resource created; no secret appears in any output.
 */
import { strict as assert } from "assert";
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { assertServiceCidrSwitch, auditLineCount, EngineStack, persistedWrites, previewTheGatePasses, REPO_ROOT } from "./engineStack";
import { startSandboxForEngine, stopSandboxForEngine } from "./sandboxForEngine";
import { resolveTestBedVersion } from "../testbed/kubeVersion";

const SANDBOX_USER = "kubernetes-admin";

interface PreviewStep { op: string; urn: string; newState?: { type: string; inputs?: Record<string, any> } }

describe(`the real Pulumi engine previews the sandbox migration (Kubernetes ${resolveTestBedVersion().kube})`, function () {
  this.timeout(600_000);
  let stack: EngineStack;
  let auditLog: string;
  let privateKey: string;
  let plan: { services: Array<{ namespace: string; name: string; action: string; oldClusterIP: string; newClusterIP: string }>; nodes: Array<{ name: string; newPodCIDR: string; action: string }> };
  const outputs: string[] = [];

  before(async () => {
    const sandbox = await startSandboxForEngine();
    auditLog = sandbox.auditLogPath;
    stack = await EngineStack.init(`e2e-preview-${process.pid}`, fs.readFileSync(path.join(REPO_ROOT, "Pulumi.sandbox.yaml"), "utf8"));
    const keyFile = path.join(stack.dir, "id_ed25519");
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
    privateKey = fs.readFileSync(keyFile, "utf8");
    await stack.setSecret("ssh.privateKey", privateKey);
    const planned = await stack.cli(["plan", "--json"]);
    assert.equal(planned.exitCode, 0, planned.stderr);
    plan = JSON.parse(planned.stdout);
  });

  after(async () => {
    await stack?.remove();
  });

  const engine = async (args: string[]) => {
    const result = await stack.engine(args);
    outputs.push(result.stdout, result.stderr);
    return result;
  };

  it("`pulumi preview --diff` shows every moving Service old → new and every node's new podCIDR, and writes nothing", async () => {
    const before = auditLineCount(auditLog);
    const preview = await engine(["preview", "--diff"]);
    assert.equal(preview.exitCode, 0, `${preview.stdout}\n${preview.stderr}`);
    const moving = plan.services.filter((s) => s.action === "recreate");
    assert.ok(moving.length >= 10, "the sandbox moves its Services");
    for (const s of moving) {
      assert.ok(preview.stdout.includes(s.oldClusterIP) && preview.stdout.includes(s.newClusterIP), `${s.namespace}/${s.name}: ${s.oldClusterIP} → ${s.newClusterIP} is in the diff`);
    }
    for (const n of plan.nodes.filter((n) => n.action === "move")) assert.ok(preview.stdout.includes(n.newPodCIDR), `${n.name}: ${n.newPodCIDR} is in the diff`);
    assert.deepEqual(persistedWrites(auditLog, SANDBOX_USER, before), [], "the preview wrote nothing to the cluster");
  });

  it("`pulumi preview --json --show-sames`: the moves, the nodes and (1.33+) the ServiceCIDRs, step by step; the gate passes it, and refuses it against a plan it does not match", async () => {
    const before = auditLineCount(auditLog);
    const preview = await engine(["preview", "--json", "--show-sames"]);
    assert.equal(preview.exitCode, 0, preview.stderr);
    const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
    assert.ok(steps.every((s) => s.op === "create" || s.op === "same"), "a first preview only creates");
    const inputsOf = (type: string) => steps.filter((s) => s.newState?.type === `pulumi-nodejs:dynamic/cidr-migration:${type}`).map((s) => s.newState!.inputs!);

    const moves: Record<string, { fromIP: string; toIP: string }> = Object.assign({}, ...inputsOf("ServiceRecreation").map((i) => i.moves));
    const planned = plan.services.filter((s) => s.action === "recreate" && s.name !== "kubernetes");
    for (const s of planned) {
      assert.deepEqual([moves[`${s.namespace}/${s.name}`]?.fromIP, moves[`${s.namespace}/${s.name}`]?.toIP], [s.oldClusterIP, s.newClusterIP], `${s.namespace}/${s.name}`);
    }
    const rejoins = inputsOf("NodeRejoin");
    assert.deepEqual(Object.fromEntries(rejoins.map((i) => [i.node, i.plannedPodCIDR])), Object.fromEntries(plan.nodes.filter((n) => n.action === "move").map((n) => [n.name, n.newPodCIDR])));

    assertServiceCidrSwitch(inputsOf("ServiceCidrSwitch"), ["10.96.0.0/12"], ["10.112.0.0/12"]);
    const previewFile = await previewTheGatePasses(stack, preview.stdout);

    // The same real preview against a reviewed plan that put one Service elsewhere: the gate refuses, naming it.
    const moved = plan.services.find((s) => s.namespace === "web" && s.name === "frontend")!;
    const reviewed = JSON.parse(JSON.stringify(plan));
    // Another host in the same /24 (the seed's ClusterIPs are random, so .250 may be the planned one itself).
    const offPlanIp = moved.newClusterIP.replace(/\.\d+$/, moved.newClusterIP.endsWith(".250") ? ".251" : ".250");
    reviewed.services.find((s: { namespace: string; name: string }) => s.namespace === "web" && s.name === "frontend").newClusterIP = offPlanIp;
    const planFile = path.join(stack.dir, "reviewed-plan.json");
    fs.writeFileSync(planFile, JSON.stringify(reviewed));
    const offPlan = await stack.cli(["gate", previewFile, "--plan", planFile], false);
    assert.equal(offPlan.exitCode, 1, `${offPlan.stdout}\n${offPlan.stderr}`);
    assert.match(offPlan.stdout, new RegExp(`web/frontend[\\s\\S]*re-creates it at ${moved.newClusterIP.replace(/\./g, "\\.")}, the plan at ${offPlanIp.replace(/\./g, "\\.")}`));
    assert.deepEqual(persistedWrites(auditLog, SANDBOX_USER, before), []);
  });

  it("`pulumi preview --policy-pack policy`: the CrossGuard pack passes the migration and refuses a pool outside the new pod range", async () => {
    const policyConfig = (podCidr: string) => {
      const file = path.join(stack.dir, `policy-${podCidr.replace(/\W/g, "-")}.json`);
      fs.writeFileSync(file, JSON.stringify({ "calico-pool-in-new-pod-range": { podCidr } }));
      return file;
    };
    const pass = await engine(["preview", "--policy-pack", path.join(REPO_ROOT, "policy"), "--policy-pack-config", policyConfig("10.48.0.0/16")]);
    assert.equal(pass.exitCode, 0, `${pass.stdout}\n${pass.stderr}`);
    assert.match(pass.stdout, /cidr-migration@v[\d.]+ \(local: [^)]*policy\)/, "the pack ran");
    const refused = await engine(["preview", "--policy-pack", path.join(REPO_ROOT, "policy"), "--policy-pack-config", policyConfig("10.49.0.0/16")]);
    assert.notEqual(refused.exitCode, 0);
    assert.match(refused.stdout, /\[mandatory\]\s+calico-pool-in-new-pod-range/);
    assert.match(refused.stdout, /spec\.cidr 10\.48\.0\.0\/16 is not inside the new pod range 10\.49\.0\.0\/16/);
  });

  it("services.strategy etcd-rewrite: the preview lists every Service and Node move on the EtcdRewrite step and the apiservers it waits for, declares no re-create, writes nothing; the gate and the policy pack pass it", async () => {
    await stack.pulumiOk(["config", "set", "--path", "services.strategy", "etcd-rewrite"]);
    try {
      const before = auditLineCount(auditLog);
      const preview = await engine(["preview", "--json"]);
      assert.equal(preview.exitCode, 0, preview.stderr);
      const steps = (JSON.parse(preview.stdout) as { steps: PreviewStep[] }).steps;
      const ofType = (type: string) => steps.filter((st) => st.newState?.type === `pulumi-nodejs:dynamic/cidr-migration:${type}`);
      assert.deepEqual(ofType("ServiceRecreation"), [], "nothing is re-created");
      assert.deepEqual(ofType("NodeDeregister"), [], "no Node is deleted");
      const [rewrite] = ofType("EtcdRewrite");
      const inputs = rewrite.newState!.inputs!;
      const planned = plan.services.filter((sv) => sv.action === "recreate");
      assert.deepEqual(inputs.services, Object.fromEntries(planned.map((sv) => [`${sv.namespace}/${sv.name}`, `${sv.oldClusterIP} → ${sv.newClusterIP}`])));
      assert.deepEqual(Object.keys(inputs.nodes).sort(), plan.nodes.filter((n) => n.action === "move").map((n) => n.name).sort());
      assert.ok((inputs.apiservers as string[]).every((url) => /^https:\/\/.+:6443$/.test(url)));
      assert.equal(ofType("OldIpBridgeOpen").length, 1);
      assert.deepEqual(persistedWrites(auditLog, SANDBOX_USER, before), [], "the preview wrote nothing to the cluster");
      const previewFile = path.join(stack.dir, "preview-rewrite.json");
      fs.writeFileSync(previewFile, preview.stdout);
      const gate = await stack.cli(["gate", previewFile]);
      assert.equal(gate.exitCode, 0, `${gate.stdout}\n${gate.stderr}`);
      // the policy pack judges the stop and the start as manifest edits: each after its node's backup, flags agreeing
      const policyConfig = path.join(stack.dir, "policy-rewrite.json");
      fs.writeFileSync(policyConfig, JSON.stringify({ "calico-pool-in-new-pod-range": { podCidr: "10.48.0.0/16" } }));
      const policy = await engine(["preview", "--policy-pack", path.join(REPO_ROOT, "policy"), "--policy-pack-config", policyConfig]);
      assert.equal(policy.exitCode, 0, `${policy.stdout}\n${policy.stderr}`);
    } finally {
      await stack.pulumiOk(["config", "rm", "--path", "services.strategy"]);
    }
  });

  it("bad stack config under the engine: one readable error naming the key, no resource created, a non-zero exit", async () => {
    await stack.pulumiOk(["config", "set", "--path", "serviceCidr.to", "10.112.0.0/33"]);
    try {
      const up = await engine(["up", "--yes", "--skip-preview"]);
      assert.notEqual(up.exitCode, 0);
      const all = `${up.stdout}${up.stderr}`;
      assert.match(all, /cidr-migration:serviceCidr\.to/);
      assert.match(all, /10\.112\.0\.0\/33/);
      assert.doesNotMatch(all, /\n\s+at [\w.<>]+ \(/, "no stack trace");
      const state = await stack.exportState();
      assert.deepEqual(state.resources.filter((r) => r.type !== "pulumi:pulumi:Stack").map((r) => r.urn), [], "no resource was created");
    } finally {
      await stack.pulumiOk(["config", "set", "--path", "serviceCidr.to", "10.112.0.0/12"]);
    }
  });

  it("no secret in any output or in the stack file: the SSH key and the kubeconfig's client key stay encrypted", () => {
    const keyBody = privateKey.split("\n")[1];
    const clientKey = fs.readFileSync(path.join(path.dirname(auditLog), "pki", "admin.key"), "utf8").split("\n")[1];
    assert.ok(keyBody.length > 20 && clientKey.length > 20);
    const all = outputs.join("\n");
    assert.ok(outputs.length >= 6, "every engine run above was captured");
    assert.ok(!all.includes(keyBody), "the SSH key never appears");
    assert.ok(!all.includes(clientKey), "the kubeconfig's client key never appears");
    const stackFile = fs.readFileSync(stack.stackFile, "utf8");
    assert.ok(!stackFile.includes(keyBody) && /privateKey:\n\s+secure: v1:/.test(stackFile), "the stack file holds only ciphertext");
  });
});

// A root hook (outside any describe): once every test has run, the sandbox the suite started is stopped.
after(stopSandboxForEngine);
