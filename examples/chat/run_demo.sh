#!/usr/bin/env bash
# The chat demo, end to end: three chat_server instances share one Redis; chat_load drives users
# on all of them; the announcer is killed with SIGKILL mid-load and another instance must take over
# within two leases; the next announcer is frozen with SIGSTOP past its lease and must notice on
# waking; the one after is stopped with SIGTERM and must hand over at once; finally chat_load
# checks every invariant from what Redis recorded.
#
#   examples/chat/run_demo.sh [--bin-dir DIR] [--lease-ms 1000] [--duration-ms 5000]
#                             [--users 18] [--rooms 3] [--contests 4] [--keep-logs]
#
# Uses $REDIS_URL if set (under a private key prefix), else starts its own redis-server on a free
# loopback port ($COROLOCK_REDIS_SERVER may name the binary). Needs redis-cli. Prints PASS/FAIL
# lines and a summary; exits non-zero on any failure. Every process it starts is stopped on exit.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN_DIR=$ROOT/build/examples/chat
LEASE_MS=1000
DURATION_MS=5000
USERS=18
ROOMS=3
CONTESTS=4
KEEP_LOGS=0
INSTANCES=3

while [[ $# -gt 0 ]]; do
  case $1 in
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --lease-ms) LEASE_MS=$2; shift 2 ;;
    --duration-ms) DURATION_MS=$2; shift 2 ;;
    --users) USERS=$2; shift 2 ;;
    --rooms) ROOMS=$2; shift 2 ;;
    --contests) CONTESTS=$2; shift 2 ;;
    --keep-logs) KEEP_LOGS=1; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "run_demo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

SERVER=$BIN_DIR/chat_server
LOAD=$BIN_DIR/chat_load
for exe in "$SERVER" "$LOAD"; do
  [[ -x $exe ]] || { echo "run_demo.sh: $exe not found; build chat_server and chat_load" >&2; exit 2; }
done
command -v redis-cli >/dev/null || { echo "run_demo.sh: redis-cli not found" >&2; exit 2; }

