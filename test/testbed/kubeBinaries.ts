// Where the test bed finds its Kubernetes and etcd binaries for the version CIDR_MIGRATION_KUBE_VERSION picks:
// KUBEBUILDER_ASSETS (the envtest convention) first, else the cache that test/testbed/install.sh fills (built from
// the Go module proxy).
import * as fs from "fs";
import * as path from "path";
import { cacheRoot, resolveTestBedVersion, TestBedVersion } from "./kubeVersion";

export interface KubeBinaries { apiserver: string; controllerManager: string; }

export function cachedKubeBinDir(version: TestBedVersion = resolveTestBedVersion()): string {
    return path.join(cacheRoot(), `kube-${version.kube}`, "bin");
}

export function cachedEtcdBinDir(version: TestBedVersion = resolveTestBedVersion()): string {
    return path.join(cacheRoot(), `etcd-${version.etcd}`, "bin");
}

function executable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

function searchedDirs(): string[] {
    return [process.env.KUBEBUILDER_ASSETS, cachedKubeBinDir()].filter((dir): dir is string => !!dir);
}

/** envtest assets ship kube-apiserver but usually no kube-controller-manager: each binary is looked up on its own. */
export function findKubeBinary(name: string): string | undefined {
    return searchedDirs().map((dir) => path.join(dir, name)).find(executable);
}

function missingError(missing: string[]): Error {
    const version = resolveTestBedVersion();
    const searched = [process.env.KUBEBUILDER_ASSETS ? `KUBEBUILDER_ASSETS=${process.env.KUBEBUILDER_ASSETS}` : undefined, cachedKubeBinDir()]
        .filter(Boolean).join(" and ");
    return new Error(`test bed: ${missing.join(" and ")} ${version.kube} not found in ${searched}: run test/testbed/install.sh (as root; CIDR_MIGRATION_KUBE_VERSION=${version.minor}) to build them once, or set KUBEBUILDER_ASSETS to a directory holding them`);
}

export function requireKubeBinary(name: string): string {
    const found = findKubeBinary(name);
    if (!found) throw missingError([name]);
    return found;
}

export function resolveKubeBinaries(): KubeBinaries {
    const apiserver = findKubeBinary("kube-apiserver");
    const controllerManager = findKubeBinary("kube-controller-manager");
    const missing = [apiserver ? undefined : "kube-apiserver", controllerManager ? undefined : "kube-controller-manager"]
        .filter((name): name is string => !!name);
    if (!apiserver || !controllerManager) throw missingError(missing);
    return { apiserver, controllerManager };
}

/** etcd, etcdctl or etcdutl of the etcd paired with the test-bed version; CIDR_MIGRATION_ETCD overrides etcd itself. */
export function etcdBinary(name: "etcd" | "etcdctl" | "etcdutl" = "etcd"): string {
    if (name === "etcd" && process.env.CIDR_MIGRATION_ETCD) return process.env.CIDR_MIGRATION_ETCD;
    return path.join(cachedEtcdBinDir(), name);
}

/** The command for `snapshot status|restore`: etcdutl (3.6's etcdctl has neither). */
export function snapshotTool(): string {
    return etcdBinary("etcdutl");
}
