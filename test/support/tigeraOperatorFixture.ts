/**
 * A Tigera-operator install on a test-bed cluster: the operator's own CRDs (test/fixtures/calico-operator, copied
 * from tigera/operator), an Installation `default` listing the pools, an APIServer `default` (status Ready when the
 * Calico API server is to count as up), the existing pools labelled as the operator's, and the pool controller's
 * stand-in running. `remove` takes all of it away again, leaving Calico's own objects to the caller.
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { ApiextensionsV1Api, CustomObjectsApi, KubeConfig, V1CustomResourceDefinition } from "@kubernetes/client-node";
import { parse } from "yaml";
import { TigeraPoolControllerStandIn } from "./tigeraPoolControllerStandIn";

const FIXTURES = path.join(__dirname, "..", "fixtures", "calico-operator");
const CRD_FILES = ["operator.tigera.io_installations.yaml", "operator.tigera.io_tigerastatuses.yaml", "operator.tigera.io_apiservers.yaml"];
const TIGERA = { group: "operator.tigera.io", version: "v1" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface OperatorPoolEntry {
  name: string;
  cidr: string;
  [field: string]: unknown;
}

export interface OperatorInstall {
  standIn: TigeraPoolControllerStandIn;
  remove(): Promise<void>;
}

async function installCrds(kc: KubeConfig): Promise<string[]> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tigera-crds-"));
  const kubeconfig = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
  const names: string[] = [];
  try {
    for (const file of CRD_FILES) {
      const crd = parse(fs.readFileSync(path.join(FIXTURES, file), "utf8")) as V1CustomResourceDefinition;
      names.push(crd.metadata!.name!);
      // kubectl create, as upstream's deploy-crds: the client library's typed CRD model drops
      // x-kubernetes-int-or-string, and the Installation CRD is too large for apply's last-applied annotation.
      const created = spawnSync("kubectl", ["--kubeconfig", kubeconfig, "create", "-f", path.join(FIXTURES, file)], { encoding: "utf8" });
      if (created.status !== 0 && !/AlreadyExists/.test(created.stderr)) throw new Error(`kubectl create -f ${file}: ${created.stderr}`);
      for (;;) {
        const live = await api.readCustomResourceDefinition({ name: crd.metadata!.name! });
        if (live.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
        await sleep(100);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return names;
}

/** Waits until `probe` holds, or fails naming `what`. */
export async function eventually(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

export async function installOperator(kc: KubeConfig, opts: { pools: OperatorPoolEntry[]; apiServerReady: boolean }): Promise<OperatorInstall> {
  const crds = await installCrds(kc);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.createClusterCustomObject({ ...TIGERA, plural: "apiservers", body: { apiVersion: "operator.tigera.io/v1", kind: "APIServer", metadata: { name: "default" }, spec: {} } });
  if (opts.apiServerReady) {
    const apiServer = (await custom.getClusterCustomObject({ ...TIGERA, plural: "apiservers", name: "default" })) as Record<string, unknown>;
    await custom.replaceClusterCustomObjectStatus({ ...TIGERA, plural: "apiservers", name: "default", body: { ...apiServer, status: { state: "Ready" } } });
  }
  await custom.createClusterCustomObject({
    ...TIGERA,
    plural: "installations",
    body: { apiVersion: "operator.tigera.io/v1", kind: "Installation", metadata: { name: "default" }, spec: { cni: { type: "Calico" }, calicoNetwork: { ipPools: opts.pools } } },
  });
  // The pools the operator made at install time carry its label.
  for (const pool of opts.pools) {
    const calico = { group: "crd.projectcalico.org", version: "v1", plural: "ippools", name: pool.name };
    const live = (await custom.getClusterCustomObject(calico).catch(() => undefined)) as { metadata: { labels?: Record<string, string> } } | undefined;
    if (!live) continue;
    const body = { ...live, metadata: { ...live.metadata, labels: { ...live.metadata.labels, "app.kubernetes.io/managed-by": "tigera-operator" } } };
    await custom.replaceClusterCustomObject({ ...calico, body });
  }
  const standIn = new TigeraPoolControllerStandIn(kc);
  standIn.start();
  await eventually("TigeraStatus calico to be written by the stand-in", async () => {
    const status = await custom.getClusterCustomObject({ ...TIGERA, plural: "tigerastatuses", name: "calico" }).catch(() => undefined);
    return status !== undefined;
  });
  return {
    standIn,
    async remove() {
      await standIn.stop();
      const api = kc.makeApiClient(ApiextensionsV1Api);
      for (const name of crds) await api.deleteCustomResourceDefinition({ name }).catch(() => undefined);
      for (const name of crds) {
        await eventually(`CRD ${name} to go`, () => api.readCustomResourceDefinition({ name }).then(() => false, () => true), 60_000);
      }
    },
  };
}
