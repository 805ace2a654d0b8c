#!/usr/bin/env bash
# A real kubeadm cluster on the node lab (issue 14): cp-1 runs `kubeadm init` (static-pod control plane, etcd as a
# static pod, kubeadm's own kubeadm-config, kubelet-config and kube-proxy), worker-1 and worker-2 `kubeadm join`,
# then Flannel (the official manifest, on images built here) gives pods their network. Every image is built here
# (images.sh) and imported into each node's containerd; nothing is pulled.
# Usage: cluster.sh up | down        Prints the admin kubeconfig's path when up.
# Environment: POD_SUBNET (default 10.244.0.0/16), SERVICE_SUBNET (default 10.96.0.0/12), CIDR_MIGRATION_NODE_LAB_NODES
# (default "cp-1 worker-1 worker-2": cp-1 first; further cp-N nodes join as control-plane nodes, with stacked etcd), CIDR_MIGRATION_NODE_LAB_IMAGES (see images.sh),
# and lab.sh's CIDR_MIGRATION_NODE_LAB and CIDR_MIGRATION_NODE_LAB_NET for a lab beside another.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
lab="${CIDR_MIGRATION_NODE_LAB:-$HOME/.cache/cidr-migration/node-lab}"
versions_file="$here/../versions.json"
pod_subnet="${POD_SUBNET:-10.244.0.0/16}"
service_subnet="${SERVICE_SUBNET:-10.96.0.0/12}"
read -r -a nodes <<< "${CIDR_MIGRATION_NODE_LAB_NODES:-cp-1 worker-1 worker-2}"
images="${CIDR_MIGRATION_NODE_LAB_IMAGES:-$lab/images}"
flannel_manifest="$repo/test/fixtures/nodes/kube-flannel.yml"

die() { echo "node cluster: $*" >&2; exit 1; }
[ "${nodes[0]:-}" = cp-1 ] || die "CIDR_MIGRATION_NODE_LAB_NODES must start with cp-1, the control plane, got '${nodes[*]}'"
in_node() { bash "$here/lab.sh" exec "$@"; }
node_ip() { awk -v n="$1" '$1 == n {print $2}' "$lab/addresses"; }

