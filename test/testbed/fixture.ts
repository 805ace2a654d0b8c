// Mocha fixtures for integration tests: one real control plane per describe()
// block (started once in before(), stopped in after()), and uniquely named
// namespaces so tests in that block do not see each other's objects.
// Only integration tests import this; unit tests never start a cluster.
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { randomBytes } from "crypto";
import { startTestCluster, TestCluster, TestClusterOptions } from "./controlPlane";

const START_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 60_000;

/**
 * Call inside describe(): returns a getter for the cluster, valid in it() and
 * in before/beforeEach hooks declared after this call.
 */
export function useTestCluster(opts: TestClusterOptions): () => TestCluster {
    let cluster: TestCluster | undefined;
    before(async function () {
        this.timeout(START_TIMEOUT_MS);
        cluster = await startTestCluster(opts);
    });
    after(async function () {
        this.timeout(STOP_TIMEOUT_MS);
        await cluster?.stop();
        cluster = undefined;
    });
    return () => {
        if (!cluster) throw new Error("useTestCluster: the cluster is not running here (use the getter inside it() or a later hook)");
        return cluster;
    };
}

/** Creates a namespace named `${prefix}-<random>` and returns its name. */
export async function freshNamespace(cluster: TestCluster | KubeConfig, prefix = "test"): Promise<string> {
    const kc = cluster instanceof KubeConfig ? cluster : cluster.kubeConfig();
    const name = `${prefix}-${randomBytes(4).toString("hex")}`;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name, labels: { "cidr-migration.test/fresh": "true" } } } });
    return name;
}
