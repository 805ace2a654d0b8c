// Which Kubernetes (and paired etcd) the test bed runs: CIDR_MIGRATION_KUBE_VERSION, a minor ("1.33") or an exact
// version listed in versions.json; unset means the newest. One setting for every test, the benches and `sandbox up`.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { DUAL_WRITE_GATE } from "../../lib/preflight/capacityAndVersions";

interface VersionTable {
    newest: string;
    legacy: string;
    matrix: string[];
    versions: Record<string, { kube: string; etcd: string }>;
}

export interface TestBedVersion {
    /** "1.37" */
    minor: string;
    /** "1.37.2" */
    kube: string;
    /** "3.7.0": the etcd kubeadm pairs with this release */
    etcd: string;
}

export const VERSION_ENV = "CIDR_MIGRATION_KUBE_VERSION";

export function versionTable(): VersionTable {
    return JSON.parse(fs.readFileSync(path.join(__dirname, "versions.json"), "utf8")) as VersionTable;
}

export function resolveTestBedVersion(requested = process.env[VERSION_ENV]): TestBedVersion {
    const table = versionTable();
    const wanted = requested?.trim().replace(/^v/, "") || table.newest;
    const minor = wanted.split(".").slice(0, 2).join(".");
    const entry = table.versions[minor];
    if (!entry || (wanted !== minor && wanted !== entry.kube)) {
        const known = Object.values(table.versions).map((v) => v.kube).join(", ");
        throw new Error(`${VERSION_ENV}=${requested}: the test bed has no such Kubernetes version; use one of ${known} (or its minor, e.g. 1.37), listed in test/testbed/versions.json`);
    }
    return { minor, kube: entry.kube, etcd: entry.etcd };
}

export function cacheRoot(): string {
    return process.env.CIDR_MIGRATION_CACHE ?? path.join(os.homedir(), ".cache", "cidr-migration");
}

/** minor as a number, for version-dependent flags: 1.37 → 37 */
export function minorNumber(version: TestBedVersion = resolveTestBedVersion()): number {
    return Number(version.minor.split(".")[1]);
}

/**
 * Feature gates of a test-bed cluster prepared for a Service range move: a 1.33 cluster needs
 * DisableAllocatorDualWrite=true first (preflight SERVICE_ALLOCATOR_DUAL_WRITE). The mirror pods preflight reads
 * show them, and the apiserver gets them at the move's restart; it starts without them, as a 1.33 cluster does, so
 * the legacy bitmap holds the old range, as on a real one.
 */
export function apiserverFeatureGates(version: TestBedVersion = resolveTestBedVersion()): string | undefined {
  return minorNumber(version) === 33 ? `${DUAL_WRITE_GATE}=true` : undefined;
}
