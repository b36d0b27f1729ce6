#!/usr/bin/env bash
# Runs the benchmarks (protocol: /work/shared/BENCH.md; what they measure: bench/README.md) and
# writes bench/results/latest.json, latest.md and the charts latest-*.png.
# Usage: scripts/bench.sh [--quick] [--stores] [--rate] [--herd] [--failover]
#   --quick  shorter runs: 3 repetitions, about 5 minutes (311 s on a 2-core VM, 2026-11-27; the
#            full run: 5 repetitions, the peers 3, 31 minutes).
#   --stores the stores' comparison instead (scripts/bench_stores.sh): corolock on Redis,
#            ZooKeeper, etcd, MariaDB and PostgreSQL (BENCH_STORES) and each store's peers, one
#            run, results bench/results/stores.* (BENCH_NAME).
#   --rate   corolock::rate_limiter against a fixed poll instead (scripts/bench_stores.sh --rate):
#            on Redis, MariaDB and PostgreSQL, results bench/results/rate_limiter.* (BENCH_NAME).
#   --herd   store requests per hand-off with 10 and 1 000 waiters instead (scripts/bench_stores.sh
#            --herd): on Redis, ZooKeeper and MariaDB, results bench/results/herd.* (BENCH_NAME).
#   --failover an election's failover after its leader is killed (scripts/bench_stores.sh
#            --failover): every store and the peers kazoo and etcd3, results bench/results/failover.*.
# Environment: BENCH_BUILD_DIR (default <repo>/build-release), BENCH_REPETITIONS (override),
#              BENCH_PEERS=0 (skip the peers), CMAKE_ARGS (passed to build.sh),
#              BENCH_ONLY="connection_bench" (run only these programs), BENCH_NAME (default
#              latest: the results are bench/results/<name>.{json,md} and <name>-*.png).
#   e.g. the connection rows alone: BENCH_ONLY=connection_bench BENCH_PEERS=0 BENCH_NAME=connection
#
# Steps: deps.sh --bench; Release build of the bench programs into their own build dir; a private
# redis-server (persistence off) on a free loopback port; the baselines and ceilings with
# redis-benchmark against that server, before and after the programs (BENCH_PROGRAMS) and the
# peers (bench/peers/run_peers.py); bench/report.py merges the parts, judges the targets, draws the
# charts and prints the tables.
# Every program gets: <redis-url> [--quick] --repetitions N --out <part>; its rows say what they are
# judged against, and report.py merge judges them (MET/MISSED).
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    --stores)
      rest=()
      for x in "$@"; do [[ $x == --stores ]] || rest+=("$x"); done
      exec "$COROLOCK_ROOT/scripts/bench_stores.sh" "${rest[@]}" ;;
    --rate | --herd | --failover) exec "$COROLOCK_ROOT/scripts/bench_stores.sh" "$@" ;;
    -h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "usage: $0 [--quick] [--stores] [--rate] [--herd] [--failover]" >&2; exit 2 ;;
  esac
done

# The benchmark programs, in the order they run. Each is a target in bench/CMakeLists.txt.
BENCH_PROGRAMS=(connection_bench lock_bench)
if [[ -n ${BENCH_ONLY:-} ]]; then
  read -r -a BENCH_PROGRAMS <<<"$BENCH_ONLY"
fi
name=${BENCH_NAME:-latest}

if ((quick)); then
  REPS=${BENCH_REPETITIONS:-3}
  RB_PING_N=20000        # redis-benchmark -c 1: ~1 s each on a 2-core VM
  RB_PIPELINED_N=500000  # -P 16 -c 50: ~1 s each
  PROGRAM_TIMEOUT=240
  RB_EVALSHA_N=10000            # lock_bench ceilings (see the hook in measure_baselines)
  RB_EVALSHA_PIPELINED_N=200000
else
  REPS=${BENCH_REPETITIONS:-5}
  RB_PING_N=100000
  RB_PIPELINED_N=3000000
  PROGRAM_TIMEOUT=1200
  RB_EVALSHA_N=30000
  RB_EVALSHA_PIPELINED_N=300000
fi
# log with the seconds since the run began (the build excluded)
step() { log "$* [$((SECONDS - ${run_start:-0})) s]"; }
quick_flag=()
((quick)) && quick_flag=(--quick)

"$COROLOCK_ROOT/scripts/deps.sh" --bench

# Release build in its own directory (build.sh: BUILD_DIR / BUILD_TYPE).
BUILD_DIR=${BENCH_BUILD_DIR:-$COROLOCK_ROOT/build-release}
BUILD_TYPE=Release
export BUILD_DIR BUILD_TYPE
nice -n 10 "$COROLOCK_ROOT/scripts/build.sh" "${BENCH_PROGRAMS[@]}"
BIN=$BUILD_DIR/bench
REPORT=("/usr/bin/python3" "$COROLOCK_ROOT/bench/report.py") # Debian's python3

