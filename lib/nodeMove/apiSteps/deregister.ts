/** NodeDeregister's step: delete the Node object, only the backed-up one (uid precondition), only once it is drained. */
import { planDrain, podKey } from "../drainDecision";
import { registrationState } from "../rejoinChecks";
import { StepRun } from "./stepRun";

export async function deleteNode(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const { record, phase } = await run.requireBackup();
  const node = await run.readNode();
  const state = registrationState(node, record.nodeUid);
  if (state === "re-registered") {
    run.log("the Node has re-registered already (new uid); not deleting it again");
    await run.setPhase(phase, "node-deleted");
    return { result: "already-re-registered", elapsedSeconds: run.elapsedSeconds() };
  }
  if (state === "old-object") {
    // fail closed: a Node that still runs evictable pods was not drained
    const left = planDrain(await run.podsOnNode(), "evict");
    if (left.evict.length > 0 || left.wait.length > 0) {
      throw new Error(`node ${inputs.node}: still runs ${[...left.evict, ...left.wait].map(podKey).join(", ")}; the drain did not finish, so the Node is not deleted`);
    }
    await run.optional(`deleting Node ${inputs.node}`, () => run.c.core.deleteNode({ name: inputs.node, body: { preconditions: { uid: record.nodeUid } } }));
    await run.within(60, "the Node's deletion", async () => (registrationState(await run.readNode(), record.nodeUid) === "old-object" ? undefined : true), "the Node object is still there (a finalizer?)");
    run.log(`deleted Node (uid ${record.nodeUid}); the kubelet registers it again when it starts`);
  }
  await run.setPhase(phase, "node-deleted");
  return { result: state === "old-object" ? "deleted" : "already-deleted", deletedUid: record.nodeUid, elapsedSeconds: run.elapsedSeconds() };
}
