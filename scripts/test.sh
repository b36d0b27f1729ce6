#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test with ctest.
# Usage: scripts/test.sh [ctest arguments...]   e.g. scripts/test.sh -L unit   or   -R integration.lock
# Environment: BUILD_DIR, BUILD_TYPE, CMAKE_ARGS (see build.sh); TEST_TIMEOUT (seconds per test
# that sets no TIMEOUT of its own; default 600); TEST_JOBS (tests at once; default twice the cores:
# most tests wait on servers, timers and child processes, and used about a third of the CPU at one
# test per core).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$COROLOCK_ROOT/scripts/deps.sh"
"$COROLOCK_ROOT/scripts/build.sh"

log "testing"
# ctest's exit code is this script's; its last line is the summary ("100% tests passed, ...").
# --no-tests=error: a build that registered no test must not pass as green.
exec ctest --test-dir "$BUILD_DIR" --output-on-failure --no-tests=error \
  -j"${TEST_JOBS:-$((2 * $(nproc)))}" --timeout "${TEST_TIMEOUT:-600}" "$@"
