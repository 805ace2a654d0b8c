import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse } from "yaml";
import { markNodeAddress, NODE_ADDRESS_ANNOTATION } from "../../../lib/controlPlane/staticPodRestartEdit";

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "..", "..", "fixtures", "manifests", name), "utf8");

describe("lib/controlPlane markNodeAddress (a static pod restarted as a new pod after its node's address moved)", () => {
  for (const name of ["v1.29-single-cp-kube-controller-manager.yaml", "v1.32-kind-kube-controller-manager-20.20.yaml", "v1.29-single-cp-etcd.yaml", "etcd-existing-member-4space-indent-deckhouse.yaml"]) {
    it(`${name}: only the annotation is added, every other line kept; a second mark changes nothing`, () => {
      const text = fixture(name);
      const marked = markNodeAddress(text, name, "192.168.7.5")!;
      const before = parse(text);
      const after = parse(marked);
      assert.equal(after.metadata.annotations[NODE_ADDRESS_ANNOTATION], "192.168.7.5");
      delete after.metadata.annotations[NODE_ADDRESS_ANNOTATION];
      if (Object.keys(after.metadata.annotations).length === 0) delete after.metadata.annotations;
      assert.deepEqual(after, before, "nothing else changed, values and types alike");
      const keptLines = text.split("\n").filter((l) => !marked.split("\n").includes(l));
      assert.deepEqual(keptLines, [], "every line of the manifest is still there, unfolded");
      assert.equal(markNodeAddress(marked, name, "192.168.7.5"), undefined);
      assert.equal(parse(markNodeAddress(marked, name, "fd00:7::5")!).metadata.annotations[NODE_ADDRESS_ANNOTATION], "fd00:7::5");
    });
  }

  it("refuses a text that is not a pod manifest, naming it", () => {
    assert.throws(() => markNodeAddress("- a\n- b\n", "/etc/kubernetes/manifests/x.yaml", "10.0.0.1"), /x\.yaml: no metadata mapping/);
  });
});