up() {
  local kube started
  kube=$(jq -r '.versions[.newest].kube' "$versions_file")
  started=$SECONDS
  bash "$here/lab.sh" up "${nodes[@]}"
  bash "$here/images.sh" > /dev/null
  local node image
  for node in "${nodes[@]}"; do
    for image in "$images"/*.tar; do
      in_node "$node" ctr -n k8s.io images import --platform linux/amd64 "$image" > /dev/null 2>&1 || die "importing $image into $node failed"
    done
    # the kubelet's resolv.conf: a nameserver that is not on loopback (CoreDNS's loop plugin refuses one)
    echo "nameserver $(node_ip "$node" | cut -d. -f1-3).1" > "$lab/nodes/$node/fs/etc/kubernetes/node-resolv.conf"
  done
  echo "node cluster: images imported ($((SECONDS - started)) s)"

  local cp_ip
  cp_ip=$(node_ip cp-1)
  cat > "$lab/nodes/cp-1/fs/etc/kubernetes/kubeadm-init.yaml" <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: $cp_ip
  bindPort: 6443
nodeRegistration:
  name: cp-1
  criSocket: unix:///run/containerd/containerd.sock
  imagePullPolicy: Never
  kubeletExtraArgs:
    - name: node-ip
      value: $cp_ip
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v$kube
controlPlaneEndpoint: $cp_ip:6443
networking:
  podSubnet: $pod_subnet
  serviceSubnet: $service_subnet
---
# kind's settings for a kubelet in a container, plus what this machine needs: cgroup v1 (failCgroupV1: false,
# allowed from 1.35 only when asked for) through cgroupfs
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: /kubelet
failSwapOn: false
failCgroupV1: false
imageGCHighThresholdPercent: 100
evictionHard:
  nodefs.available: "0%"
  nodefs.inodesFree: "0%"
  imagefs.available: "0%"
resolvConf: /etc/kubernetes/node-resolv.conf
---
# nftables (IPVS is not in this kernel); conntrack settings left alone (a network namespace may not write them)
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
conntrack:
  maxPerCore: 0
YAML
  # kubeadm's preflight refuses cgroup v1 (SystemVerification) and warns about swap, hostname lookups and the
  # kubelet service it cannot enable without systemd; each is expected here
  in_node cp-1 kubeadm init --config /etc/kubernetes/kubeadm-init.yaml --ignore-preflight-errors=all > "$lab/kubeadm-init.log" 2>&1 \
    || die "kubeadm init on cp-1 failed; see $lab/kubeadm-init.log"
  echo "node cluster: kubeadm init on cp-1 ($((SECONDS - started)) s)"

  local join token hash
  join=$(in_node cp-1 kubeadm token create --print-join-command 2>/dev/null)
  token=$(echo "$join" | grep -o -- '--token [^ ]*' | cut -d' ' -f2)
  hash=$(echo "$join" | grep -o 'sha256:[0-9a-f]*')
  local control_plane pki
  for node in "${nodes[@]:1}"; do
    # a further control-plane node (cp-N): the cluster's CAs and service-account key first, as kubeadm's docs copy
    # them by hand, then `kubeadm join --control-plane` adds its etcd member and its static-pod control plane
    control_plane=''
    if [[ "$node" == cp-* ]]; then
      pki="$lab/nodes/$node/fs/etc/kubernetes/pki"
      mkdir -p "$pki/etcd"
      for file in ca.crt ca.key sa.key sa.pub front-proxy-ca.crt front-proxy-ca.key etcd/ca.crt etcd/ca.key; do
        cp -p "$lab/nodes/cp-1/fs/etc/kubernetes/pki/$file" "$pki/$file"
      done
      control_plane="controlPlane:
  localAPIEndpoint:
    advertiseAddress: $(node_ip "$node")
    bindPort: 6443"
    fi
    cat > "$lab/nodes/$node/fs/etc/kubernetes/kubeadm-join.yaml" <<YAML
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: $cp_ip:6443
    token: $token
    caCertHashes: ["$hash"]
nodeRegistration:
  name: $node
  criSocket: unix:///run/containerd/containerd.sock
  imagePullPolicy: Never
  kubeletExtraArgs:
    - name: node-ip
      value: $(node_ip "$node")
$control_plane
YAML
    chmod 600 "$lab/nodes/$node/fs/etc/kubernetes/kubeadm-join.yaml"
    in_node "$node" kubeadm join --config /etc/kubernetes/kubeadm-join.yaml --ignore-preflight-errors=all > "$lab/kubeadm-join-$node.log" 2>&1 \
      || die "kubeadm join on $node failed; see $lab/kubeadm-join-$node.log"
  done
  echo "node cluster: ${nodes[*]:1} joined ($((SECONDS - started)) s)"

  local kubectl=("$lab/bin/kubectl" --kubeconfig "$lab/nodes/cp-1/fs/etc/kubernetes/admin.conf")
  node "$here/flannelManifest.js" "$flannel_manifest" "$lab/kube-flannel.yml" \
    "$(jq -r '.node.flannel' "$versions_file")" "$(jq -r '.node.flannelCni' "$versions_file")" "$pod_subnet"
  "${kubectl[@]}" apply -f "$lab/kube-flannel.yml" > /dev/null
  "${kubectl[@]}" wait --for=condition=Ready node --all --timeout=300s > /dev/null || die "the nodes did not become Ready within 300 s"
  "${kubectl[@]}" -n kube-system rollout status deployment/coredns --timeout=300s > /dev/null || die "CoreDNS did not become ready within 300 s"
  echo "node cluster: up, every node Ready and CoreDNS serving ($((SECONDS - started)) s)"
  echo "$lab/nodes/cp-1/fs/etc/kubernetes/admin.conf"
}

case "${1:-}" in
  up) up ;;
  down) bash "$here/lab.sh" down ;;
  *) die "usage: cluster.sh up | down" ;;
esac
