#!/usr/bin/env bash
# Everything a fresh Debian bookworm machine needs, as root: the test bed (etcd, kube binaries of the newest test-bed
# version, built once and cached; shellcheck, sshd, iproute2) and the npm packages from the lockfile. Safe to run
# again. The Pulumi engine (the CLI and the kubernetes provider) is built, once and cached, where it is first needed:
# by `eval "$(bash test/testbed/build/pulumi.sh --env)"` before a `pulumi` command, by the node lab, and by
# `npm test` in the background while the unit and integration suites run (test/all.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/testbed/install.sh
npm ci --no-audit --no-fund --loglevel=error
