#!/usr/bin/env bash
# Instructions the client spends per request, independent of the machine's load, by callgrind
# against a private redis-server, a short and a long run each: (instructions of the long run - of
# the short run) / (requests the server counted in the long run - in the short run). The difference
# cancels start-up and the report.
#   default  connection_bench's ping_pipelined (COROUTINES, default 1000): per pipelined PING.
#   --lock   lock_bench's uncontended_latency (one coroutine: acquire, release, on one key), 1 000
#            and 4 000 cycles: per lock cycle, counted as the server's EVALSHA calls / 2.
#   --postgres  the same cycle on a private PostgreSQL (bench_servers), counted as the cycles asked
#            (lock_bench runs exactly --latency-cycles after its warm-up).
# Usage: scripts/bench_instructions.sh [--lock | --postgres | COROUTINES]
# Environment: BENCH_OBSERVER=empty (--lock, --postgres: the client tells a lock_observer that does
# nothing: what an observer costs); BENCH_BUILD_DIR (default <repo>/build-release); SKIP_BUILD=1 uses the binaries there
# as they are (e.g. another checkout's, to compare two commits). Needs valgrind (apt-get install
# valgrind).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
lock=0
postgres=0
coroutines=1000
case ${1:-} in
  --lock) lock=1 ;;
  --postgres) lock=1 postgres=1 ;;
  '') ;;
  *[!0-9]* | 0) echo "usage: $0 [--lock | --postgres | COROUTINES]" >&2; exit 2 ;;
  *) coroutines=$1 ;;
esac
command -v valgrind >/dev/null || { echo "needs valgrind: apt-get install valgrind" >&2; exit 2; }

BUILD_DIR=${BENCH_BUILD_DIR:-$COROLOCK_ROOT/build-release}
BUILD_TYPE=Release
export BUILD_DIR BUILD_TYPE
program=connection_bench
((lock)) && program=lock_bench
extra=()
((postgres)) && extra=(bench_servers)
[[ -n ${SKIP_BUILD:-} ]] || "$COROLOCK_ROOT/scripts/build.sh" "$program" "${extra[@]}" >/dev/null

# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-instructions.XXXXXX")
servers_pid=
if ((postgres)); then
  # bench_servers prints "postgres <url>", then "ready"; it stops the server at SIGTERM.
  coproc SERVERS { exec "$BUILD_DIR/bench/bench_servers" postgres; }
  # shellcheck disable=SC2153  # SERVERS_PID: set by coproc
  servers_pid=$SERVERS_PID
  read -r -u "${SERVERS[0]}" _ store_url
  read -r -u "${SERVERS[0]}" _
  trap 'kill -TERM "$servers_pid" 2>/dev/null; wait "$servers_pid" 2>/dev/null; rm -rf "$work"' EXIT
else
  start_redis >/dev/null
  trap 'stop_redis; rm -rf "$work"' EXIT
fi

# calls of one command the server counted since the last CONFIG RESETSTAT
calls() {
  redis-cli -p "$REDIS_PORT" INFO commandstats | tr -d '\r' |
    sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p"
}
declare -A ir count
for size in 1000 4000; do
  ((postgres)) || redis-cli -p "$REDIS_PORT" CONFIG RESETSTAT >/dev/null
  if ((postgres)); then
    run=("$BUILD_DIR/bench/lock_bench" "$store_url" --backend postgres --scenarios uncontended_latency
      --quick --repetitions 1 --latency-cycles "$size" --observer "${BENCH_OBSERVER:-none}")
  elif ((lock)); then
    run=("$BUILD_DIR/bench/lock_bench" "$REDIS_URL" --scenarios uncontended_latency --quick
      --repetitions 1 --latency-cycles "$size" --observer "${BENCH_OBSERVER:-none}")
  else
    run=("$BUILD_DIR/bench/connection_bench" "$REDIS_URL" --scenarios ping_pipelined
      --coroutines "$coroutines" --repetitions 1 --warmup-ms 200 --duration-ms "$size")
  fi
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.$size" "${run[@]}" >"$work/out.$size" 2>&1 ||
    { cat "$work/out.$size" >&2; exit 1; }
  ir[$size]=$(sed -n 's/^==[0-9]*== Collected : \([0-9]*\)/\1/p' "$work/out.$size")
  if ((postgres)); then
    count[$size]=$size
    log "$size cycles: ${ir[$size]} instructions"
  elif ((lock)); then
    evalsha=$(calls evalsha)
    count[$size]=$((${evalsha:-0} / 2))
    log "$size cycles asked: ${ir[$size]} instructions, ${count[$size]} cycles (EVALSHA / 2)"
  else
    count[$size]=$(calls ping)
    log "$size ms window: ${ir[$size]} instructions, ${count[$size]} PINGs"
  fi
done
((count[4000] > count[1000])) || { echo "the long run served no more requests than the short" >&2; exit 1; }
if ((postgres)); then
  echo "instructions per uncontended PostgreSQL lock cycle:" $(((ir[4000] - ir[1000]) / (count[4000] - count[1000])))
elif ((lock)); then
  echo "instructions per uncontended lock cycle:" $(((ir[4000] - ir[1000]) / (count[4000] - count[1000])))
else
  echo "instructions per request ($coroutines coroutines):" \
    $(((ir[4000] - ir[1000]) / (count[4000] - count[1000])))
fi
