import { normalizeCidr } from "../net/cidr";
import { Finding } from "../report/findings";
import { DEFAULT_SERVICE_CIDR } from "../serviceMove/serviceCidrs";
import { rangeLists } from "../config/rangeLists";
import { LeftoverTest } from "./leftovers";
import { RangeVerifyInput } from "./verifyInput";

/**
 * The ServiceCIDR API (1.33+) after the move: the default ServiceCIDR holds exactly the new range, and no
 * ServiceCIDR or IPAddress object is left in the old one. Nothing to check where the API is not served.
 */
export function verifyServiceCidrs(input: RangeVerifyInput): Finding[] {
  const { config, inventory, cluster } = input;
  if (!inventory.serviceCidrs) return [];
  const findings: Finding[] = [];
  const ranges = rangeLists(config).service;
  const leftover = new LeftoverTest(ranges.from, ranges.to);
  const wanted = ranges.to.split(",").map(normalizeCidr);

  const byName = new Map(inventory.serviceCidrs.map((c) => [c.name, c]));
  const current = byName.get(DEFAULT_SERVICE_CIDR);
  if (!current) {
    findings.push({
      code: "DEFAULT_SERVICE_CIDR_MISSING",
      severity: "blocker",
      object: `ServiceCIDR ${DEFAULT_SERVICE_CIDR}`,
      message: `the default ServiceCIDR does not exist, so no Service gets an address from ${ranges.to} by default`,
      action: "check that every kube-apiserver runs with the new --service-cluster-ip-range: it re-creates the default ServiceCIDR from that flag once the old one is gone",
    });
  } else {
    const cidrs = current.cidrs.map(normalizeCidr);
    if (current.terminating || cidrs.length !== wanted.length || cidrs.some((c, i) => c !== wanted[i])) {
      findings.push({
        code: "DEFAULT_SERVICE_CIDR_NOT_NEW_RANGE",
        severity: "blocker",
        object: `ServiceCIDR ${DEFAULT_SERVICE_CIDR}`,
        path: "spec.cidrs",
        message: `the default ServiceCIDR holds ${cidrs.join(",") || "nothing"}${current.terminating ? " and is Terminating" : ""}, not the new range ${wanted.join(",")}`,
        action: "run `pulumi up` again to finish the service-cidr-close step; it names the Services that still hold old addresses",
      });
    }
  }
  for (const serviceCidr of inventory.serviceCidrs) {
    const old = serviceCidr.cidrs.filter((c) => leftover.cidr(c));
    if (old.length === 0 || serviceCidr.name === DEFAULT_SERVICE_CIDR) continue;
    findings.push({
      code: "SERVICE_CIDR_IN_OLD_RANGE",
      severity: "blocker",
      object: `ServiceCIDR ${serviceCidr.name}`,
      path: "spec.cidrs",
      message: `ServiceCIDR ${serviceCidr.name} still offers ${old.join(",")}, inside the old Service range ${ranges.from}`,
      action: `delete it once no Service holds an address in it: kubectl delete servicecidr ${serviceCidr.name}`,
    });
  }
  for (const address of cluster.ipAddresses) {
    const ip = address.metadata.name;
    if (!leftover.address(ip)) continue;
    const parent = address.spec?.parentRef;
    const holder = parent ? `${parent.resource ?? "?"} ${parent.namespace ? `${parent.namespace}/` : ""}${parent.name ?? "?"}` : "no parentRef";
    findings.push({
      code: "IPADDRESS_IN_OLD_RANGE",
      severity: "blocker",
      object: `IPAddress ${ip}`,
      message: `IPAddress ${ip} (held by ${holder}) is still allocated in the old Service range ${ranges.from}`,
      action: "run `pulumi up` again to finish the Service moves; an IPAddress with no Service is removed by the apiserver's repair loop within about a minute",
    });
  }
  return findings;
}
