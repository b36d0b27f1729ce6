#!/usr/bin/env bash
# The stores' comparison: corolock (lock_bench --backend) on Redis, ZooKeeper, etcd, MariaDB and
# PostgreSQL on the same workloads, and each store's peers (bench/peers/run_peers.py --store), in
# one run; writes bench/results/<name>.json, <name>.md and <name>-stores.png (name: BENCH_NAME,
# default stores). scripts/bench.sh --stores runs this.
# --rate: corolock::rate_limiter against a fixed poll instead (rate_bench --backend: accuracy,
# store requests and CPU per admission; bench/README.md, "Rate limiter"), on Redis, MariaDB and
# PostgreSQL (ZooKeeper keeps no bucket), no peers; name default rate_limiter, no chart.
# scripts/bench.sh --rate runs this.
# --herd: store requests per hand-off against the number of waiters instead (herd_bench --backend:
# 10 and 1 000 waiters on 4 clients and on a client each, mutex and semaphore; the opening comment
# of bench/herd_bench.cpp), on Redis, ZooKeeper and MariaDB (PostgreSQL has no clean request
# count), no peers; name default herd, no chart. scripts/bench.sh --herd runs this.
# --failover: an election's failover after its leader's process is killed, against the lease or
# session timeout (failover_bench --backend: the opening comment of bench/failover_bench.cpp), on
# every store, with the peers of bench/peers/failover_peer.py (kazoo's Election, etcd3's Lock);
# name default failover, no chart. scripts/bench.sh --failover runs this.
# Usage: scripts/bench_stores.sh [--quick] [--rate|--herd|--failover]
# Environment: BENCH_BUILD_DIR (default <repo>/build-release), BENCH_BUILD_TYPE (default Release),
#              BENCH_REPETITIONS (default 3), BENCH_STORES (default "redis zookeeper etcd mysql
#              postgres"; --rate "redis mysql postgres"; --herd "redis zookeeper mysql"),
#              BENCH_PEERS=0 (no peers), BENCH_NAME (default stores; --rate rate_limiter; --herd
#              herd), BENCH_NOTE (a sentence for the results' notes, e.g. the machine's load),
#              CMAKE_ARGS (passed to build.sh).
#
# Servers: a private redis-server (scripts/lib/redis.sh) and bench_servers, which starts ZooKeeper,
# etcd, MariaDB and PostgreSQL with the test fixtures (loopback, free ports, temporary directories) and
# stops them when this script ends. Workloads (bench/README.md, "Stores"): uncontended latency (one
# coroutine) and throughput (1 000 coroutines, 10 000 locks), hot key 4 x 1, 1 000 waiters in 1 and
# over 4 processes, fairness 4 x 8; corolock's own waiting only (--modes pubsub: pub/sub, watch or
# server-side wait by store); the peers bring the polling forms.
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

quick=0 rate=0 herd=0 failover=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    --rate) rate=1 ;;
    --herd) herd=1 ;;
    --failover) failover=1 ;;
    -h | --help) sed -n '2,31p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "usage: $0 [--quick] [--rate|--herd|--failover]" >&2; exit 2 ;;
  esac
done
REPS=${BENCH_REPETITIONS:-3}
if ((rate)); then
  program=rate_bench all_stores="redis mysql postgres" name=${BENCH_NAME:-rate_limiter}
  deps=()
elif ((herd)); then
  program=herd_bench all_stores="redis zookeeper mysql" name=${BENCH_NAME:-herd}
  deps=()
elif ((failover)); then
  program=failover_bench all_stores="redis zookeeper etcd mysql postgres" name=${BENCH_NAME:-failover}
  deps=(--bench) # the peers
else
  program=lock_bench all_stores="redis zookeeper etcd mysql postgres" name=${BENCH_NAME:-stores}
  deps=(--bench) # the peers, the chart
fi
read -r -a stores <<<"${BENCH_STORES:-$all_stores}"
quick_flag=()
((quick)) && quick_flag=(--quick)
note=${BENCH_NOTE:-"The 2-core machine was shared with other engineers' builds during the run: \
absolute figures are noisy (see loadavg_1m on each row); compare within this run, by ratio."}

