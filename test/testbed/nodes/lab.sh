#!/usr/bin/env bash
# The real-node lab (issue 14): nodes as containers on one kernel, the way kind makes them, without Docker. Each node
# is a network namespace (its own eth0 on the lab bridge, 172.31.250.0/24) plus, inside it, a mount, PID, cgroup,
# UTS and IPC namespace whose init is node-init.sh: its own /etc/kubernetes, /var/lib/{kubelet,containerd,etcd,cni,cidr-migration}
# and /run, cgroup v1 hierarchies rooted at the node's own cgroup, and containerd, sshd and a kubelet running in it.
# This machine has cgroup v1 only and no systemd (see the README's test-bed section), hence no nspawn.
#
# Usage: lab.sh up NODE...   start these nodes (e.g. cp-1 worker-1 worker-2); their binaries must be built
#        lab.sh exec NODE CMD  run CMD inside a node (all its namespaces)
#        lab.sh down           stop every node and remove every namespace, mount, cgroup, link and directory it made
# The lab lives in $CIDR_MIGRATION_NODE_LAB (default ~/.cache/cidr-migration/node-lab). Several labs can run at once
# (a fleet of clusters), each in its own directory with its own CIDR_MIGRATION_NODE_LAB_NET (0-4, default 0): bridge
# cmlab<N>, nodes on 172.31.<250+N>.0/24, namespaces and cgroups named cm-NODE (N = 0) or cm<N>-NODE.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lab="${CIDR_MIGRATION_NODE_LAB:-$HOME/.cache/cidr-migration/node-lab}"
cache_dir="${CIDR_MIGRATION_CACHE:-$HOME/.cache/cidr-migration}"
versions_file="$here/../versions.json"
net="${CIDR_MIGRATION_NODE_LAB_NET:-0}"

die() { echo "node lab: $*" >&2; exit 1; }

[[ "$net" =~ ^[0-4]$ ]] || die "CIDR_MIGRATION_NODE_LAB_NET must be 0 to 4, got '$net'"
bridge="cmlab$net"
subnet="172.31.$((250 + net))"
prefix=cm-
[ "$net" = 0 ] || prefix="cm$net-"
# the machine's sysctls, kept by the first lab up and put back by the last one down
sysctls_file="$cache_dir/node-lab.sysctls"

# The v1 hierarchies this process sits in, as "mountpoint path" lines (the unified one is left out: the nodes run on v1).
hierarchies() {
  local line controllers path mountpoint
  while IFS= read -r line; do
    controllers=$(echo "$line" | cut -d: -f2)
    path=$(echo "$line" | cut -d: -f3-)
    [ -n "$controllers" ] || continue
    mountpoint="/sys/fs/cgroup/${controllers#name=}"
    [ -d "$mountpoint" ] || die "cgroup hierarchy $controllers is not mounted at $mountpoint"
    echo "$mountpoint $path"
  done < /proc/self/cgroup
}

