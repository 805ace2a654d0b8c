// The Service sets the benches seed: the shapes of a typical cluster, created through the apiserver.
import { KubeObject, KubeRest, paths } from "../lib/serviceMove/kubeRest";

/**
 * Service i of a set: 80% ClusterIP with a selector, 15% NodePort (one allocated port, so that a 10,000-Service set
 * fits the 2,768 ports of the default NodePort range), 5% selector-less with Endpoints.
 */
/** How many distinct selectors a set's Services use (app-0 … app-{SELECTORS-1}). */
export const SELECTORS = 50;

function serviceBody(i: number): { service: KubeObject; endpoints?: KubeObject } {
  const name = `svc-${String(i).padStart(4, "0")}`;
  const labels = { app: `app-${i % SELECTORS}`, "app.kubernetes.io/part-of": "bench" };
  if (i % 20 === 19) {
    return {
      service: { metadata: { name, labels }, spec: { ports: [{ name: "db", port: 5432 }] } },
      endpoints: { metadata: { name, labels: { source: "hand-made" } }, subsets: [{ addresses: [{ ip: `192.168.${i % 250}.${1 + (i % 200)}` }], ports: [{ name: "db", port: 5432 }] }] },
    };
  }
  const type = i % 20 >= 16 ? "NodePort" : "ClusterIP";
  const ports = [{ name: "http", port: 80, targetPort: 8080 }, ...(type === "ClusterIP" ? [{ name: "metrics", port: 9090 }] : [])];
  return { service: { metadata: { name, labels, annotations: { "example.com/owner": `team-${i % 7}` } }, spec: { type, selector: { app: `app-${i % SELECTORS}` }, ports } } };
}

/** A busy machine's etcd can time out a write; the apiserver then refuses the create, and it is safe to send again. */
async function createRetryingTimeouts(create: () => Promise<KubeObject>): Promise<KubeObject> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (err) {
      if (attempt >= 3 || !/request timed out/.test(String((err as Error).message))) throw err;
    }
  }
}

export async function seedSet(rest: KubeRest, namespace: string, count: number, batch = 25): Promise<Record<string, string>> {
  await rest.create("/api/v1/namespaces", { metadata: { name: namespace } });
  const ips: Record<string, string> = {};
  for (let start = 0; start < count; start += batch) {
    await Promise.all(Array.from({ length: Math.min(batch, count - start) }, async (_, k) => {
      const { service, endpoints } = serviceBody(start + k);
      const created = await createRetryingTimeouts(() => rest.create(paths.services(namespace), service));
      ips[created.metadata!.name!] = (created.spec as { clusterIP: string }).clusterIP;
      if (endpoints) await rest.create(paths.endpointsList(namespace), endpoints);
    }));
  }
  return ips;
}
