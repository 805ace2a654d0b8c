#!/usr/bin/env bash
# Everything a fresh Debian bookworm machine needs, as root: the test bed (etcd, kube binaries built once and cached,
# shellcheck, sshd, iproute2) and the npm packages from the lockfile. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/testbed/install.sh
npm ci --no-audit --no-fund --loglevel=error
