// What a control-plane node's address change cannot run with, refused before any change (issue 16).
import { strict as assert } from "assert";
import { UserError } from "../../../lib/config/errors";
import { endpointHost } from "../../../lib/net/cidr";
import { controlPlaneAddressProblems, refuseControlPlaneAddressProblems } from "../../../lib/plan/controlPlaneAddressRefusals";

const change = { name: "cp-2", from: "192.168.1.12", to: "192.168.7.12", role: "control-plane" as const, prefix: 24 };
const clusterConfiguration = (endpoint: string) => `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncontrolPlaneEndpoint: ${endpoint}\n`;
const ok = { clusterConfiguration: clusterConfiguration("cp.example:6443"), kubeconfigServer: "https://192.168.1.11:6443", etcdEndpoints: ["https://192.168.1.11:2379", "https://192.168.1.12:2379"], controlPlaneNodes: 3 };

describe("lib/plan controlPlaneAddressRefusals", () => {
  it("accepts a node that no cluster-wide endpoint depends on, on a cluster of three control-plane nodes", () => {
    assert.deepEqual(controlPlaneAddressProblems([change], ok), []);
    assert.deepEqual(controlPlaneAddressProblems([], { ...ok, controlPlaneNodes: 1 }), [], "no control-plane change, nothing to refuse");
  });

  it("refuses each reference the node's own steps cannot move, naming it and what to do", () => {
    const problems = controlPlaneAddressProblems([change], {
      clusterConfiguration: clusterConfiguration("192.168.1.12:6443"),
      kubeconfigServer: "https://192.168.1.12:6443",
      etcdEndpoints: ["https://192.168.1.12:2379"],
      controlPlaneNodes: 3,
    });
    assert.equal(problems.length, 3, problems.join("\n"));
    assert.match(problems[0], /cp-2's old address 192\.168\.1\.12 is the cluster's controlPlaneEndpoint \(192\.168\.1\.12:6443 in kube-system\/kubeadm-config\).*put the endpoint on a load balancer or DNS name first/);
    assert.match(problems[1], /^cidr-migration:kubeconfig: its server https:\/\/192\.168\.1\.12:6443 is cp-2's old address.*point the kubeconfig at another control-plane node/);
    assert.match(problems[2], /^cidr-migration:etcd\.endpoints: every endpoint \(https:\/\/192\.168\.1\.12:2379\) is on cp-2's old address.*list another member's client URL too/);
  });

  it("refuses a cluster of fewer than three control-plane nodes", () => {
    assert.throws(() => refuseControlPlaneAddressProblems([change], { ...ok, controlPlaneNodes: 1 }),
      (err: Error) => err instanceof UserError && /cp-2 is a control-plane node of a cluster with 1: its etcd cannot keep quorum.*\nNothing was changed\.$/.test(err.message));
  });

  it("reads endpoint hosts in every form kubeadm and etcd write them", () => {
    assert.equal(endpointHost("192.168.1.12:6443"), "192.168.1.12");
    assert.equal(endpointHost("[FD00::12]:6443"), "fd00::12");
    assert.equal(endpointHost("https://[fd00::12]:2379"), "fd00::12");
    assert.equal(endpointHost("cp.example:6443"), undefined);
  });
});