run_start=$SECONDS
results=$COROLOCK_ROOT/bench/results
mkdir -p "$results"
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-bench.XXXXXX")
parts=$work/parts
mkdir -p "$parts"
baselines=$parts/baselines.jsonl # redis-benchmark rows: the programs' rows compare with these
: >"$baselines"

# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
start_redis
# Two more servers for lock_bench's redlock scenario (3 masters, the first one the main server);
# without them its rows are skipped, the rest of the run goes on.
redlock_urls=
if start_redis_extra 2; then
  redlock_urls=$(IFS=,; echo "$REDIS_URL,${REDIS_EXTRA_URLS[*]}")
else
  log "no extra redis-servers: lock_bench's redlock rows are skipped"
fi
# redis.sh's EXIT trap only stops the server; this one also removes the work dir.
cleanup() {
  stop_redis
  rm -rf "$work"
}
trap cleanup EXIT

step "machine"
# shellcheck source=lib/bench_machine.sh
source "$COROLOCK_ROOT/scripts/lib/bench_machine.sh"
record_machine "$parts/machine.jsonl" "$quick"

# ---------------------------------------------------------------------------------------------
# redis-benchmark: the baselines and ceilings. They are measured twice, before and after the
# benchmark programs (REPS runs each time), and each figure is the median of all those runs: the
# machine is shared, and load that comes and goes should weigh on both sides of every ratio.

rbdir=$work/redis-benchmark
mkdir -p "$rbdir"
: >"$rbdir/keys"

