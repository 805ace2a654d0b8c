// moveNodeAddressInYaml on hand-written YAML: comments, quoting and flow style stay; keys are never edited; a
// lookalike address is not an occurrence; bad YAML is one line naming the file. Real kubeadm files:
// test/integration/nodeAddressFiles.test.ts.
import { strict as assert } from "assert";
import { moveNodeAddressInYaml } from "../../../lib/controlPlane/nodeAddressFileEdit";
import { YamlEditError } from "../../../lib/yaml/yamlCstEdit";

const TEXT = `# kept
metadata:
  annotations:
    example.com/endpoint: "10.0.0.5:6443"   # quoted
    10.0.0.5: a key, never edited
spec:
  args: [--advertise-address=10.0.0.5, "--etcd-servers=https://10.0.0.50:2379"]
  host: 10.0.0.5
  other: 110.0.0.5
`;

describe("moveNodeAddressInYaml (issue 16)", () => {
  it("moves every value naming the address, keeping comments, quotes and flow style; a second edit finds nothing", () => {
    const edited = moveNodeAddressInYaml(TEXT, "kube-apiserver.yaml", "10.0.0.5", "10.9.0.5");
    assert.equal(edited.text, TEXT.replace('"10.0.0.5:6443"', '"10.9.0.5:6443"').replace("--advertise-address=10.0.0.5", "--advertise-address=10.9.0.5").replace("host: 10.0.0.5", "host: 10.9.0.5"));
    assert.deepEqual(edited.changed, ["metadata.annotations.example.com/endpoint", "spec.args[0]", "spec.host"]);
    assert.deepEqual(moveNodeAddressInYaml(edited.text, "kube-apiserver.yaml", "10.0.0.5", "10.9.0.5"), { text: edited.text, changed: [] });
  });

  it("refuses a file that is not one YAML document, naming it", () => {
    assert.throws(() => moveNodeAddressInYaml("a: [1,\n", "etcd.yaml", "10.0.0.5", "10.9.0.5"), (e: Error) => e instanceof YamlEditError && /^etcd\.yaml: not valid YAML/.test(e.message));
    assert.throws(() => moveNodeAddressInYaml("a: 1\n---\nb: 2\n", "admin.conf", "10.0.0.5", "10.9.0.5"), /admin\.conf: expected exactly one YAML document, found 2/);
  });
});
