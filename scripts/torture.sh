#!/usr/bin/env bash
# The long torture run: P worker processes x C coroutines on one lock (a mutex, a semaphore or a
# shared_mutex), critical sections against a "resource" server under it (an exclusive holder does a
# fenced and an unfenced read-modify-write), while a seeded chaos loop kills connections, stalls the
# server, SIGSTOPs a holder past its lease and restarts the server once. Prints the chaos as it
# happens and a summary table of every figure and check — among them how many held at once, on the
# resource server's clock; the exit status is 0 only if every check passed. It starts its own
# redis-servers (the lock server and the "resource") on free loopback ports.
#
# Usage: scripts/torture.sh [--lock mutex|semaphore|shared_mutex] [--permits K] [--take N]
#                           [--writers W] [--seed N] [--duration SECONDS] [--processes P]
#                           [--coroutines C] [--chaos all|none|kill,pause,sleep,stop,restart]
#                           [--lease MS] [--deadline MS] [--hold US] [--overrun-bound MS]
# Defaults: the mutex, seed 1, 180 s, 3 processes x 4 coroutines, all chaos, lease 1000 ms,
# acquire_for 2000 ms, hold 3000 us, overrun bound 500 ms; a semaphore of 3 permits, 1 a section
# (--take 2: 1 or 2); a shared_mutex with 1 writer in 4 sections. The same seed replays the same
# chaos schedule (the timing of the workers still varies from run to run).
# Environment: BUILD_DIR, BUILD_TYPE, CMAKE_ARGS (see build.sh). Set SKIP_BUILD=1 to use the binaries
# as they are.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

if [[ -z ${SKIP_BUILD:-} ]]; then
  "$COROLOCK_ROOT/scripts/deps.sh"
  "$COROLOCK_ROOT/scripts/build.sh" corolock_torture corolock_torture_worker
fi
log "torture run: $*"
exec "$BUILD_DIR/test/corolock_torture" "$@"
