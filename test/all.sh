#!/usr/bin/env bash
# `npm test`: the type check and the unit tests, then the integration and e2e suites on the newest and the legacy
# version (test/integrationOnVersions.sh). The Pulumi engine, which only the e2e suites run, is built meanwhile in the
# background, niced, when missing: on a cold machine its ~20 min of build then overlap the tests instead of adding
# to them. The e2e suites wait for it (a failed build is tried again in the foreground, its errors shown).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
nice -n 19 ionice -c3 bash test/testbed/build/pulumi.sh >/dev/null 2>&1 &
engine=$!
# On exit (Ctrl-C included) the build goes too, with the go processes under it.
. test/testbed/killTree.sh
# shellcheck disable=SC2317 # called by the EXIT trap
stop_engine_build() { kill_tree "$engine"; }
trap stop_engine_build EXIT
npm run build || exit 1
npm run test:unit || exit 1
bash test/integrationOnVersions.sh newest legacy
