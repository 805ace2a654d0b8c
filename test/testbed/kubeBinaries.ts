// Where the test bed finds kube-apiserver and kube-controller-manager v1.20.2:
// KUBEBUILDER_ASSETS (the envtest convention) first, else the cache that
// test/testbed/install.sh fills by building Debian's kubernetes source once.
import * as fs from "fs";
import * as os from "os";
import * as path from "path";

export const KUBE_VERSION = "1.20.2";

export interface KubeBinaries { apiserver: string; controllerManager: string; }

export function cacheRoot(): string {
    return process.env.CIDR_MIGRATION_CACHE ?? path.join(os.homedir(), ".cache", "cidr-migration");
}

export function cachedKubeBinDir(): string {
    return path.join(cacheRoot(), `kube-${KUBE_VERSION}`, "bin");
}

function executable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

/** envtest assets ship kube-apiserver but usually no kube-controller-manager: each binary is looked up on its own. */
function findBinary(name: string): string | undefined {
    const dirs = [process.env.KUBEBUILDER_ASSETS, cachedKubeBinDir()].filter((dir): dir is string => !!dir);
    return dirs.map((dir) => path.join(dir, name)).find(executable);
}

export function resolveKubeBinaries(): KubeBinaries {
    const apiserver = findBinary("kube-apiserver");
    const controllerManager = findBinary("kube-controller-manager");
    const missing = [apiserver ? undefined : "kube-apiserver", controllerManager ? undefined : "kube-controller-manager"]
        .filter((name): name is string => !!name);
    if (!apiserver || !controllerManager) {
        const searched = [process.env.KUBEBUILDER_ASSETS ? `KUBEBUILDER_ASSETS=${process.env.KUBEBUILDER_ASSETS}` : undefined, cachedKubeBinDir()]
            .filter(Boolean).join(" and ");
        throw new Error(`test bed: ${missing.join(" and ")} not found in ${searched}: run test/testbed/install.sh (as root) to build them once, or set KUBEBUILDER_ASSETS to a directory holding them`);
    }
    return { apiserver, controllerManager };
}
