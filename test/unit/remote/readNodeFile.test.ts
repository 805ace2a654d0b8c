/** lib/remote/scripts/readFile readNodeFile: the one decoder of a read step's output. */
import { strict as assert } from "assert";
import { readNodeFile } from "../../../lib/remote/scripts/readFile";

describe("readNodeFile", () => {
  const where = { node: "cp-1", path: "/etc/kubernetes/manifests/kube-apiserver.yaml", step: "read" };

  it("gives back the exact bytes, CRLF and a missing final newline kept", () => {
    const text = "apiVersion: v1\r\nkind: Pod\r\nspec: {}";
    assert.equal(readNodeFile(`${Buffer.from(text).toString("base64")}\n`, where), text);
  });

  it("refuses an empty read and anything that is not one line of base64, naming node, file and step", () => {
    for (const stdout of ["", "\n", "cat: /etc/kubernetes/manifests/kube-apiserver.yaml: No such file", "aGVsbG8=\naGVsbG8="]) {
      assert.throws(() => readNodeFile(stdout, where), /^Error: node cp-1: reading \/etc\/kubernetes\/manifests\/kube-apiserver\.yaml returned no base64 content; check the read step's output$/);
    }
  });
});
