/**
 * Real-world config texts for the lossless-edit tests (test/unit/controlPlane and test/unit/podNetwork), loaded
 * once from test/fixtures, and the line diff that checks an edit changed only the edited value.
 */
import { strict as assert } from "assert";
import * as fs from "fs";
import * as path from "path";
import { parse, parseAllDocuments } from "yaml";

const FIXTURES = path.join(__dirname, "..", "fixtures");
export const read = (...parts: string[]) => fs.readFileSync(path.join(FIXTURES, ...parts), "utf8");
export const KUBE_PROXY_CONF: string = parse(read("testbed", "kube-proxy-cm-trimmed-clustercidr.yaml")).data["config.conf"];
export const CLUSTER_CONFIGURATION: string = parse(read("testbed", "kubeadm-config-cm-v1beta3-v1.28.yaml")).data.ClusterConfiguration;
const FLANNEL_CM = parseAllDocuments(read("components", "kube-flannel-official-manifest-with-kube-flannel-cfg.yml"))
  .map((d) => d.toJS())
  .find((o) => o?.kind === "ConfigMap" && o.metadata?.name === "kube-flannel-cfg");
export const NET_CONF: string = FLANNEL_CM.data["net-conf.json"];
export const CILIUM_DATA: Record<string, string> = parse(read("components", "cilium-config-v1.11-ipam-kubernetes-rendered.yaml")).data;

/** Lines of `after` that are not in `before` and vice versa (a minimal check that nothing else moved). */
export function lineDiff(before: string, after: string): { removed: string[]; added: string[] } {
  const a = before.split("\n");
  const b = after.split("\n");
  assert.equal(a.length === b.length || Math.abs(a.length - b.length) <= 1, true, "line count changed by more than one");
  const removed = a.filter((line, i) => b[i] !== line);
  const added = b.filter((line, i) => a[i] !== line);
  return { removed, added };
}
