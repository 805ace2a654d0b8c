// index.ts as `pulumi preview` runs it, under the SDK's mocks (for the graph's shape only), against a real control
// plane: discovery and the live kube-system ConfigMaps are the cluster's, the node files its read steps print are
// fixtures of real kubeadm output.
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { REMOTE_SCRIPT_TYPE } from "../../lib/gate/policyRules";
import { captureGraph, MockGraph } from "./pulumiMocks";
import { REPO } from "./cli";

const MANIFESTS = path.join(REPO, "test", "fixtures", "manifests");
const KUBELET_CONFIG = path.join(REPO, "test", "fixtures", "testbed", "var-lib-kubelet-config-yaml-v1.25-clusterdns.yaml");

/** What a node's read step prints (base64 of the file), by the path its script reads. */
export function nodeFile(script: string): string | undefined {
  const files: Array<[string, string]> = [
    ["kube-controller-manager.yaml", path.join(MANIFESTS, "v1.29-single-cp-kube-controller-manager.yaml")],
    ["kube-apiserver.yaml", path.join(MANIFESTS, "v1.29-single-cp-kube-apiserver.yaml")],
    ["kubelet/config.yaml", KUBELET_CONFIG],
  ];
  const hit = files.find(([needle]) => script.includes(needle));
  return hit ? readFileSync(hit[1]).toString("base64") : undefined;
}

/** The graph index.ts declares for stack config `values` (the SSH key secret) on the cluster `kc` reaches. */
export async function programGraph(kc: KubeConfig, values: Record<string, unknown>): Promise<MockGraph> {
  const configMaps = new Map<string, { metadata?: unknown; data?: unknown }>();
  for (const namespace of ["kube-system", "kube-flannel"]) {
    const { items } = await kc.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace });
    for (const cm of items) configMaps.set(`${namespace}/${cm.metadata!.name}`, cm);
  }
  const config = Object.fromEntries(Object.entries(values).map(([k, v]) => [`cidr-migration:${k}`, typeof v === "string" ? v : JSON.stringify(v)]));
  return captureGraph(
    async () => {
      pulumi.runtime.setAllConfig(config, ["cidr-migration:ssh"]);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const program = require("../../index") as () => Promise<unknown>;
      await program();
    },
    {
      preview: true,
      readState: (type, id) => {
        const cm = type === "kubernetes:core/v1:ConfigMap" ? configMaps.get(id) : undefined;
        return cm ? { metadata: cm.metadata, data: cm.data } : undefined;
      },
      outputs: ({ type, inputs }) => {
        const stdout = type === REMOTE_SCRIPT_TYPE ? nodeFile(String(inputs.script ?? "")) : undefined;
        return stdout === undefined ? {} : { stdout, stderr: "" };
      },
    },
  );
}