# rb KEY <report.py import-rb options...> -- <redis-benchmark arguments...>
# Runs redis-benchmark REPS times against the private server (CSV output, kept under KEY);
# import_baselines turns every KEY into median rows (mode "redis-benchmark") and --ceiling entries.
rb() {
  local key=$1 i
  shift
  local import=()
  while (($# > 0)) && [[ $1 != -- ]]; do
    import+=("$1")
    shift
  done
  shift
  if [[ ! -f $rbdir/$key.opts ]]; then
    echo "$key" >>"$rbdir/keys"
    printf '%s\n' "${import[@]}" "--command" "redis-benchmark $*" >"$rbdir/$key.opts"
  fi
  local TIMEFORMAT='%U %S' csv # `time` writes the user and system CPU seconds: <csv>.cpu
  for ((i = 1; i <= REPS; i++)); do
    rb_seq=$((rb_seq + 1))
    csv=$rbdir/$key.$rb_seq.csv
    { time timeout 600 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" --csv "$@" \
      >"$csv" 2>"$csv.err"; } 2>"$csv.cpu"
  done
}
rb_seq=0

import_baselines() {
  local key opts csvs
  while read -r key; do
    readarray -t opts <"$rbdir/$key.opts"
    csvs=("$rbdir/$key".*.csv) # each with its .cpu beside it
    "${REPORT[@]}" import-rb --out "$baselines" "${opts[@]}" "${csvs[@]}"
  done <"$rbdir/keys"
}

# evalsha_ceiling SHA NUMKEYS KEY... ARG...
#   The EVALSHA ceilings of BENCH.md: redis-benchmark runs `EVALSHA SHA NUMKEYS KEY... ARG...`
#   with one client (-> ceiling.evalsha_one_client_per_s, row evalsha_one_client) and pipelined
#   with many (-P 16 -c 50 -> ceiling.evalsha_pipelined_per_s, row evalsha_pipelined). A
#   `__rand_int__` in an argument becomes a random 12-digit number per call (-r 1000000): use it
#   in the key for "many keys". Load the script first:  sha=$(load_script path/to/acquire.lua)
#   Programs compare with these rows by name (bench::comparison{.baseline_name = ...}).
evalsha_ceiling() {
  local sha=$1
  shift
  rb evalsha_one_client --name evalsha_one_client --connections 1 --pipeline 1 \
    --keys 1000000 --requests "$RB_PING_N" --ceiling evalsha_one_client_per_s=ops_per_s \
    -- -c 1 -n "$RB_PING_N" -r 1000000 EVALSHA "$sha" "$@"
  rb evalsha_pipelined --name evalsha_pipelined --connections 50 --pipeline 16 \
    --keys 1000000 --requests "$RB_PIPELINED_N" --ceiling evalsha_pipelined_per_s=ops_per_s \
    -- -P 16 -c 50 -n "$RB_PIPELINED_N" -r 1000000 EVALSHA "$sha" "$@"
}

# load_script FILE...: SCRIPT LOAD of the files joined (as src/backends/redis/scripts.cpp joins
# lock_common.lua and a lock script) on the private server; prints the SHA1.
load_script() {
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SCRIPT LOAD "$(cat "$@")"
}

measure_baselines() {
  rb ping_latency --name ping_latency --connections 1 --pipeline 1 --keys 0 \
    --requests "$RB_PING_N" --ceiling ping_rtt_us=p50_us --ceiling ping_one_client_per_s=ops_per_s \
    -- -c 1 -n "$RB_PING_N" -t ping_mbulk
  rb ping_pipelined --name ping_pipelined --connections 50 --pipeline 16 --keys 0 \
    --requests "$RB_PIPELINED_N" --ceiling ping_pipelined_per_s=ops_per_s \
    -- -P 16 -c 50 -n "$RB_PIPELINED_N" -t ping_mbulk
  rb set_pipelined --name set_pipelined --connections 50 --pipeline 16 --keys 1 \
    --requests "$RB_PIPELINED_N" \
    -- -P 16 -c 50 -n "$RB_PIPELINED_N" -t set

  # ======================= HOOK for the lock benchmarks =======================================
  # (lock_bench) EVALSHA of the acquire script (src/backends/redis/lua/lock_common.lua + acquire.lua) exactly as
  # an uncontended first look sends it: 4 keys — the lock, new on every call (two __rand_int__
  # make 10^12 names, so every call is a fresh acquisition), and the fence and the two queue keys,
  # shared as a lock's are — then owner, lease (30000 ms, the default), 'try', waiter_ttl, channel
  # and 'publish'. Fewer requests than PING/SET (RB_EVALSHA_*): each call leaves a key with a 30 s
  # lease, and FLUSHALL SYNC removes them afterwards (the private server keeps nothing else) so
  # that their expiry does not load the server while the programs run.
  local acquire_sha
  acquire_sha=$(load_script "$COROLOCK_ROOT/src/backends/redis/lua/lock_common.lua" "$COROLOCK_ROOT/src/backends/redis/lua/acquire.lua")
  RB_PING_N=$RB_EVALSHA_N RB_PIPELINED_N=$RB_EVALSHA_PIPELINED_N evalsha_ceiling "$acquire_sha" \
    4 'corolock:{bench:ceiling:__rand_int__:__rand_int__}' 'corolock:{bench:ceiling}:fence' \
    'corolock:{bench:ceiling}:q' 'corolock:{bench:ceiling}:qx' \
    0123456789abcdef0123456789abcdef:1:2000 30000 try 10000 'corolock:{bench:ceiling}:ch' publish
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" FLUSHALL SYNC >/dev/null
  # =============================================================================================
}

"${REPORT[@]}" set --out "$parts/machine.jsonl" machine loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
step "baselines: redis-benchmark, before the programs ($REPS runs each)"
measure_baselines

# ---------------------------------------------------------------------------------------------
# The benchmark programs

for program in "${BENCH_PROGRAMS[@]}"; do
  step "$program"
  program_args=()
  [[ $program == lock_bench ]] && program_args=(--redlock-urls "$redlock_urls")
  timeout "$PROGRAM_TIMEOUT" "$BIN/$program" "$REDIS_URL" "${quick_flag[@]}" \
    --repetitions "$REPS" --out "$parts/$program.jsonl" "${program_args[@]}"
done

if [[ ${BENCH_PEERS:-1} != 0 ]]; then
  step "peers (bench/peers: redis-semaphore, redlock, redis-py)"
  # A peer that fails costs its rows, not the run's.
  timeout "$PROGRAM_TIMEOUT" /usr/bin/python3 "$COROLOCK_ROOT/bench/peers/run_peers.py" "$REDIS_URL" \
    "${quick_flag[@]}" --repetitions "$((REPS < 3 ? REPS : 3))" --out "$parts/peers.jsonl" ||
    log "peers failed (exit $?): no peer rows in this run"
fi

step "baselines: redis-benchmark, after the programs ($REPS runs each)"
measure_baselines
import_baselines
"${REPORT[@]}" set --out "$parts/machine.jsonl" machine loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"

stop_redis
measured=$((SECONDS - run_start))

step "report"
parts_files=("$parts/machine.jsonl" "$baselines")
for program in "${BENCH_PROGRAMS[@]}" peers; do
  [[ -f $parts/$program.jsonl ]] && parts_files+=("$parts/$program.jsonl")
done
"${REPORT[@]}" set --out "$parts/machine.jsonl" machine run_seconds "$measured"
"${REPORT[@]}" merge --json "$results/$name.json" --md "$results/$name.md" --charts "$results" \
  "${parts_files[@]}"
step "wrote $results/$name.json, $name.md, $name-*.png (run: ${measured} s, build excluded)"
