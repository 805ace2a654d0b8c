import { strict as assert } from "assert";
import { remoteScriptProvider } from "../../../dynamic-providers/remoteScript";
import { UNKNOWN_VALUE } from "../../../lib/gate/unknownValue";

const connection = { host: "10.0.0.11", port: 22, user: "root", privateKey: "KEY", hostKey: "", dialErrorLimit: 5, perDialTimeoutSeconds: 15 };
const inputs = (over: Record<string, unknown> = {}) => ({ connection, script: "#!/usr/bin/env bash\necho hi\n", triggers: ["run-1"], secretOutput: false, ...over });

type ScriptState = Parameters<NonNullable<typeof remoteScriptProvider.diff>>[1];

/** The state a create would leave, without dialling: what the provider records, with empty stdout and stderr. */
async function stateOf(news: Record<string, unknown>): Promise<ScriptState> {
  const { outs } = await remoteScriptProvider.update!("id", { stdout: "", stderr: "" } as ScriptState, news);
  return outs!;
}

describe("RemoteScript provider (no dialling)", () => {
  it("keeps the script's digest and never the key in what it records", async () => {
    const state = await stateOf(inputs());
    assert.match(String(state.scriptSha256), /^[0-9a-f]{64}$/);
    assert.ok(!JSON.stringify(state).includes("KEY"), "the private key is never an output");
    assert.ok(!JSON.stringify(state).includes("echo hi"), "the script text is not kept, only its digest");
  });

  it("a changed or unknown script, or changed triggers, run the step again; the same inputs change nothing", async () => {
    const olds = await stateOf(inputs());
    assert.deepEqual(await remoteScriptProvider.diff!("id", olds, inputs()), { changes: false });
    assert.deepEqual((await remoteScriptProvider.diff!("id", olds, inputs({ script: "#!/usr/bin/env bash\necho other\n" }))).replaces, ["script"]);
    assert.deepEqual((await remoteScriptProvider.diff!("id", olds, inputs({ script: UNKNOWN_VALUE }))).replaces, ["script"]);
    assert.deepEqual((await remoteScriptProvider.diff!("id", olds, inputs({ triggers: ["run-2"] }))).replaces, ["triggers"]);
  });

  it("the state's round trip (object keys sorted, undefined dropped) changes nothing on the next run", async () => {
    const olds = await stateOf(inputs());
    const sortedKeys = (v: unknown): unknown => Array.isArray(v) ? v.map(sortedKeys) : typeof v === "object" && v !== null ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortedKeys((v as Record<string, unknown>)[k])])) : v;
    const roundTripped = sortedKeys(JSON.parse(JSON.stringify(olds))) as ScriptState;
    assert.notEqual(JSON.stringify(roundTripped.node), JSON.stringify(olds.node), "the test reorders the recorded node's keys");
    assert.deepEqual(await remoteScriptProvider.diff!("id", roundTripped, inputs()), { changes: false });
  });

  it("a new key or dial limit records itself without running the step again", async () => {
    const olds = await stateOf(inputs());
    const rotated = await remoteScriptProvider.diff!("id", olds, inputs({ connection: { ...connection, privateKey: "NEW", perDialTimeoutSeconds: 30 } }));
    assert.deepEqual(rotated, { changes: true });
  });

  it("check names each bad connection field and an empty script", async () => {
    const { failures } = await remoteScriptProvider.check!({}, inputs({ connection: { ...connection, host: "", port: 0 }, script: "" }));
    assert.deepEqual(failures!.map((f) => f.reason), [
      "connection.host is required (a non-empty string)",
      "connection.port 0 must be a positive whole number",
      "script is required (a non-empty string)",
    ]);
  });
});
