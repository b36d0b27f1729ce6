#!/usr/bin/env bash
# Instructions the client spends per pipelined request, independent of the machine's load:
# connection_bench's ping_pipelined under callgrind for a short and a long window against a private
# redis-server; (instructions of the long run - of the short run) / (PINGs the server counted in
# the long run - in the short run). The difference cancels start-up and the report.
# Usage: scripts/bench_instructions.sh [COROUTINES]   (default 1000)
# Environment: BENCH_BUILD_DIR (default <repo>/build-release). Needs valgrind (apt-get install valgrind).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
coroutines=${1:-1000}
command -v valgrind >/dev/null || { echo "needs valgrind: apt-get install valgrind" >&2; exit 2; }

BUILD_DIR=${BENCH_BUILD_DIR:-$COROLOCK_ROOT/build-release}
BUILD_TYPE=Release
export BUILD_DIR BUILD_TYPE
"$COROLOCK_ROOT/scripts/build.sh" connection_bench >/dev/null

# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
start_redis >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-instructions.XXXXXX")
trap 'stop_redis; rm -rf "$work"' EXIT

pings() {
  redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' |
    sed -n 's/^cmdstat_ping:calls=\([0-9]*\),.*/\1/p'
}
declare -A ir count
for ms in 1000 4000; do
  redis-cli -p "$REDIS_PORT" CONFIG RESETSTAT >/dev/null
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$ms" \
    "$BUILD_DIR/bench/connection_bench" "$REDIS_URL" --scenarios ping_pipelined \
    --coroutines "$coroutines" --repetitions 1 --warmup-ms 200 --duration-ms "$ms" \
    >"$work/out.$ms" 2>&1
  ir[$ms]=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)/\1/p' "$work/out.$ms")
  count[$ms]=$(pings)
  log "${ms} ms window: ${ir[$ms]} instructions, ${count[$ms]} PINGs"
done
echo "instructions per request ($coroutines coroutines):" \
  $(((ir[4000] - ir[1000]) / (count[4000] - count[1000])))
