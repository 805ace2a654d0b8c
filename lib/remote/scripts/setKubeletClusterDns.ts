/**
 * setKubeletClusterDns: point a node's kubelet at the moved DNS Service (issue 7, step 6), in
 * /var/lib/kubelet/config.yaml.
 *
 * Nodes may have neither node nor python, and a YAML edit must not be a sed. So the edit is split:
 * 1. the caller reads the file over SSH (lib/remote/scripts/readFile: base64 of the exact bytes);
 * 2. `editKubeletClusterDns(text, clusterDns)` edits it here, YAML-aware and lossless (lib/yaml/yamlCstEdit): only the
 *    clusterDNS items change; comments, quoting and the order of keys stay;
 * 3. `setKubeletClusterDns({ configPath, currentContent, clusterDns, backupDir })` returns the checked write
 *    (lib/remote/scripts/writeManifest) of the edited text: it refuses if the file changed after step 1, backs the file up,
 *    and is a no-op once the file is right. The kubelet reads config.yaml at start: restart it afterwards
 *    (the rollout restarts it anyway when the node re-registers).
 *
 * API:
 * - `editKubeletClusterDns(text, clusterDns, source?)` → `{ text, changed, before }` (before = old clusterDNS).
 * - `setKubeletClusterDns(input)` → `{ script, changed, newContent }`.
 * Errors (UserError, one line): not a KubeletConfiguration, no clusterDNS list (a kubelet without cluster DNS has
 * nothing to move), an entry that is not an IP address.
 */
import { Scalar, YAMLMap, YAMLSeq, isMap, isScalar, isSeq } from "yaml";
import { isIpAddress, normalizeIp } from "../../net/cidr";
import { UserError } from "../../config/errors";
import { SandboxRoot } from "../remoteScript";
import { appendSeqScalar, parseSingleDocument, removeSeqScalar, renderTokens, setSeqScalar, YamlEditError } from "../../yaml/yamlCstEdit";
import { writeFileChecked } from "./writeManifest";

export interface KubeletDnsEdit {
  text: string;
  changed: boolean;
  before: string[];
}

export function editKubeletClusterDns(text: string, clusterDns: readonly string[], source = "/var/lib/kubelet/config.yaml"): KubeletDnsEdit {
  if (clusterDns.length === 0) throw new UserError(`clusterDns is empty; pass the new DNS Service IP(s) for ${source}`);
  const wanted = clusterDns.map((ip, i) => {
    if (!isIpAddress(ip)) throw new UserError(`clusterDns[${i}] "${ip}" is not an IP address; pass the DNS Service's clusterIP`);
    return normalizeIp(ip);
  });
  let parsed;
  try {
    parsed = parseSingleDocument(text, source);
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
  const root = parsed.doc.contents;
  if (!isMap(root) || (root as YAMLMap).get("kind") !== "KubeletConfiguration") {
    throw new UserError(`${source}: not a KubeletConfiguration (kind: ${isMap(root) ? String((root as YAMLMap).get("kind")) : "none"}); pass the kubelet's config.yaml`);
  }
  const list = (root as YAMLMap).get("clusterDNS", true);
  if (!isSeq(list) || !(list as YAMLSeq).items.every(isScalar) || (list as YAMLSeq).items.length === 0) {
    throw new UserError(`${source}: no clusterDNS list; this kubelet runs without cluster DNS, so leave the node out of the DNS step`);
  }
  const seq = list as YAMLSeq;
  const items = seq.items as Scalar[];
  const before = items.map((i) => String(i.value));
  if (JSON.stringify(before) === JSON.stringify(wanted)) return { text, changed: false, before };

  // Reuse the existing items (and their style) in order; drop extras; append the rest after the last one.
  items.slice(0, wanted.length).forEach((item, i) => setSeqScalar(seq, item, wanted[i]));
  for (const extra of items.slice(wanted.length)) removeSeqScalar(seq, extra);
  const style = items[0].type === "QUOTE_SINGLE" || items[0].type === "QUOTE_DOUBLE" ? items[0].type : "PLAIN";
  for (const ip of wanted.slice(items.length)) appendSeqScalar(seq, ip, { type: style, newline: parsed.newline });
  return { text: renderTokens(parsed.tokens), changed: true, before };
}

export interface SetKubeletClusterDnsInput extends SandboxRoot {
  configPath?: string;
  /** config.yaml as read from the node (readFile), the base of the edit. */
  currentContent: string;
  clusterDns: readonly string[];
  backupDir: string;
}

export interface SetKubeletClusterDnsResult {
  script: string;
  changed: boolean;
  newContent: string;
}

export function setKubeletClusterDns(input: SetKubeletClusterDnsInput): SetKubeletClusterDnsResult {
  const configPath = input.configPath ?? "/var/lib/kubelet/config.yaml";
  const edit = editKubeletClusterDns(input.currentContent, input.clusterDns, configPath);
  const script = writeFileChecked({
    path: configPath,
    currentContent: input.currentContent,
    newContent: edit.text,
    backupDir: input.backupDir,
    root: input.root,
  });
  return { script, changed: edit.changed, newContent: edit.text };
}
