/**
 * Reading and writing Calico's crd.projectcalico.org/v1 objects and the Tigera operator's operator.tigera.io/v1 ones,
 * for the Calico providers (dynamic-providers/calico*). Kept free of module-level state: provider code is serialized by value into the state.
 */
import { CustomObjectsApi } from "@kubernetes/client-node";

export const CALICO = { group: "crd.projectcalico.org", version: "v1" };
export const TIGERA = { group: "operator.tigera.io", version: "v1" };

export interface CalicoObject {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { cidr?: string; node?: string; affinity?: string; disabled?: boolean; state?: string; nodeSelector?: string; calicoNetwork?: { ipPools?: Array<{ name?: string; cidr?: string }> } };
  status?: unknown;
}

/** Every object of a cluster-scoped kind, page by page. */
export async function listAll(api: CustomObjectsApi, group: { group: string; version: string }, plural: string): Promise<CalicoObject[]> {
  const items: CalicoObject[] = [];
  let cont: string | undefined;
  do {
    const page = (await api.listClusterCustomObject({ ...group, plural, limit: 500, _continue: cont })) as {
      items: CalicoObject[];
      metadata?: { _continue?: string };
    };
    items.push(...page.items);
    cont = page.metadata?._continue || undefined;
  } while (cont);
  return items;
}

/** One object, or undefined when it does not exist. */
export async function getOptional(api: CustomObjectsApi, group: { group: string; version: string }, plural: string, name: string): Promise<CalicoObject | undefined> {
  try {
    return (await api.getClusterCustomObject({ ...group, plural, name })) as CalicoObject;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * One line for a failed API call. Not lib/config/kubeClient's describeKubeError: that module keeps a Set, which
 * closure serialization cannot carry.
 */
export function kubeFailure(err: unknown, action: string, server: string | undefined): Error {
  const code = (err as { code?: unknown }).code;
  if (typeof code === "number") {
    const body = (err as { body?: unknown }).body;
    let message = String((err as Error).message ?? err).split("\n")[0];
    if (typeof body === "string") {
      try {
        message = (JSON.parse(body) as { message?: string }).message ?? message;
      } catch {
        message = body.slice(0, 200);
      }
    }
    return new Error(`the cluster answered HTTP ${code} while ${action}: ${message}`);
  }
  const errno = typeof code === "string" ? code : (err as { cause?: { code?: string } }).cause?.code;
  return new Error(`cannot reach the cluster${server ? ` at ${server}` : ""} while ${action} (${errno ?? String((err as Error).message ?? err).split("\n")[0]}); nothing was deleted, check the kubeconfig and re-run`);
}

export function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown }).code === 404;
}

