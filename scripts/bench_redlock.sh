#!/usr/bin/env bash
# The redlock rows alone: lock_bench's `redlock` scenario (bench/README.md) against three private
# redis-servers, writing bench/results/redlock.json and redlock.md. scripts/bench.sh runs the same
# scenario within the full run.
# Usage: scripts/bench_redlock.sh [--quick] [lock_bench options...]
#   e.g. --repetitions 5, --redlock-hot-duration-ms 4000 (lock_bench --help lists them)
# Environment: BENCH_BUILD_DIR (default <repo>/build-release), BENCH_RESULTS (default
#              bench/results), CMAKE_ARGS (passed to build.sh).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,8p' "${BASH_SOURCE[0]}"
  exit 0
fi

BUILD_DIR=${BENCH_BUILD_DIR:-$COROLOCK_ROOT/build-release}
BUILD_TYPE=Release
export BUILD_DIR BUILD_TYPE
nice -n 10 "$COROLOCK_ROOT/scripts/build.sh" lock_bench
REPORT=("/usr/bin/python3" "$COROLOCK_ROOT/bench/report.py")
results=${BENCH_RESULTS:-$COROLOCK_ROOT/bench/results}
mkdir -p "$results"

# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
start_redis
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-bench-redlock.XXXXXX")
cleanup() {
  stop_redis
  rm -rf "$work"
}
trap cleanup EXIT
start_redis_extra 2
urls=$(IFS=,; echo "$REDIS_URL,${REDIS_EXTRA_URLS[*]}")

machine=$work/machine.jsonl
# shellcheck source=lib/bench_machine.sh
source "$COROLOCK_ROOT/scripts/lib/bench_machine.sh"
record_machine "$machine"
set_machine "$machine" redlock_servers "3 redis-servers on loopback, persistence off; the mutex on the first"
set_machine "$machine" loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
run_start=$SECONDS
"$BUILD_DIR/bench/lock_bench" "$REDIS_URL" --scenarios redlock --redlock-urls "$urls" \
  --out "$work/lock_bench.jsonl" "$@"
set_machine "$machine" loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
set_machine "$machine" run_seconds "$((SECONDS - run_start))"
stop_redis

intro="Produced by \`scripts/bench_redlock.sh $*\` (lock_bench's \`redlock\` scenario, which \
\`scripts/bench.sh\` also runs; no redis-benchmark ceilings in this run): three private \
redis-servers on loopback, persistence off, the plain mutex on the first of them; every figure \
the median of its repetitions, interleaved. How to read the figures: \`bench/README.md\`."
"${REPORT[@]}" merge --json "$results/redlock.json" --md "$results/redlock.md" --intro "$intro" \
  "$machine" "$work/lock_bench.jsonl"
log "wrote $results/redlock.json, redlock.md"
