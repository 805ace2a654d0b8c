/**
 * flannelBridgeRoutes: keeps pods on nodes already rolled and pods on nodes not yet rolled talking while an etcd
 * rewrite's node rollout runs with Flannel (--kube-subnet-mgr).
 *
 * Why: the rewrite moves every Node's podCIDR at once, but each node's pods keep their old addresses until its turn.
 * A flanneld started after the rewrite knows the other nodes only by their new subnets, and a flanneld still running
 * from before never learns a new one: it reacts to a Node's backend annotations, and a restarted flanneld keeps its
 * VTEP MAC. So neither side routes to the other, and requests between them time out (seen on the node lab).
 * Each node gets, on its flannel.1, a route for the other nodes' subnets its flanneld does not know, through the
 * gateway its flanneld did program (same VTEP, same MAC):
 * - on a node still on its old subnet: each other node's NEW subnet via that node's OLD gateway;
 * - on a rolled node: each other node's OLD subnet via that node's NEW gateway (waiting until flanneld programmed it).
 * The caller says which side the node is on; the script waits until flannel.1 carries that side's gateway address
 * (a rolled node's flanneld restarts meanwhile: the old one can still hold an old flannel.1 for a while). Routes
 * carry protocol `ROUTE_PROTOCOL`, so `remove` takes exactly ours away; a node's own cleanup deletes flannel.1 and
 * every route on it.
 *
 * Input: `{ action: "unrolled" | "rolled" | "remove", self?, nodes, waitSeconds?, root? }`; `nodes` lists every node
 * with its old and new subnet; `self` names this node (not for remove).
 */
import { nthAddress, parseCidr } from "../../net/cidr";
import { SandboxRoot, buildScript, sh } from "../remoteScript";
import { positiveInteger } from "./inputs";

/** Our routes' protocol number (iproute2 `proto`): unassigned, so nothing else on a node uses it. */
export const ROUTE_PROTOCOL = 145;

export interface FlannelSubnets {
  name: string;
  oldSubnet: string;
  newSubnet: string;
}

export interface FlannelBridgeRoutesInput extends SandboxRoot {
  action: "unrolled" | "rolled" | "remove";
  self?: string;
  nodes: readonly FlannelSubnets[];
  /** How long to wait for flanneld to come up and program the gateways (default 180). */
  waitSeconds?: number;
}

/** Flannel's gateway on flannel.1 for a subnet: its network address (lease.Subnet.IP). */
const gateway = (subnet: string) => nthAddress(subnet, 0);

function checkIPv4(cidr: string, field: string): string {
  const parsed = parseCidr(cidr);
  if (parsed.family !== "IPv4") throw new Error(`${field} ${cidr}: the flannel bridge routes handle IPv4 subnets`);
  return parsed.cidr;
}

export function flannelBridgeRoutes(input: FlannelBridgeRoutesInput): string {
  if (input.action === "remove") {
    return buildScript({ name: "flannel-bridge-routes-remove", root: input.root }, [
      sh`
        readonly PROTO=${ROUTE_PROTOCOL}
        count=$(ip -4 route show proto "$PROTO" | grep -c . || true)
        ip -4 route flush proto "$PROTO"
        note "removed $count bridge route(s) of the rollout"
      `,
    ]);
  }
  const self = input.nodes.find((n) => n.name === input.self);
  if (!self) throw new Error(`self ${JSON.stringify(input.self)} is not among the nodes; name the node the script runs on`);
  const others = input.nodes.filter((n) => n.name !== self.name && n.oldSubnet !== n.newSubnet);
  const wait = positiveInteger(input.waitSeconds ?? 180, "waitSeconds");
  // per other node: its old subnet and gateway, its new subnet and gateway
  const rolled = input.action === "rolled";
  const table = others.flatMap((n) => [n.name, checkIPv4(n.oldSubnet, `${n.name} oldSubnet`), gateway(n.oldSubnet), checkIPv4(n.newSubnet, `${n.name} newSubnet`), gateway(n.newSubnet)]);
  return buildScript({ name: "flannel-bridge-routes", root: input.root }, [
    sh`
      readonly PROTO=${ROUTE_PROTOCOL}
      readonly SELF_GW=${gateway(checkIPv4(rolled ? self.newSubnet : self.oldSubnet, "self subnet"))}
      readonly ROLLED=${rolled ? 1 : 0}
      readonly TABLE=(${table})
      readonly WAIT=${wait}

      has_addr() { ip -4 -o addr show dev flannel.1 2> /dev/null | grep -qF " $1/"; }
      deadline=$((SECONDS + WAIT))
      until has_addr "$SELF_GW"; do
        [ "$SECONDS" -lt "$deadline" ] || die "flannel.1 does not carry this node's gateway $SELF_GW after \${WAIT}s; check the flannel pod on this node"
        sleep 0.5
      done
      added=0
      for ((i = 0; i < \${#TABLE[@]}; i += 5)); do
        name=\${TABLE[i]} old=\${TABLE[i+1]} old_gw=\${TABLE[i+2]} new=\${TABLE[i+3]} new_gw=\${TABLE[i+4]}
        if [ "$ROLLED" = 1 ]; then dest=$old gw=$new_gw; else dest=$new gw=$old_gw; fi
        # the gateway must be one flanneld programmed (its neighbour entry carries the other node's VTEP MAC)
        until ip neigh show to "$gw" dev flannel.1 2> /dev/null | grep -q lladdr; do
          [ "$SECONDS" -lt "$deadline" ] || die "flanneld has not programmed $name's gateway $gw on flannel.1 after \${WAIT}s; check the flannel pods"
          sleep 0.5
        done
        ip -4 route replace "$dest" via "$gw" dev flannel.1 onlink proto "$PROTO"
        added=$((added + 1))
      done
      if [ "$ROLLED" = 1 ]; then
        note "rolled node: $added route(s) to the other nodes' old subnets through their new gateways"
      else
        note "node on its old subnet: $added route(s) to the other nodes' new subnets through their old gateways"
      fi
    `,
  ]);
}
