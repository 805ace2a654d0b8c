import { UserError } from "../config/errors";
import { cidrContains, familyOf, isIpAddress, parseCidr } from "../net/cidr";
import { ServiceMove } from "./planModel";

/**
 * Pure: services.moveInPlace gives every in-place move a temporary stand-in Service at a free address of the new
 * range (lib/serviceMove/inPlace pickStandInIps: never the network, broadcast or first address, never a planned
 * one). A range too small for them is refused here, before any change, rather than at the Service step.
 */
export function refuseWithoutStandInRoom(services: readonly ServiceMove[], newRanges: readonly string[]): void {
  const problems: string[] = [];
  for (const range of newRanges) {
    const inRange = (ip: string | undefined) => ip !== undefined && isIpAddress(ip) && familyOf(ip) === familyOf(range) && cidrContains(range, ip);
    const planned = services.flatMap((s) => s.newClusterIPs ?? [s.newClusterIP ?? s.oldClusterIP]).filter(inRange).length;
    const standIns = services.filter((s) => s.inPlace && inRange(s.newClusterIP)).length;
    const room = parseCidr(range).size - 3n - BigInt(planned);
    if (standIns > 0 && room < BigInt(standIns)) {
      problems.push(`services.moveInPlace: the new Service range ${range} has room for ${room > 0n ? room : 0n} temporary stand-in Service(s) beside its ${planned} planned address(es), and ${standIns} Service(s) move in place; set cidr-migration:services.moveInPlace to false (they are then re-created, each name absent from DNS for a moment) or plan a larger range`);
    }
  }
  if (problems.length > 0) throw new UserError(`${problems.join("\n")}\nNothing was changed.`);
}
