/**
 * nodeAddressChange: the host's own address change of a node IP move (issue 16), run on the drained node before
 * its kubelet re-registers with `--node-ip` set to the new address.
 *
 * Input: `{ from, to, prefix, persistence, hookPath?, interface?, phase? }` → one script.
 * - `from`, `to`: the node's old and new address, one family; `prefix`: the interface's prefix length (24).
 * - `interface`: the link holding `from`; found on the node when not given.
 * - `persistence`, so that a reboot keeps the new address, done before the live change:
 *   - "netplan": the `addresses` of the interface in netplan's own settings (`netplan get`/`netplan set`), the old
 *     entry replaced, every other entry kept;
 *   - "nmcli": the interface's NetworkManager connection: the old address removed, the new one added;
 *   - "hook": the operator's script at `hookPath`, run with OLD_IP, NEW_IP, PREFIX and INTERFACE in its
 *     environment; it must exit 0;
 *   - "none": the live address only (a lab, or a host whose address comes from elsewhere); the script says so.
 * - The live change: the new address added to the interface, then the old one removed. Routes through the old
 *   subnet are the network's business (the hook can do them); the script changes addresses only.
 * - `phase` splits the live change for a node reached over SSH at its old address (default "both": one go):
 *   - "add": persistence, then the new address added beside the old one, so the session that runs it lives on;
 *   - "remove-old": the old address removed, run over a session to the new one once nothing needs the old.
 *
 * A second run finds its work done and changes nothing: both phases, or "add" with the new address live already
 * (persistence comes first, so it is done too), or "remove-old" with the old address gone.
 */
import { familyOf, isIpAddress } from "../../net/cidr";
import { UserError } from "../../config/errors";
import { buildScript, sh, ShellCode } from "../remoteScript";
import { nodePath, oneOf } from "./inputs";

export type AddressPersistence = "netplan" | "nmcli" | "hook" | "none";
export type AddressChangePhase = "both" | "add" | "remove-old";
export const ADDRESS_PERSISTENCE: readonly AddressPersistence[] = ["netplan", "nmcli", "hook", "none"];

export interface NodeAddressChangeInput {
  from: string;
  to: string;
  prefix: number;
  persistence: AddressPersistence;
  hookPath?: string;
  interface?: string;
  phase?: AddressChangePhase;
}

/** Linux interface names: at most 15 characters, no slash, space or colon. */
const INTERFACE_NAME = /^[A-Za-z0-9_.-]{1,15}$/;

function checkInput(input: NodeAddressChangeInput): void {
  for (const field of ["from", "to"] as const) {
    if (!isIpAddress(input[field])) throw new UserError(`nodeAddresses: ${field} "${input[field]}" is not an IP address; pass the node's address, e.g. 192.168.10.21`);
  }
  if (familyOf(input.from) !== familyOf(input.to)) throw new UserError(`nodeAddresses: ${input.from} → ${input.to} changes the address family; a node keeps its family`);
  const bits = familyOf(input.to) === "IPv4" ? 32 : 128;
  if (!Number.isSafeInteger(input.prefix) || input.prefix < 1 || input.prefix > bits) throw new UserError(`nodeAddresses: prefix ${input.prefix} is not a prefix length of a ${familyOf(input.to)} address; pass e.g. ${bits === 32 ? 24 : 64}`);
  oneOf(input.persistence, ADDRESS_PERSISTENCE, "nodeAddresses persistence");
  if (input.persistence === "hook" && !input.hookPath) throw new UserError("nodeAddresses: persistence \"hook\" needs the path of the operator's script on the node (hookPath), e.g. /usr/local/sbin/change-address");
  if (input.hookPath !== undefined) nodePath(input.hookPath, "hookPath");
  if (input.interface !== undefined && !INTERFACE_NAME.test(input.interface)) throw new UserError(`nodeAddresses: interface "${input.interface}" is not a network interface name; pass e.g. eth0`);
}

function persist(input: NodeAddressChangeInput): ShellCode {
  switch (input.persistence) {
    case "netplan":
      return sh`
        command -v netplan > /dev/null || die "persistence is netplan but netplan is not installed on this node; choose nmcli or a hook"
        current=$(netplan get "ethernets.$IFACE.addresses" 2> /dev/null | sed -n 's/^- //p' | tr -d '"')
        grep -qxF "$OLD_CIDR" <<< "$current" || die "netplan has no address $OLD_CIDR for $IFACE (it lists: \${current:-none}); set the new address there by hand"
        wanted=$(printf '%s\n' "$current" | awk -v old="$OLD_CIDR" -v new="$NEW_CIDR" '{ print ($0 == old ? new : $0) }' | paste -sd, -)
        netplan set "ethernets.$IFACE.addresses=[$wanted]"
        note "netplan: $IFACE addresses are now [$wanted]"
      `;
    case "nmcli":
      return sh`
        command -v nmcli > /dev/null || die "persistence is nmcli but nmcli is not installed on this node; choose netplan or a hook"
        connection=$(nmcli -g GENERAL.CONNECTION device show "$IFACE")
        [ -n "$connection" ] || die "NetworkManager manages no connection on $IFACE; choose netplan or a hook"
        readonly FAMILY=${familyOf(input.to) === "IPv4" ? "ipv4" : "ipv6"}
        nmcli connection modify "$connection" "-$FAMILY.addresses" "$OLD_CIDR" "+$FAMILY.addresses" "$NEW_CIDR"
        note "nmcli: connection $connection holds $NEW_CIDR instead of $OLD_CIDR"
      `;
    case "hook":
      return sh`
        readonly HOOK=${input.hookPath!}
        [ -x "$HOOK" ] || die "the hook $HOOK is not an executable file on this node"
        env OLD_IP="$OLD_IP" NEW_IP="$NEW_IP" PREFIX="$PREFIX" INTERFACE="$IFACE" "$HOOK" || die "the hook $HOOK failed (exit $?); the live address is unchanged"
        note "hook $HOOK made $NEW_CIDR persistent"
      `;
    case "none":
      return sh`
        note "persistence none: $NEW_CIDR is set live only, a reboot brings $OLD_CIDR back"
      `;
  }
}