now_ms() { date +%s%3N; }
say() { printf '==> %s\n' "$*"; }
PASSES=0
FAILS=0
pass() { PASSES=$((PASSES + 1)); printf 'PASS %s\n' "$*"; }
fail() { FAILS=$((FAILS + 1)); printf 'FAIL %s\n' "$*"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/chat-demo.XXXXXX")
declare -a PIDS=() PORTS=()
LOAD_PID=
FROZEN=
STARTED_REDIS=0

cleanup() {
  local rc=$?
  set +e
  [[ -n $LOAD_PID ]] && kill -KILL "$LOAD_PID" 2>/dev/null
  [[ -n $FROZEN ]] && kill -CONT "$FROZEN" 2>/dev/null
  local pid
  for pid in "${PIDS[@]}"; do
    [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${PIDS[@]}"; do
    [[ -z $pid ]] && continue
    for _ in {1..100}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  [[ -n $LOAD_PID ]] && wait "$LOAD_PID" 2>/dev/null
  if [[ $rc -ne 0 ]]; then
    local log
    for log in "$WORK"/instance*.log; do
      [[ -f $log ]] || continue
      echo "---- last lines of $(basename "$log") ----"
      tail -n 25 "$log"
    done
  fi
  if [[ $STARTED_REDIS -eq 1 ]]; then
    stop_redis
  elif [[ $KEEP_LOGS -eq 0 && -n ${PREFIX:-} ]]; then # the caller's Redis: remove our keys
    { rcli --scan --pattern "${PREFIX}*"; rcli --scan --pattern "corolock:{${PREFIX}*"; } |
      xargs -r -n 100 redis-cli -u "$REDIS_URL" DEL >/dev/null 2>&1
  fi
  if [[ $KEEP_LOGS -eq 1 ]]; then echo "logs kept in $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}

rcli() { redis-cli -u "$REDIS_URL" "$@" 2>/dev/null; }

# Redis: the caller's (under a private key prefix, so runs never see each other's keys) or our own.
if [[ -n ${REDIS_URL:-} ]]; then
  PREFIX="chat:demo$$-$(now_ms):"
else
  # shellcheck source=/dev/null  # scripts/lib/redis.sh: start_redis, stop_redis
  source "$ROOT/scripts/lib/redis.sh"
  if ! start_redis >/dev/null 2>"$WORK/redis-start.log"; then
    cat "$WORK/redis-start.log" >&2
    rm -rf "$WORK"
    exit 1
  fi
  STARTED_REDIS=1
  PREFIX="chat:"
fi
trap cleanup EXIT  # replaces redis.sh's trap; cleanup calls stop_redis
trap 'exit 130' INT
trap 'exit 143' TERM
say "redis at $REDIS_URL, key prefix $PREFIX, announcer lease $LEASE_MS ms"

# wait_until TIMEOUT_MS command...: retries the command every 20 ms until it succeeds or time is up.
wait_until() {
  local deadline=$(( $(now_ms) + $1 ))
  shift
  while (( $(now_ms) < deadline )); do
    "$@" && return 0
    sleep 0.02
  done
  return 1
}

# 1. Three instances, each on a port the kernel picks (no race for free ports).
for i in $(seq 1 $INSTANCES); do
  "$SERVER" --port 0 --redis-url "$REDIS_URL" --name "instance$i" --key-prefix "$PREFIX" \
    --announce-lease-ms "$LEASE_MS" </dev/null >"$WORK/instance$i.log" 2>&1 &
  PIDS[i]=$!
done
listening() { grep -q 'listening on' "$WORK/instance$1.log" || ! kill -0 "${PIDS[$1]}" 2>/dev/null; }
for i in $(seq 1 $INSTANCES); do
  wait_until 20000 listening "$i" || true
  PORTS[i]=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$WORK/instance$i.log" | head -n 1)
  if [[ -z ${PORTS[i]} ]]; then
    fail "instance$i did not start"
    exit 1
  fi
done
SERVERS=$(for i in $(seq 1 $INSTANCES); do printf '127.0.0.1:%s,' "${PORTS[i]}"; done)
SERVERS=${SERVERS%,}
say "instances listening on $SERVERS"

announcer() { rcli GET "${PREFIX}announcer" | cut -d' ' -f1; }
has_announcer() { [[ -n $(announcer) ]]; }
if ! wait_until 15000 has_announcer; then
  fail "no instance became the announcer"
  exit 1
fi
say "first announcer: $(announcer)"

# 2. The load, in the background; the announcer dies while it runs.
"$LOAD" load --servers "$SERVERS" --users "$USERS" --rooms "$ROOMS" --contests "$CONTESTS" \
  --duration-ms "$DURATION_MS" >"$WORK/load.out" 2>&1 &
LOAD_PID=$!
busy() {
  local n
  n=$(rcli HGET "${PREFIX}stats" messages)
  [[ $n =~ ^[0-9]+$ ]] && (( n >= 40 )) && return 0
  ! kill -0 "$LOAD_PID" 2>/dev/null
}
wait_until 30000 busy || true
if ! kill -0 "$LOAD_PID" 2>/dev/null; then
  cat "$WORK/load.out"
  fail "the load ended before the kill"
  exit 1
fi

VICTIM=$(announcer)
VICTIM_INDEX=${VICTIM#instance}
say "$(rcli HGET "${PREFIX}stats" messages) messages so far; killing the announcer $VICTIM (pid ${PIDS[VICTIM_INDEX]}) with SIGKILL"
KILL_MS=$(now_ms)
kill -KILL "${PIDS[VICTIM_INDEX]}"
wait "${PIDS[VICTIM_INDEX]}" 2>/dev/null || true
PIDS[VICTIM_INDEX]=
taken_over() { local a; a=$(announcer); [[ -n $a && $a != "$VICTIM" ]]; }
if wait_until $((4 * LEASE_MS + 5000)) taken_over; then
  TAKEOVER_MS=$(( $(now_ms) - KILL_MS ))
  SUCCESSOR=$(announcer)
  say "$SUCCESSOR took over; observed $TAKEOVER_MS ms after the kill (lease $LEASE_MS ms)"
else
  fail "nobody took over from $VICTIM within $((4 * LEASE_MS + 5000)) ms"
  exit 1
fi

# 3. The load finishes (and checks fan-out, nickname contests and crash recovery of names).
load_done() { ! kill -0 "$LOAD_PID" 2>/dev/null; }
if ! wait_until $((DURATION_MS + 60000)) load_done; then
  fail "the load did not finish"
  exit 1
fi
LOAD_RC=0
wait "$LOAD_PID" || LOAD_RC=$?
LOAD_PID=
say "chat_load load (exit $LOAD_RC):"
cat "$WORK/load.out"

# 4. A paused announcer (a long GC pause, a frozen VM) loses its lease while it cannot run. When
#    it wakes it must find out and stop: the watchdog marks its guard lost, and a digest it still
#    sends carries an old fencing token that Redis refuses.
PAUSED=$SUCCESSOR
PAUSED_INDEX=${PAUSED#instance}
say "freezing the announcer $PAUSED with SIGSTOP"
PAUSE_MS=$(now_ms)
kill -STOP "${PIDS[PAUSED_INDEX]}"
FROZEN=${PIDS[PAUSED_INDEX]}
replaced() { local a; a=$(announcer); [[ -n $a && $a != "$PAUSED" ]]; }
if wait_until $((4 * LEASE_MS + 5000)) replaced; then
  NEXT=$(announcer)
  say "$NEXT took over; observed $(( $(now_ms) - PAUSE_MS )) ms after the freeze"
else
  fail "nobody took over from the frozen $PAUSED"
  exit 1
fi
sleep "$(awk "BEGIN { print $LEASE_MS / 1000 }")"  # the new announcer posts while the old one is frozen
kill -CONT "$FROZEN"
FROZEN=
noticed() { grep -q -E 'announcer leadership lost|stepping down' "$WORK/$PAUSED.log"; }
if wait_until 10000 noticed; then
  pass "$PAUSED, woken, saw that it had lost the lease: $(grep -h -E 'announcer leadership lost|stepping down' "$WORK/$PAUSED.log" | tail -n 1 | sed 's/^\[[^]]*\] //')"
else
  fail "$PAUSED did not notice that it lost the announcer lease while frozen"
fi

# 5. A clean stop hands the role over at once: the release publishes, a waiter wakes.
NEXT_INDEX=${NEXT#instance}
say "stopping the announcer $NEXT with SIGTERM"
TERM_MS=$(now_ms)
kill -TERM "${PIDS[NEXT_INDEX]}"
handed_over() { local a; a=$(announcer); [[ -n $a && $a != "$NEXT" ]]; }
if wait_until $((4 * LEASE_MS + 5000)) handed_over; then
  HANDOFF_MS=$(( $(now_ms) - TERM_MS ))
  LAST=$(announcer)
  say "$LAST took over; observed $HANDOFF_MS ms after SIGTERM"
else
  fail "nobody took over from $NEXT after SIGTERM"
  exit 1
fi
exited() { ! kill -0 "${PIDS[$1]}" 2>/dev/null; }
if wait_until 15000 exited "$NEXT_INDEX"; then
  RC=0
  wait "${PIDS[NEXT_INDEX]}" || RC=$?
  PIDS[NEXT_INDEX]=
  if [[ $RC -eq 0 ]]; then
    pass "$NEXT stopped cleanly on SIGTERM (exit 0)"
  else
    fail "$NEXT exited with $RC on SIGTERM"
  fi
else
  fail "$NEXT did not stop within 15 s of SIGTERM"
fi
if [[ $(rcli EXISTS "${PREFIX}alive:$NEXT") == 0 ]]; then
  pass "$NEXT removed its heartbeat on the way out"
else
  fail "$NEXT left its heartbeat behind"
fi
digest_by_last() { rcli LRANGE "${PREFIX}digest" -1 -1 | grep -q " $LAST "; }
wait_until 5000 digest_by_last || true

# 6. The invariants, from Redis.
say "chat_load check:"
CHECK_RC=0
"$LOAD" check --redis-url "$REDIS_URL" --key-prefix "$PREFIX" --lease-ms "$LEASE_MS" \
  --killed "$VICTIM" --kill-ms "$KILL_MS" --paused "$PAUSED" --pause-ms "$PAUSE_MS" \
  --terminated "$NEXT" --term-ms "$TERM_MS" \
  >"$WORK/check.out" 2>&1 || CHECK_RC=$?
cat "$WORK/check.out"

# 7. The last instance stops cleanly and leaves no lock behind.
LAST_INDEX=${LAST#instance}
kill -TERM "${PIDS[LAST_INDEX]}"
if wait_until 15000 exited "$LAST_INDEX"; then
  RC=0
  wait "${PIDS[LAST_INDEX]}" || RC=$?
  PIDS[LAST_INDEX]=
  if [[ $RC -eq 0 ]]; then pass "$LAST stopped cleanly on SIGTERM (exit 0)"; else fail "$LAST exited with $RC"; fi
else
  fail "$LAST did not stop within 15 s of SIGTERM"
fi
LEFT=$(rcli --scan --pattern "corolock:{${PREFIX}*}" | grep -v ':fence$' | tr '\n' ' ' || true)
if [[ -z ${LEFT// /} ]]; then pass "no lock left held in Redis"; else fail "locks left behind: $LEFT"; fi

say "announcer transitions (from the instances' logs):"
grep -h -E 'announcer|signal' "$WORK"/instance*.log | sed 's/^/    /' || true

P=$(cat "$WORK/load.out" "$WORK/check.out" | grep -c '^PASS' || true)
F=$(cat "$WORK/load.out" "$WORK/check.out" | grep -c '^FAIL' || true)
PASSES=$((PASSES + P))
FAILS=$((FAILS + F))
[[ $LOAD_RC -ne 0 && $F -eq 0 ]] && fail "chat_load load exited with $LOAD_RC"
[[ $CHECK_RC -ne 0 && $F -eq 0 ]] && fail "chat_load check exited with $CHECK_RC"
echo
# Redis's own clock (election time minus signal time) is exact; the polling above adds its interval.
mapfile -t TOOK < <(sed -n 's/.*took over after \([0-9]*\) ms.*/\1/p' "$WORK/check.out")
echo "SUMMARY: $PASSES passed, $FAILS failed; announcer takeover after SIGKILL ${TOOK[0]:-?} ms" \
  "(observed by polling: $TAKEOVER_MS ms), after SIGSTOP ${TOOK[1]:-?} ms, after SIGTERM" \
  "${TOOK[2]:-?} ms (observed: $HANDOFF_MS ms); lease $LEASE_MS ms"
[[ $FAILS -eq 0 ]]
