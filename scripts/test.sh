#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test with ctest.
# Usage: scripts/test.sh [ctest arguments...]   e.g. scripts/test.sh -L unit   or   -R integration.lock
# Environment: BUILD_DIR, BUILD_TYPE, CMAKE_ARGS (see build.sh); TEST_TIMEOUT (seconds per test
# that sets no TIMEOUT of its own; default 600); TEST_JOBS (tests at once; default one per core:
# at twice that, two timing-bound suites failed in a fresh clone's run, sentinel's TLS failover
# watch and a ZooKeeper expiry's node check).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$COROLOCK_ROOT/scripts/deps.sh"
"$COROLOCK_ROOT/scripts/build.sh"

log "testing"
# ctest's exit code is this script's; its last line is the summary ("100% tests passed, ...").
# --no-tests=error: a build that registered no test must not pass as green.
exec ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error \
  -j"${TEST_JOBS:-$(nproc)}" --timeout "${TEST_TIMEOUT:-600}" "$@"