export function nodeAddressChange(input: NodeAddressChangeInput): string {
  checkInput(input);
  const phase = oneOf(input.phase ?? "both", ["both", "add", "remove-old"] as const, "nodeAddressChange phase");
  const head = sh`
      readonly OLD_IP=${input.from} NEW_IP=${input.to} PREFIX=${input.prefix}
      readonly OLD_CIDR="$OLD_IP/$PREFIX" NEW_CIDR="$NEW_IP/$PREFIX"
      # the link holding an address, from \`ip -o addr\` ("2: eth0    inet 10.0.0.5/24 ..."); empty when none does
      link_of() { ip -o addr show | awk -v want="$1" '{ split($4, a, "/"); if (a[1] == want) { print $2; exit } }'; }
      holder_old=$(link_of "$OLD_IP")
      holder_new=$(link_of "$NEW_IP")
      # delete_old LINK: removes the old address and keeps the new one. An IPv4 link's first address in a subnet is
      # its primary, and deleting a primary deletes the subnet's other addresses with it unless they are promoted
      # (systemd turns promotion on by default; a bare kernel does not): a new address in the old one's subnet
      # would go too, and the node with it.
      delete_old() {
        if [ "\${OLD_IP#*:}" = "$OLD_IP" ]; then
          echo 1 > "/proc/sys/net/ipv4/conf/$1/promote_secondaries" || die "cannot turn on promote_secondaries for $1, which keeps $NEW_IP when $OLD_IP goes; nothing was removed"
        fi
        ip addr del "$OLD_CIDR" dev "$1"
        [ -z "$(link_of "$OLD_IP")" ] || die "$OLD_IP is still on $1 after ip addr del"
        [ -n "$(link_of "$NEW_IP")" ] || { ip addr add "$NEW_CIDR" dev "$1"; die "$NEW_IP went with $OLD_IP from $1 and was added back; see ip addr show dev $1"; }
        # connections that left from the old address would hang until their timeouts (etcd's to its peers, found on
        # the node lab: its apiserver stalled 35 s); closed now, their owners reconnect from the new address
        local src=$OLD_IP
        [ "\${OLD_IP#*:}" = "$OLD_IP" ] || src="[$OLD_IP]"
        if ss -K src "$src" > /dev/null 2>&1; then
          note "closed the connections that left from $OLD_IP"
        else
          note "could not close the connections that left from $OLD_IP (ss -K needs a kernel with INET_DIAG_DESTROY); they end at their timeouts"
        fi
      }
    `;
  if (phase === "remove-old") {
    return buildScript({ name: "node-address-remove-old" }, [head, sh`
      if [ -z "$holder_old" ]; then
        note "$OLD_IP is on no link: already removed"
        exit 0
      fi
      [ -n "$holder_new" ] || die "$NEW_IP is on no link, so removing $OLD_IP would leave the node unreachable; run the add phase first"
      delete_old "$holder_old"
      note "$holder_old: $OLD_CIDR removed; $NEW_CIDR stays on $holder_new"
    `]);
  }
  return buildScript({ name: phase === "add" ? "node-address-add" : "node-address-change" }, [
    head,
    sh`
      if [ -z "$holder_old" ] && [ -n "$holder_new" ]; then
        note "$NEW_IP is on $holder_new and $OLD_IP on no link: already changed"
        exit 0
      fi
    `,
    ...(phase === "add" ? [sh`
      if [ -n "$holder_new" ]; then
        note "$NEW_IP is on $holder_new already, beside $OLD_IP: already added"
        exit 0
      fi
    `] : []),
    sh`
      IFACE=${input.interface ?? ""}
      IFACE=\${IFACE:-$holder_old}
      [ -n "$IFACE" ] || die "no link holds $OLD_IP, and $NEW_IP is not set either; check nodeAddresses for this node"
      [ -z "$holder_old" ] || [ "$holder_old" = "$IFACE" ] || die "$OLD_IP is on $holder_old, not $IFACE"
    `,
    persist(input),
    phase === "add"
      ? sh`
      ip addr add "$NEW_CIDR" dev "$IFACE"
      [ -n "$(link_of "$NEW_IP")" ] || die "after ip addr add, $IFACE does not hold $NEW_IP; see ip addr show dev $IFACE"
      note "$IFACE: $NEW_CIDR added beside $OLD_CIDR"
    `
      : sh`
      [ -n "$holder_new" ] || ip addr add "$NEW_CIDR" dev "$IFACE"
      [ -z "$holder_old" ] || delete_old "$IFACE"
      if [ -z "$(link_of "$NEW_IP")" ] || [ -n "$(link_of "$OLD_IP")" ]; then
        die "after the change $IFACE does not hold $NEW_IP alone; see ip addr show dev $IFACE"
      fi
      note "$IFACE: $OLD_CIDR -> $NEW_CIDR"
    `,
  ]);
}
