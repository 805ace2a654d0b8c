/** Calico's IPAM CRDs as Calico ships them (test/fixtures/testbed), installed and waited for until Established. */
import * as fs from "fs";
import * as path from "path";
import { ApiextensionsV1Api, KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";
import { parse } from "yaml";
import { waitUntil } from "../testbed/processes";

const FILES = ["crd.projectcalico.org_ippools.yaml", "crd.projectcalico.org_ipamblocks.yaml", "crd.projectcalico.org_blockaffinities.yaml"];

export async function installCalicoCrds(kc: KubeConfig): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const file of FILES) {
    const crd = parse(fs.readFileSync(path.join(__dirname, "..", "fixtures", "testbed", file), "utf8")) as V1CustomResourceDefinition;
    await api.createCustomResourceDefinition({ body: crd });
    await waitUntil(
      async () => (await api.readCustomResourceDefinition({ name: crd.metadata!.name! })).status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ?? false,
      { timeoutMs: 30_000, what: `CRD ${file} Established` },
    );
  }
}
