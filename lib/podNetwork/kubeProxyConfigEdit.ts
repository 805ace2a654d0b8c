/**
 * kube-proxy's `clusterCIDR`, edited in the `config.conf` text of the kube-system/kube-proxy ConfigMap.
 *
 * Why it matters: kube-proxy uses clusterCIDR to tell pod traffic from outside traffic (masquerading, the
 * "local traffic detector"); left on the old range, traffic from pods in the new range is treated as external.
 *
 * API: `setKubeProxyClusterCidr(configConf, clusterCidr, source?)` → `{ text, changed, before }`.
 * The text must be a KubeProxyConfiguration; only the clusterCIDR value changes (lib/yaml/yamlMapEdit, lossless), and
 * the key is added when kubeadm left it out. The CIDR is normalized first, so "10.48.0.1/16" is refused; a
 * dual-stack pair is written comma-separated (issue 17).
 * Errors are UserError, one line naming the ConfigMap key.
 */
import { newPodRange } from "./newPodRange";
import { isRangeList } from "../net/rangeList";
import { UserError } from "../config/errors";
import { YamlEditError } from "../yaml/yamlCstEdit";
import { editMapScalars, readMapScalar } from "../yaml/yamlMapEdit";

export const KUBE_PROXY_CONFIG_KEY = "config.conf";

export interface KubeProxyEdit {
  text: string;
  changed: boolean;
  /** clusterCIDR before the edit; undefined when the key was missing. */
  before?: string;
}

function asUserError<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof YamlEditError) throw new UserError(error.message);
    throw error;
  }
}

export function setKubeProxyClusterCidr(configConf: string, clusterCidr: string, source = "kube-system/kube-proxy config.conf"): KubeProxyEdit {
  // a dual-stack cluster lists both pod ranges, comma-separated, primary first, as kube-proxy reads them
  const cidr = clusterCidr.split(",").map((range) => newPodRange(range, source, "clusterCIDR")).join(",");
  if (!isRangeList(cidr)) throw new UserError(`${source}: clusterCIDR "${clusterCidr}" is neither one range nor a dual-stack pair of one IPv4 and one IPv6 range`);
  return asUserError(() => {
    const kind = readMapScalar(configConf, source, ["kind"]);
    if (kind !== "KubeProxyConfiguration") {
      throw new UserError(`${source}: kind is ${kind === undefined ? "missing" : `"${kind}"`}, not KubeProxyConfiguration; pass kube-proxy's config.conf`);
    }
    const before = readMapScalar(configConf, source, ["clusterCIDR"]);
    const edit = editMapScalars(configConf, source, [{ path: ["clusterCIDR"], value: cidr, createMissing: true }]);
    return { text: edit.text, changed: edit.text !== configConf, before };
  });
}
