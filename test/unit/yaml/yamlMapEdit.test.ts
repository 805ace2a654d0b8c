/** lib/yaml/yamlMapEdit: lossless scalar edits in YAML mappings (the base of the ConfigMap text edits). */
import { strict as assert } from "assert";
import { YamlEditError } from "../../../lib/yaml/yamlCstEdit";
import { editMapScalars, readMapScalar } from "../../../lib/yaml/yamlMapEdit";

describe("yamlMapEdit: lossless scalar edits in mappings", () => {
  const text = "# head comment\nkind: Thing\nnet:\n  dns: x # keep me\n  svc: \"10.96.0.0/12\"\n  # trailing comment\nz: 'q'\n";

  it("updates a value in place, keeping quote style, comments and every other byte", () => {
    const result = editMapScalars(text, "t", [{ path: ["net", "svc"], value: "10.112.0.0/12" }]);
    assert.equal(result.text, text.replace('"10.96.0.0/12"', '"10.112.0.0/12"'));
    assert.deepEqual(result.changes, [{ path: "net.svc", action: "updated", before: "10.96.0.0/12", after: "10.112.0.0/12" }]);
  });

  it("adds a missing key after the mapping's last entry, indented like its siblings, only when asked", () => {
    assert.throws(() => editMapScalars(text, "t", [{ path: ["net", "pod"], value: "10.48.0.0/16" }]), /no net\.pod to set/);
    const result = editMapScalars(text, "t", [{ path: ["net", "pod"], value: "10.48.0.0/16", createMissing: true }]);
    assert.equal(result.text, text.replace('  svc: "10.96.0.0/12"\n', '  svc: "10.96.0.0/12"\n  pod: 10.48.0.0/16\n'));
    assert.equal(readMapScalar(result.text, "t", ["net", "pod"]), "10.48.0.0/16");
  });

  it("adds a key to a text without a final newline without adding one at the end", () => {
    const result = editMapScalars("a: 1\nb: 2", "t", [{ path: ["c"], value: "3", createMissing: true }]);
    assert.equal(result.text, "a: 1\nb: 2\nc: \"3\"");
  });

  it("is a no-op (same string) when the value is already right, so a re-run changes nothing", () => {
    const result = editMapScalars(text, "t", [{ path: ["net", "dns"], value: "x" }]);
    assert.equal(result.text, text);
    assert.equal(result.changes[0].action, "unchanged");
  });

  it("quotes values that would not read back as the same string", () => {
    const result = editMapScalars("a: b\n", "t", [{ path: ["a"], value: "true" }]);
    assert.equal(result.text, 'a: "true"\n');
  });

  it("refuses nested objects, block scalars and missing parents with a message naming the key", () => {
    assert.throws(() => editMapScalars(text, "cm", [{ path: ["net"], value: "x" }]), (e: Error) => e instanceof YamlEditError && /cm: net has no scalar value/.test(e.message));
    assert.throws(() => editMapScalars("a: |\n  x\n", "cm", [{ path: ["a"], value: "y" }]), /block scalar/);
    assert.throws(() => editMapScalars(text, "cm", [{ path: ["nope", "x"], value: "y" }]), /nope is not a mapping/);
  });

  it("edits JSON (a YAML flow mapping) in place", () => {
    const json = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {"Type": "vxlan"}\n}\n';
    assert.equal(editMapScalars(json, "j", [{ path: ["Network"], value: "10.48.0.0/16" }]).text, json.replace("10.244.0.0/16", "10.48.0.0/16"));
  });
});
