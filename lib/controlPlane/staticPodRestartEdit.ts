/**
 * A static pod's manifest marked with the address its node now has (issue 16): the edit that restarts the
 * controller-manager and the scheduler of a control-plane node whose address moved, although nothing else in their
 * manifests names the address.
 *
 * Why an edit, not the manifest moved out and back: the kubelet derives a static pod's UID from its manifest, so
 * the same manifest put back re-adds the pod under the UID it just terminated, and the kubelet does not reliably
 * make that pod's mirror again (kubernetes/kubernetes#116725; on the node lab the scheduler's mirror pod was gone
 * after such a restart). A changed manifest is a new pod with a new UID, as `kubeadm upgrade` restarts one; as a new
 * pod it takes the Node's new address (a running host-network pod keeps the one it started with).
 *
 * API: `markNodeAddress(text, what, to)` → the manifest with `metadata.annotations["cidr-migration.io/node-address"]`
 * set to `to`, or undefined when it already says so (a re-run). Lossless: an existing annotations mapping gets the
 * key (lib/yaml editMapScalars); without one, an `annotations:` block is inserted where the parser says the
 * metadata mapping ends, indented like its keys. The result must read back as the input with exactly that
 * annotation added (fail closed). Errors: YamlEditError, one line naming `what`.
 */
import { isMap, isScalar, Scalar, YAMLMap } from "yaml";
import { parseSingleDocument, YamlEditError } from "../yaml/yamlCstEdit";
import { editMapScalars } from "../yaml/yamlMapEdit";

export const NODE_ADDRESS_ANNOTATION = "cidr-migration.io/node-address";

const PATH = ["metadata", "annotations", NODE_ADDRESS_ANNOTATION];

export function markNodeAddress(text: string, what: string, to: string): string | undefined {
  const { doc } = parseSingleDocument(text, what);
  const metadata = isMap(doc.contents) ? doc.get("metadata", true) : undefined;
  if (!isMap(metadata) || metadata.items.length === 0 || !metadata.range) throw new YamlEditError(`${what}: no metadata mapping; this is not a static pod's manifest`);
  if (doc.getIn(PATH) === to) return undefined;
  const expected = doc.toJS() as { metadata: { annotations?: Record<string, string> } };
  expected.metadata.annotations = { ...expected.metadata.annotations, [NODE_ADDRESS_ANNOTATION]: to };
  const edited = metadata.has("annotations")
    ? editMapScalars(text, what, [{ path: PATH, value: to, createMissing: true }]).text
    : withAnnotationsBlock(text, metadata, to, what);
  if (JSON.stringify(parseSingleDocument(edited, what).doc.toJS()) !== JSON.stringify(expected)) {
    throw new YamlEditError(`${what}: internal check failed, the marked manifest does not read back as intended; restart the component by hand and report this`);
  }
  return edited;
}

function withAnnotationsBlock(text: string, metadata: YAMLMap, to: string, what: string): string {
  const firstKey = metadata.items[0].key;
  if (!isScalar(firstKey) || !(firstKey as Scalar).range) throw new YamlEditError(`${what}: cannot find where metadata's keys start; add the annotation by hand`);
  const keyStart = (firstKey as Scalar).range![0];
  const indent = " ".repeat(keyStart - (text.lastIndexOf("\n", keyStart - 1) + 1));
  const end = metadata.range![1];
  const before = text.slice(0, end);
  const block = `${indent}annotations:\n${indent}  ${NODE_ADDRESS_ANNOTATION}: ${JSON.stringify(to)}\n`;
  return `${before}${before.endsWith("\n") ? "" : "\n"}${block}${text.slice(end)}`;
}