# Every program a node runs, linked into one directory that node-init.sh puts first on PATH.
link_binaries() {
  local kube containerd runc cni
  kube=$(jq -r '.versions[.newest].kube' "$versions_file")
  containerd=$(jq -r '.node.containerd' "$versions_file")
  runc=$(jq -r '.node.runc' "$versions_file")
  cni=$(jq -r '.node.cniPlugins' "$versions_file")
  mkdir -p "$lab/bin" "$lab/cni-bin"
  local program
  for program in kubelet kubeadm kubectl; do ln -sfn "$cache_dir/kube-$kube/bin/$program" "$lab/bin/$program"; done
  for program in containerd ctr containerd-shim-runc-v2; do ln -sfn "$cache_dir/containerd-$containerd/bin/$program" "$lab/bin/$program"; done
  ln -sfn "$cache_dir/runc-$runc/bin/runc" "$lab/bin/runc"
  ln -sfn "$here/bin/systemctl" "$lab/bin/systemctl"
  for program in bridge host-local loopback portmap; do ln -sfn "$cache_dir/cni-plugins-$cni/bin/$program" "$lab/cni-bin/$program"; done
  for program in "$lab"/bin/* "$lab"/cni-bin/*; do [ -x "$program" ] || die "$(readlink "$program") is missing: run test/testbed/build/kube.sh $kube kubelet kube-proxy kube-scheduler and test/testbed/build/node.sh"; done
}

# The kubelet sets three kernel-wide sysctls even inside a node (vm.overcommit_memory, kernel.panic,
# kernel.panic_on_oops): the machine's values are kept at the first start and put back by down.
save_sysctls() {
  [ -f "$sysctls_file" ] && return 0
  mkdir -p "$cache_dir"
  sysctl vm.overcommit_memory kernel.panic kernel.panic_on_oops | tr -d ' ' > "$sysctls_file"
}

# only once no other lab's bridge is left: its kubelets changed the same kernel-wide values
restore_sysctls() {
  [ -f "$sysctls_file" ] || return 0
  ip -o link show type bridge | awk -F': ' '{print $2}' | grep -q '^cmlab' && return 0
  local setting
  while read -r setting; do sysctl -qw "$setting"; done < "$sysctls_file"
  rm -f "$sysctls_file"
}

network_up() {
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
    ip addr add "$subnet.1/24" dev "$bridge"
    ip link set "$bridge" up
  fi
}

node_up() {
  local node="$1" index="$2" ns="$prefix$1" dir="$lab/nodes/$1"
  [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null && { echo "node lab: $node already runs (pid $(cat "$dir/pid"))"; return 0; }
  mkdir -p "$dir"
  ip netns add "$ns"
  # a network namespace is torn down asynchronously: right after a down, its veth may still be here
  ip link del "${prefix}v$index" 2>/dev/null || true
  ip link add "${prefix}v$index" type veth peer name eth0 netns "$ns"
  ip link set "${prefix}v$index" master "$bridge" up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "$subnet.$((10 + index))/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip route add default via "$subnet.1"
  # each node's own cgroup in every hierarchy, below ours (the sandbox machinery owns the ones above)
  local mountpoint path
  while read -r mountpoint path; do
    mkdir -p "$mountpoint$path/$ns"
    if [ -f "$mountpoint$path/cpuset.cpus" ]; then
      cat "$mountpoint$path/cpuset.cpus" > "$mountpoint$path/$ns/cpuset.cpus"
      cat "$mountpoint$path/cpuset.mems" > "$mountpoint$path/$ns/cpuset.mems"
    fi
  done < <(hierarchies)
  # the launcher joins the node's cgroups, then becomes the node: unshare makes node-init.sh PID 1 of its namespaces
  (
    while read -r mountpoint path; do echo "$BASHPID" > "$mountpoint$path/$ns/cgroup.procs"; done < <(hierarchies)
    exec ip netns exec "$ns" unshare --mount --pid --fork --mount-proc --cgroup --uts --ipc --propagation private \
      env NODE="$node" NODE_IP="$subnet.$((10 + index))" NODE_DIR="$dir" LAB="$lab" PATH="$lab/bin:$PATH" \
      bash "$here/node-init.sh"
  ) > "$dir/init.log" 2>&1 &
  echo "$!" > "$dir/launcher.pid"
  local deadline=$((SECONDS + 120))
  until [ -f "$dir/ready" ]; do
    kill -0 "$(cat "$dir/launcher.pid")" 2>/dev/null || die "$node stopped while starting; $dir/init.log says: $(tail -n 5 "$dir/init.log")"
    [ "$SECONDS" -lt "$deadline" ] || die "$node was not ready within 120 s; see $dir/init.log"
    sleep 0.2
  done
  # the launcher became unshare; the node's init is its child that is PID 1 in the new PID namespace
  local launcher child
  launcher=$(cat "$dir/launcher.pid")
  for child in $(tr ' ' '\n' < "/proc/$launcher/task/$launcher/children"); do
    [ "$(awk '/^NSpid:/ {print $3}' "/proc/$child/status" 2>/dev/null)" = 1 ] && echo "$child" > "$dir/pid"
  done
  [ -s "$dir/pid" ] || die "$node: no init process found below unshare (pid $launcher)"
  { grep -v "^$node " "$lab/addresses" 2>/dev/null || true; echo "$node $subnet.$((10 + index))"; } > "$lab/addresses.new"
  mv -f "$lab/addresses.new" "$lab/addresses"
  echo "node lab: $node up at $subnet.$((10 + index)) (init pid $(cat "$dir/pid"))"
}

node_exec() {
  local node="$1"
  shift
  local pid
  pid=$(cat "$lab/nodes/$node/pid" 2>/dev/null) || die "$node is not running"
  # into the node's cgroups too, so that what runs here is the node's (and its limits and teardown apply)
  local mountpoint path
  while read -r mountpoint path; do echo "$$" > "$mountpoint$path/$prefix$node/cgroup.procs"; done < <(hierarchies)
  exec nsenter --target "$pid" --mount --uts --ipc --net --pid --cgroup -- env PATH="$lab/bin:$PATH" "$@"
}

# The nodes there are: a state directory, or only a cgroup or namespace left by a start that failed halfway.
known_nodes() {
  local mountpoint path
  {
    for dir in "$lab"/nodes/*/; do [ -d "$dir" ] && basename "$dir"; done
    while read -r mountpoint path; do
      for cg in "$mountpoint$path/$prefix"*/; do [ -d "$cg" ] && basename "$cg" | sed "s/^$prefix//"; done
    done < <(hierarchies)
    ip netns list | awk '{print $1}' | grep "^$prefix" | sed "s/^$prefix//"
  } | sort -u
}

lab_down() {
  local node ns pid mountpoint path cg
  for node in $(known_nodes); do
    ns="$prefix$node"
    # killing a PID namespace's init kills everything in it
    pid=$(cat "$lab/nodes/$node/pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; then
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    # anything left in the node's cgroups (a launcher that never became the node, say) goes too
    while read -r mountpoint path; do
      [ -d "$mountpoint$path/$ns" ] || continue
      while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < <(find "$mountpoint$path/$ns" -name cgroup.procs -exec cat {} +)
    done < <(hierarchies)
    while read -r mountpoint path; do
      cg="$mountpoint$path/$ns"
      [ -d "$cg" ] || continue
      # the node's own sub-cgroups (the kubelet's pods) empty once their processes are gone; deepest first
      for _ in $(seq 50); do
        find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
        [ -d "$cg" ] || break
        sleep 0.1
      done
      [ ! -d "$cg" ] || echo "node lab: could not remove cgroup $cg" >&2
    done < <(hierarchies)
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "${lab:?}/nodes/$node"
  done
  ip link del "$bridge" 2>/dev/null || true
  restore_sysctls
  rm -f "$lab/addresses"
  echo "node lab: down"
}

case "${1:-}" in
  up)
    shift
    [ "$#" -gt 0 ] || die "usage: lab.sh up NODE..."
    link_binaries
    save_sysctls
    network_up
    index=1
    for node in "$@"; do node_up "$node" "$index"; index=$((index + 1)); done
    ;;
  exec) shift; node_exec "$@" ;;
  down) lab_down ;;
  *) die "usage: lab.sh up NODE... | exec NODE CMD... | down" ;;
esac
