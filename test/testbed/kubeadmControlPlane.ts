// A control-plane node's files as the test bed's own kubeadm writes them: `kubeadm init phase certs all` and
// `kubeadm init phase control-plane all` (and any further phases asked for, e.g. `etcd local`, `kubeconfig all`)
// into a sandbox root (--rootfs), from a v1beta4 configuration on the old ranges. The ClusterConfiguration returned is kubeadm's own serialization of it (`kubeadm config migrate`), the
// text kubeadm-config holds on a cluster of this version.
import { execFileSync } from "child_process";
import * as fs from "fs";
import * as path from "path";
import { parseAllDocuments } from "yaml";
import { requireKubeBinary } from "./kubeBinaries";
import { resolveTestBedVersion } from "./kubeVersion";

export interface KubeadmNodeFiles {
    clusterConfiguration: string;
    apiserverManifest: string;
    controllerManagerManifest: string;
}

export function kubeadmControlPlane(root: string, opts: { nodeName: string; advertiseAddress: string; serviceSubnet: string; podSubnet: string; morePhases?: string[][] }): KubeadmNodeFiles {
    const kubeadm = requireKubeBinary("kubeadm");
    fs.mkdirSync(path.join(root, "etc/kubernetes"), { recursive: true });
    fs.mkdirSync(path.join(root, "tmp"), { recursive: true });
    const config = [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        "localAPIEndpoint:",
        `  advertiseAddress: ${opts.advertiseAddress}`,
        "  bindPort: 6443",
        "nodeRegistration:",
        `  name: ${opts.nodeName}`,
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        `kubernetesVersion: v${resolveTestBedVersion().kube}`,
        "networking:",
        `  serviceSubnet: ${opts.serviceSubnet}`,
        `  podSubnet: ${opts.podSubnet}`,
        "",
    ].join("\n");
    fs.writeFileSync(path.join(root, "tmp/kubeadm.yaml"), config);
    // --rootfs: kubeadm chroots there, so /etc/kubernetes and the config path are inside the sandbox
    for (const phase of [["certs", "all"], ["control-plane", "all"], ...(opts.morePhases ?? [])]) {
        execFileSync(kubeadm, ["init", "phase", ...phase, "--config", "/tmp/kubeadm.yaml", "--rootfs", root], { stdio: "pipe" });
    }
    execFileSync(kubeadm, ["config", "migrate", "--old-config", "/tmp/kubeadm.yaml", "--new-config", "/tmp/migrated.yaml", "--rootfs", root], { stdio: "pipe" });
    const migrated = parseAllDocuments(fs.readFileSync(path.join(root, "tmp/migrated.yaml"), "utf8"));
    const clusterDoc = migrated.find((d) => d.get("kind") === "ClusterConfiguration");
    if (!clusterDoc) throw new Error("kubeadm config migrate wrote no ClusterConfiguration");
    fs.rmSync(path.join(root, "tmp"), { recursive: true, force: true });
    const manifests = path.join(root, "etc/kubernetes/manifests");
    return {
        clusterConfiguration: clusterDoc.toString(),
        apiserverManifest: fs.readFileSync(path.join(manifests, "kube-apiserver.yaml"), "utf8"),
        controllerManagerManifest: fs.readFileSync(path.join(manifests, "kube-controller-manager.yaml"), "utf8"),
    };
}
