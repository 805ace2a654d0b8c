#!/usr/bin/env bash
# PID 1 of one lab node (see lab.sh): gives the node its own files, cgroups and /run, starts containerd and sshd,
# supervises the kubelet the way systemd's Restart=always does (bin/systemctl is its stand-in for kubeadm and for
# our node scripts), and reaps orphans. Environment: NODE, NODE_IP, NODE_DIR, LAB.
set -euo pipefail
hostname "$NODE"
logs="$NODE_DIR/logs"
mkdir -p "$logs"

# The node's own state: on the host's ext4 (containerd's overlay snapshots cannot sit on overlayfs), bound over the
# paths kubeadm, the kubelet and containerd use, and /var/lib/cidr-migration, where the migration's node scripts keep
# their backups and the kubeadm-rejoin marker (shared, one node's marker made the others skip their rejoin).
# Everything else is the host's, read as it is.
mount -t tmpfs tmpfs /run
mkdir -p /run/sshd /run/containerd
for path in etc/kubernetes etc/cni/net.d etc/containerd var/lib/kubelet var/lib/containerd var/lib/etcd var/lib/cni var/lib/cidr-migration var/log/pods var/log/containers root/.ssh; do
  mkdir -p "$NODE_DIR/fs/$path" "/$path"
  mount --bind "$NODE_DIR/fs/$path" "/$path"
done
mkdir -p /opt/cni/bin
mount --bind "$LAB/cni-bin" /opt/cni/bin
mount --make-rshared /

# cgroup v1, rooted at the node's own cgroup (the cgroup namespace), and the kubelet's cgroupRoot /kubelet in every
# hierarchy, as kind's entrypoint does
mount -t tmpfs cgroup /sys/fs/cgroup
for controller in cpu cpuacct cpuset memory devices freezer blkio pids; do
  mkdir -p "/sys/fs/cgroup/$controller"
  mount -t cgroup -o "$controller" cgroup "/sys/fs/cgroup/$controller"
done
mkdir -p /sys/fs/cgroup/systemd
mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
for hierarchy in /sys/fs/cgroup/*/; do
  mkdir -p "$hierarchy/kubelet"
  if [ -f "$hierarchy/cpuset.cpus" ]; then
    cat "$hierarchy/cpuset.cpus" > "$hierarchy/kubelet/cpuset.cpus"
    cat "$hierarchy/cpuset.mems" > "$hierarchy/kubelet/cpuset.mems"
  fi
  mount --bind "$hierarchy/kubelet" "$hierarchy/kubelet"
done

sysctl -qw net.ipv4.ip_forward=1

mkdir -p /etc/containerd
cat > /etc/containerd/config.toml <<TOML
version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.runtime']
  tolerate_missing_hugetlb_controller = true
  # this machine withholds CAP_SYS_RESOURCE, so no process may lower its oom_score_adj (runc fails on the
  # kubelet's -998 for pod sandboxes): containerd keeps each container's at least its own
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = false
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['/opt/cni/bin']
  conf_dir = '/etc/cni/net.d'
TOML
containerd --config /etc/containerd/config.toml > "$logs/containerd.log" 2>&1 &
for _ in $(seq 100); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done
[ -S /run/containerd/containerd.sock ] || { echo "containerd did not start:"; tail -n 20 "$logs/containerd.log"; exit 1; }

# sshd on every address of the node (its own network namespace), for our node steps, with the lab's client key: a
# node whose address moves answers at the new one too, as a real node's sshd does
[ -f "$NODE_DIR/fs/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N "" -f "$NODE_DIR/fs/ssh_host_ed25519_key"
[ -f "$LAB/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C node-lab -f "$LAB/id_ed25519"
cp "$LAB/id_ed25519.pub" /root/.ssh/authorized_keys
/usr/sbin/sshd -o ListenAddress=0.0.0.0 -o HostKey="$NODE_DIR/fs/ssh_host_ed25519_key" -o PermitRootLogin=prohibit-password \
  -o PasswordAuthentication=no -o UsePAM=no -o PidFile=/run/sshd.pid -o "SetEnv=PATH=$PATH" -E "$logs/sshd.log"

# The kubelet as systemd runs it for kubeadm (10-kubeadm.conf): restarted a second after it exits, unless stopped
# through bin/systemctl (the file /run/kubelet.stopped).
supervise_kubelet() {
  while :; do
    if [ ! -f /run/kubelet.stopped ] && [ -f /var/lib/kubelet/config.yaml ]; then
      KUBELET_KUBEADM_ARGS=""
      # shellcheck disable=SC1091 # written by kubeadm
      [ -f /var/lib/kubelet/kubeadm-flags.env ] && . /var/lib/kubelet/kubeadm-flags.env
      # shellcheck disable=SC2086 # kubeadm's flags are a list of words
      kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf \
        --config=/var/lib/kubelet/config.yaml $KUBELET_KUBEADM_ARGS >> "$logs/kubelet.log" 2>&1 &
      echo "$!" > /run/kubelet.pid
      wait "$!" || true
      rm -f /run/kubelet.pid
    fi
    sleep 1
  done
}
touch /run/kubelet.stopped
supervise_kubelet &

touch "$NODE_DIR/ready"
# PID 1 reaps every orphan until the node is killed
while :; do wait -n 2>/dev/null || sleep 1; done