"$COROLOCK_ROOT/scripts/deps.sh" "${deps[@]}"
BUILD_DIR=${BENCH_BUILD_DIR:-$COROLOCK_ROOT/build-release}
BUILD_TYPE=${BENCH_BUILD_TYPE:-Release}
export BUILD_DIR BUILD_TYPE
nice -n 10 "$COROLOCK_ROOT/scripts/build.sh" "$program" bench_servers
BIN=$BUILD_DIR/bench
REPORT=("/usr/bin/python3" "$COROLOCK_ROOT/bench/report.py")
results=$COROLOCK_ROOT/bench/results
mkdir -p "$results"
work=$(mktemp -d "${TMPDIR:-/tmp}/corolock-bench-stores.XXXXXX")
parts=$work/parts
mkdir -p "$parts"

# shellcheck source=lib/redis.sh
source "$COROLOCK_ROOT/scripts/lib/redis.sh"
declare -A url
others=()
for s in "${stores[@]}"; do
  case $s in
    redis) start_redis; url[redis]=$REDIS_URL ;;
    zookeeper | etcd | mysql | postgres) others+=("$s") ;;
    *) echo "bench_stores.sh: unknown store '$s' (redis zookeeper etcd mysql postgres)" >&2; exit 2 ;;
  esac
done
servers_pid=
cleanup() {
  if [[ -n $servers_pid ]]; then
    kill -TERM "$servers_pid" 2>/dev/null || true
    wait "$servers_pid" 2>/dev/null || true
  fi
  stop_redis
  rm -rf "$work"
}
trap cleanup EXIT
if ((${#others[@]})); then
  # bench_servers prints "<store> <url>" per server, then "ready"; it stops them at SIGTERM or
  # when its input closes (this script's end).
  coproc SERVERS { exec "$BIN/bench_servers" "${others[@]}"; }
  # shellcheck disable=SC2153  # SERVERS_PID: set by coproc
  servers_pid=$SERVERS_PID
  while read -r -u "${SERVERS[0]}" store u; do
    [[ $store == ready ]] && break
    url[$store]=$u
    log "$store: $u"
  done
  for s in "${others[@]}"; do
    [[ -n ${url[$s]:-} ]] || { echo "bench_stores.sh: $s did not start" >&2; exit 1; }
  done
fi

run_start=$SECONDS
step() { log "$* [$((SECONDS - run_start)) s]"; }
machine=$parts/machine.jsonl
# shellcheck source=lib/bench_machine.sh
source "$COROLOCK_ROOT/scripts/lib/bench_machine.sh"
record_machine "$machine" "$quick"
postgres_version() {
  local v=(/usr/lib/postgresql/*)
  basename "${v[-1]}"
}
set_machine "$machine" stores "${stores[*]}"
set_machine "$machine" servers "redis-server $(redis-server --version | grep -o 'v=[^ ]*' | cut -d= -f2); \
ZooKeeper 3.8 standalone; etcd $(etcd --version | sed -n 's/^etcd Version: //p') one member; MariaDB $(mariadbd --version | grep -o '[0-9]*\.[0-9]*\.[0-9]*-MariaDB' || true); \
PostgreSQL $(postgres_version) — each private, on loopback"
set_machine "$machine" note "$note"
set_machine "$machine" build_type "$BUILD_TYPE"
# The command as run: the environment that chose what ran, then the script.
command=
for v in BENCH_BUILD_DIR BENCH_BUILD_TYPE BENCH_REPETITIONS BENCH_STORES BENCH_PEERS BENCH_NAME; do
  [[ -z ${!v:-} ]] || command+="$v=${!v} "
done
mode=--stores
((rate)) && mode=--rate
((herd)) && mode=--herd
((failover)) && mode=--failover
command+="scripts/bench.sh $mode"
((quick)) && command+=" --quick"
set_machine "$machine" command "$command"
set_machine "$machine" loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"

# The same workloads on every store (lock_bench --help): corolock's own waiting only.
if ((quick)); then cycles=500; else cycles=2000; fi
# shellcheck disable=SC2054  # the commas are lock_bench's lists
workloads=(--scenarios uncontended_latency,uncontended_throughput,hot_key,hot_key_waiters,fairness
  --modes pubsub --hot-shapes 4x1 --waiters 1000 --waiter-processes 1,4 --latency-cycles "$cycles")
part_files=("$machine")
for s in "${stores[@]}"; do
  if ((herd)); then
    # herd_bench's workload (--help): 10 and 1 000 waiters, 50 hand-offs of 1 ms each, each row
    # at most 300 s (the ZooKeeper semaphore with a session per waiter: ~30 s a repetition).
    step "herd_bench --backend $s"
    timeout 3600 "$BIN/herd_bench" "${url[$s]}" --backend "$s" "${quick_flag[@]}" \
      --repetitions "$REPS" --out "$parts/herd_bench-$s.jsonl"
    part_files+=("$parts/herd_bench-$s.jsonl")
    continue
  fi
  if ((failover)); then
    # failover_bench's workload (--help): 20 rounds (quick 3), a 3 s lease or session timeout.
    step "failover_bench --backend $s"
    timeout 1200 "$BIN/failover_bench" "${url[$s]}" --backend "$s" "${quick_flag[@]}" \
      --out "$parts/failover_bench-$s.jsonl"
    part_files+=("$parts/failover_bench-$s.jsonl")
    if [[ ${BENCH_PEERS:-1} != 0 && ( $s == zookeeper || $s == etcd ) ]]; then
      step "failover peer of $s"
      timeout 1200 /usr/bin/python3 "$COROLOCK_ROOT/bench/peers/failover_peer.py" "${url[$s]}" --store "$s" \
        "${quick_flag[@]}" --out "$parts/failover_peer-$s.jsonl" ||
        log "failover peer of $s failed (exit $?): no peer row for it in this run"
      [[ -f $parts/failover_peer-$s.jsonl ]] && part_files+=("$parts/failover_peer-$s.jsonl")
    fi
    continue
  fi
  if ((rate)); then
    # rate_bench's workload (--help): 4 x 16 callers on one bucket of 500/s, burst 50, 10 s
    # (quick 4 s); corolock's acquire and try_acquire + sleep 10 ms, interleaved.
    step "rate_bench --backend $s"
    timeout 600 "$BIN/rate_bench" "${url[$s]}" --backend "$s" "${quick_flag[@]}" \
      --repetitions "$REPS" --out "$parts/rate_bench-$s.jsonl"
    part_files+=("$parts/rate_bench-$s.jsonl")
    continue
  fi
  step "lock_bench --backend $s"
  timeout 1200 "$BIN/lock_bench" "${url[$s]}" --backend "$s" "${quick_flag[@]}" \
    --repetitions "$REPS" --out "$parts/lock_bench-$s.jsonl" "${workloads[@]}"
  part_files+=("$parts/lock_bench-$s.jsonl")
  if [[ ${BENCH_PEERS:-1} != 0 && $s != redis ]]; then
    step "peers of $s"
    # A peer that fails costs its rows, not the run's.
    timeout 1200 /usr/bin/python3 "$COROLOCK_ROOT/bench/peers/run_peers.py" "${url[$s]}" --store "$s" \
      "${quick_flag[@]}" --repetitions "$REPS" --out "$parts/peers-$s.jsonl" ||
      log "peers of $s failed (exit $?): no peer rows for it in this run"
    [[ -f $parts/peers-$s.jsonl ]] && part_files+=("$parts/peers-$s.jsonl")
  fi
done
set_machine "$machine" loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
set_machine "$machine" run_seconds "$((SECONDS - run_start))"

step "report"
if ((herd)); then
  "${REPORT[@]}" merge --herd --json "$results/$name.json" --md "$results/$name.md" "${part_files[@]}"
  step "wrote $results/$name.json, $name.md"
  exit 0
fi
if ((failover)); then
  "${REPORT[@]}" merge --failover --json "$results/$name.json" --md "$results/$name.md" "${part_files[@]}"
  step "wrote $results/$name.json, $name.md"
  exit 0
fi
if ((rate)); then
  "${REPORT[@]}" merge --rate --json "$results/$name.json" --md "$results/$name.md" "${part_files[@]}"
  step "wrote $results/$name.json, $name.md"
  exit 0
fi
"${REPORT[@]}" merge --stores --json "$results/$name.json" --md "$results/$name.md" \
  --charts "$results" "${part_files[@]}"
step "wrote $results/$name.json, $name.md, $name-stores.png"
