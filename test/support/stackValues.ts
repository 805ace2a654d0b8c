/** A complete, valid stack config for a three-control-plane Calico cluster, as the validator receives it. */
export function baseValues(): Record<string, unknown> {
  return {
    serviceCidr: { from: "10.96.0.0/12", to: "10.112.0.0/12" },
    podCidr: { from: "10.244.0.0/16", to: "10.48.0.0/16", nodeMaskSize: 24 },
    cni: "calico",
    kubeconfig: "/etc/kubernetes/admin.conf",
    etcd: { endpoints: ["https://10.0.0.11:2379"], caCert: { secure: "v1:ca" }, cert: { secure: "v1:c" }, key: { secure: "v1:k" } },
    nodes: [
      { name: "cp-1", host: "10.0.0.11", role: "control-plane" },
      { name: "cp-2", host: "10.0.0.12", role: "control-plane" },
      { name: "cp-3", host: "10.0.0.13", role: "control-plane" },
      { name: "worker-1", host: "10.0.0.21", role: "worker" },
    ],
    ssh: { user: "ubuntu", privateKey: { secure: "v1:key" } },
  };
}
