#!/usr/bin/env bash
# The long torture run: P worker processes x C coroutines on one lock (a mutex, a semaphore or a
# shared_mutex) of one store (Redis, ZooKeeper, etcd, MariaDB/MySQL or PostgreSQL, each a private
# server on a free loopback port), critical sections against a "resource" redis-server under it (an
# exclusive holder does a fenced and an unfenced read-modify-write), while a seeded chaos loop hits
# the store: kills its connections, stalls the server, SIGSTOPs a holder past its lease, restarts
# the server once (which of these each store gets, and why: test/torture/lock_store.hpp). Prints
# the chaos as it happens and a summary table of every figure and check — among them how many
# held at once, on the resource server's clock; the exit status is 0 only if every check passed,
# 2 on a usage error (a lock or a chaos the store does not serve among them).
#
# Usage: scripts/torture.sh [--backend redis|zookeeper|etcd|mysql|postgres]
#                           [--lock mutex|semaphore|shared_mutex] [--permits K] [--take N]
#                           [--writers W] [--fair yes|no] [--seed N] [--duration SECONDS]
#                           [--processes P]
#                           [--coroutines C] [--chaos all|none|kill,pause,sleep,stop,restart]
#                           [--lease MS] [--deadline MS] [--hold US] [--overrun-bound MS]
# Defaults: Redis, the mutex, seed 1, 180 s, 3 processes x 4 coroutines, every fault the store
# offers, lease 1000 ms on Redis (the session timeout elsewhere: ZooKeeper and etcd 2000 ms, the
# databases 3000 ms), acquire_for twice the lease, hold 3000 us, overrun bound 500 ms; a semaphore of 3
# permits, 1 a section (--take 2: 1 or 2); a shared_mutex with 1 writer in 4 sections. The same seed
# replays the same chaos schedule (the timing of the workers still varies from run to run).
# --fair no: the mutex non-fair (lock_options::fair = false; Redis only).
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
