#!/usr/bin/env bash
# Everything a fresh Debian bookworm machine needs, as root: the test bed (etcd, kube binaries built once and cached,
# shellcheck, sshd, iproute2), the npm packages from the lockfile, and the Pulumi engine (the CLI and the kubernetes
# provider, built once and cached). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/testbed/install.sh
npm ci --no-audit --no-fund --loglevel=error
bash test/testbed/build/pulumi.sh
