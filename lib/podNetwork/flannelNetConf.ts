/**
 * Flannel's cluster range: `Network` in the `net-conf.json` key of the kube-flannel-cfg ConfigMap
 * (namespace kube-flannel in current manifests, kube-system in older ones).
 *
 * Why it matters: flanneld (with --kube-subnet-mgr) checks each Node's podCIDR against Network at start and
 * masquerades traffic leaving it; it reads the file only at start, so the DaemonSet is restarted afterwards.
 *
 * API: `setFlannelNetwork(netConfJson, network, source?)` → `{ text, changed, before }`. The JSON is edited in
 * place through the YAML CST (JSON is YAML), so its layout, key order and other settings stay byte-identical;
 * the result is checked with JSON.parse to equal the input with only Network changed. Refused: invalid JSON,
 * no "Network" key (an IPv6-only flannel), a Network that is not a string.
 */
import { newPodRange } from "./newPodRange";
import { UserError } from "../config/errors";
import { YamlEditError } from "../yaml/yamlCstEdit";
import { editMapScalars } from "../yaml/yamlMapEdit";

export const FLANNEL_NET_CONF_KEY = "net-conf.json";

export interface FlannelNetworkEdit {
  text: string;
  changed: boolean;
  before: string;
}

export function readFlannelNetwork(netConfJson: string, source = "kube-flannel-cfg net-conf.json"): string {
  let conf: unknown;
  try {
    conf = JSON.parse(netConfJson);
  } catch (error) {
    throw new UserError(`${source}: not valid JSON (${(error as Error).message}); fix the ConfigMap first`);
  }
  const network = (conf as { Network?: unknown } | null)?.Network;
  if (typeof conf !== "object" || conf === null || typeof network !== "string") {
    throw new UserError(`${source}: no "Network" string; an IPv4 flannel config needs one (e.g. "Network": "10.244.0.0/16")`);
  }
  return network;
}

export function setFlannelNetwork(netConfJson: string, network: string, source = "kube-flannel-cfg net-conf.json"): FlannelNetworkEdit {
  const cidr = newPodRange(network, source, "Network");
  const before = readFlannelNetwork(netConfJson, source);
  let text: string;
  try {
    text = editMapScalars(netConfJson, source, [{ path: ["Network"], value: cidr }]).text;
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
  const expected = { ...JSON.parse(netConfJson), Network: cidr };
  if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(expected)) {
    throw new UserError(`${source}: internal check failed, the edited JSON does not read back as intended; edit it by hand and report this`);
  }
  return { text, changed: text !== netConfJson, before };
}
