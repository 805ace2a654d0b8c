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
 *
 * Dual-stack (issue 17): `network` may be a pair, comma-separated; the IPv6 range goes to `IPv6Network`, which the
 * config must have already (adding the IPv6 family to flannel is refused, naming what to set by hand).
 */
import { newPodRange } from "./newPodRange";
import { familyOf } from "../net/cidr";
import { isRangeList } from "../net/rangeList";
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
  const ranges = network.split(",").map((range) => newPodRange(range, source, "Network"));
  if (!isRangeList(ranges.join(","))) throw new UserError(`${source}: Network "${network}" is neither one range nor a dual-stack pair of one IPv4 and one IPv6 range`);
  const v4 = ranges.find((range) => familyOf(range) === "IPv4");
  const v6 = ranges.find((range) => familyOf(range) === "IPv6");
  if (!v4) throw new UserError(`${source}: no IPv4 range in "${network}"; flannel's Network is IPv4 (an IPv6-only flannel is not supported)`);
  const before = readFlannelNetwork(netConfJson, source);
  const current = JSON.parse(netConfJson) as Record<string, unknown>;
  if (v6 && typeof current.IPv6Network !== "string") {
    throw new UserError(`${source}: has no "IPv6Network" for ${v6}; flannel serves IPv6 only once EnableIPv6 and IPv6Network are set (and its nodes forward IPv6), which a run adding the IPv6 family does not do yet: set them by hand first`);
  }
  let text: string;
  try {
    text = editMapScalars(netConfJson, source, [{ path: ["Network"], value: v4 }, ...(v6 ? [{ path: ["IPv6Network"], value: v6 }] : [])]).text;
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
  const expected = { ...current, Network: v4, ...(v6 ? { IPv6Network: v6 } : {}) };
  if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(expected)) {
    throw new UserError(`${source}: internal check failed, the edited JSON does not read back as intended; edit it by hand and report this`);
  }
  return { text, changed: text !== netConfJson, before };
}
