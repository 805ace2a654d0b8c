/**
 * What the e2e tests on their own control plane (useTestCluster) seed so that the program sees a kubeadm cluster:
 * kubeadm's CoreDNS Service at the tenth address of the primary range, kubeadm's ConfigMaps on the old ranges, and
 * the Nodes (KCM gives each its podCIDRs); and the stack's SSH key, which a preview needs but never dials.
 */
import { spawnSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { EngineStack } from "./engineStack";
import { waitUntil } from "../testbed/processes";
import { createConfigMaps } from "../testbed/seed";

export interface SeededNode {
  name: string;
  role: string;
}

/** `ranges`: the cluster's Service and Pod ranges, a dual-stack pair comma-separated (each Node then gets two podCIDRs). */
export async function seedKubeadmLikeCluster(kc: KubeConfig, ranges: { serviceSubnet: string; podSubnet: string }, nodes: readonly SeededNode[]): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedService({
    namespace: "kube-system",
    body: { metadata: { name: "kube-dns" }, spec: { selector: { "k8s-app": "kube-dns" }, ports: [{ port: 53, protocol: "UDP" }], clusterIP: "10.96.0.10" } },
  });
  await createConfigMaps(kc, ranges);
  for (const n of nodes) {
    const labels: Record<string, string> = n.role === "control-plane" ? { "node-role.kubernetes.io/control-plane": "" } : {};
    await core.createNode({ body: { metadata: { name: n.name, labels } } });
  }
  const families = ranges.podSubnet.split(",").length;
  await waitUntil(async () => (await core.listNode()).items.every((n) => (n.spec?.podCIDRs?.length ?? 0) === families), { timeoutMs: 30_000, what: `${families} podCIDR(s) on every Node` });
}

/** A fresh key as the stack's ssh.privateKey secret. */
export async function giveSshKey(stack: EngineStack): Promise<void> {
  const keyFile = path.join(stack.dir, "id_ed25519");
  spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", keyFile]);
  await stack.setSecret("ssh.privateKey", fs.readFileSync(keyFile, "utf8"));
}
