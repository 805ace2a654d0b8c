/** CalicoIpamRelease's step: delete the node's IPAMBlocks and BlockAffinities in the old pool (Calico only), once the old Node object is gone. */
import { calicoObjectsToRelease } from "../calicoIpam";
import { registrationState } from "../rejoinChecks";
import { StepRun } from "./stepRun";

const CALICO = { group: "crd.projectcalico.org", version: "v1" };

export async function releaseCalicoIpam(run: StepRun): Promise<Record<string, unknown>> {
  const { inputs } = run;
  const { record } = await run.requireBackup();
  const node = await run.readNode();
  if (registrationState(node, record.nodeUid) === "old-object") {
    throw new Error(`node ${inputs.node}: the Node object from before the move still exists; its IPAM is released only after the delete step`);
  }
  const list = async (plural: string) =>
    ((await run.api(`listing Calico ${plural}`, () => run.c.custom.listClusterCustomObject({ ...CALICO, plural }))) as { items: Array<Record<string, never>> }).items;
  const [blocks, affinities] = await Promise.all([list("ipamblocks"), list("blockaffinities")]);
  const release = calicoObjectsToRelease(inputs.node, inputs.oldPoolCidrs ?? [], blocks, affinities);
  for (const [plural, names] of [["blockaffinities", release.affinities], ["ipamblocks", release.blocks]] as const) {
    for (const name of names) {
      await run.optional(`deleting Calico ${plural} ${name}`, () => run.c.custom.deleteClusterCustomObject({ ...CALICO, plural, name }));
      run.log(`released ${plural} ${name}`);
    }
  }
  return { releasedBlocks: release.blocks, releasedAffinities: release.affinities, elapsedSeconds: run.elapsedSeconds() };
}
