import { familyOf } from "../net/cidr";
import { ADDRESS_PERSISTENCE } from "../remote/scripts/nodeAddressChange";
import { Reader, setCommand, show } from "./configReader";
import { HostAddressSettings, NodeAddressChange } from "./migrationConfig";

/**
 * hostAddress (issue 16): how each node's own address is changed when nodeAddresses lists it: `persistence` (netplan,
 * nmcli, an operator's `hookPath` script, or none: the live address only), the interface's `prefix` length (an entry's
 * own `prefix` wins) and, when the old address does not name it, the `interface`. Needed with nodeAddresses (a plan
 * alone may leave it out);
 * never guessed: a wrong persistence or prefix would give the node an address a reboot loses or a subnet it cannot use.
 */
const KEYS = ["persistence", "prefix", "hookPath", "interface"];
const EXAMPLE = "'{\"persistence\": \"netplan\", \"prefix\": 24}'";

export function readHostAddress(r: Reader, changes: NodeAddressChange[], planOnly = false): { settings?: HostAddressSettings; changes: NodeAddressChange[] } {
  const raw = r.raw("hostAddress");
  if (changes.length === 0) {
    if (raw !== undefined && raw !== null) r.fail("hostAddress", "is set but nodeAddresses lists no node; remove hostAddress, or list the nodes whose address changes");
    return { changes };
  }
  // a plan shows the order and the references; only a run needs to know how the hosts change
  if ((raw === undefined || raw === null) && planOnly) return { changes };
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    r.fail("hostAddress", `is required with nodeAddresses: say how each node's address is made to stick (persistence netplan, nmcli, hook or none) and its prefix length, e.g. pulumi config set --path --json hostAddress ${EXAMPLE}`);
    return { changes };
  }
  const e = raw as Record<string, unknown>;
  r.unknownKeys("hostAddress", e, KEYS);
  const persistence = typeof e.persistence === "string" && (ADDRESS_PERSISTENCE as readonly string[]).includes(e.persistence)
    ? e.persistence as HostAddressSettings["persistence"]
    : undefined;
  if (!persistence) r.fail("hostAddress.persistence", `${show(e.persistence)} is not one of ${ADDRESS_PERSISTENCE.join(", ")}; choose how the nodes keep their address across a reboot, e.g. ${setCommand("hostAddress.persistence", "netplan")}`);
  const prefix = e.prefix === undefined ? undefined : r.integer("hostAddress.prefix", e.prefix, { min: 1, max: 128, fallback: 0 }) || undefined;
  const hookPath = r.string("hostAddress.hookPath", e.hookPath, { required: persistence === "hook", example: "/usr/local/sbin/change-address" });
  if (hookPath !== undefined && !hookPath.startsWith("/")) r.fail("hostAddress.hookPath", `${show(hookPath)} is not an absolute path on the nodes`);
  const iface = r.string("hostAddress.interface", e.interface, { required: false, example: "eth0" });
  const resolved = changes.map((c, i) => {
    const own = c.prefix ?? prefix;
    const bits = familyOf(c.to) === "IPv4" ? 32 : 128;
    if (own === undefined) r.fail(`nodeAddresses[${i}].prefix`, `${c.name}'s interface prefix length is not known: set hostAddress.prefix, or this entry's prefix (e.g. ${bits === 32 ? 24 : 64})`);
    else if (own > bits) r.fail(`nodeAddresses[${i}].prefix`, `${own} is too long for ${c.name}'s ${familyOf(c.to)} address ${c.to}; give at most ${bits}`);
    return own === undefined ? c : { ...c, prefix: own };
  });
  if (!persistence) return { changes: resolved };
  return { settings: { persistence, ...(hookPath ? { hookPath } : {}), ...(iface ? { interface: iface } : {}) }, changes: resolved };
}
