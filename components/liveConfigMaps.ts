/**
 * The live system ConfigMaps the migration edits (kubeadm-config, kubelet-config, kube-proxy, flannel, Cilium),
 * read straight from the apiserver while the program runs, like discovery, and not as `ConfigMap.get` resources:
 * a read resource enters the state, and `pulumi refresh` then proposes an update for it after every `up` (the
 * provider fills its inputs in), so a stack never refreshed clean. Read at `up` time, a re-run computes the same
 * edit from what the cluster holds (idempotent), and the preview shows the exact new data.
 * index.ts sets the reader once per run from the stack's kubeconfig; the test mocks set their own. Each ConfigMap
 * is read once per run, however many components edit or read it (kubeadm-config: ApiserverCerts and ClusterConfig).
 */
import * as pulumi from "@pulumi/pulumi";

/** A ConfigMap's data, or undefined when it does not exist. */
export type ConfigMapReader = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

let reader: ConfigMapReader | undefined;
let reads = new Map<string, Promise<Record<string, string> | undefined>>();

export function useConfigMapReader(next: ConfigMapReader | undefined): void {
  reader = next;
  reads = new Map();
}

export interface LiveConfigMap {
  namespace: string;
  name: string;
  data: pulumi.Output<Record<string, string>>;
}

export function liveConfigMap(namespace: string, name: string): LiveConfigMap {
  const read = reader;
  if (!read) throw new Error("no ConfigMap reader: index.ts sets one from the kubeconfig before declaring the graph");
  const key = `${namespace}/${name}`;
  if (!reads.has(key)) reads.set(key, read(namespace, name));
  const data = reads.get(key)!.then((d) => {
    if (d === undefined) throw new pulumi.RunError(missingMessage(namespace, name));
    return d;
  });
  return { namespace, name, data: pulumi.output(data) };
}

/** One key of a live ConfigMap and the edit a component makes to it: pure, so running it twice gives the same text. */
export interface LiveKeyEdit {
  namespace: string;
  configMap: string;
  key: string;
  edit: (text: string) => string;
}

/**
 * Runs the graph's ConfigMap edits on what the cluster holds now; index.ts calls it before it declares any resource.
 * An edit that refuses what it finds (a missing object or key, a value it cannot change safely) must stop the run
 * here, as one readable error: inside the graph it fails a child resource whose URN then never resolves, and every
 * step waiting on its component waits for ever (the Node SDK's behaviour; the preview hangs).
 */
export async function checkLiveKeyEdits(read: ConfigMapReader, edits: readonly LiveKeyEdit[]): Promise<void> {
  for (const e of edits) {
    const data = await read(e.namespace, e.configMap);
    if (data === undefined) throw new pulumi.RunError(missingMessage(e.namespace, e.configMap));
    const text = data[e.key];
    if (text === undefined) throw new pulumi.RunError(missingKeyMessage(e));
    e.edit(text);
  }
}

const missingMessage = (namespace: string, name: string) =>
  `ConfigMap ${namespace}/${name} does not exist; the migration edits it, so check the cluster (kubectl -n ${namespace} get cm ${name})`;

export function missingKeyMessage(ref: { namespace: string; configMap: string; key: string }): string {
  return `ConfigMap ${ref.namespace}/${ref.configMap} has no key "${ref.key}"; check the object (kubectl -n ${ref.namespace} get cm ${ref.configMap} -o yaml) or pass its name`;
}
