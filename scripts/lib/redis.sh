# shellcheck shell=bash
# A private redis-server for scripts (demo, benchmarks). Sourced, not run:
#
#   source scripts/lib/redis.sh
#   start_redis [extra redis-server arguments...]   # exports REDIS_URL, REDIS_PORT, REDIS_PID, REDIS_DIR
#   start_redis_extra N [arguments...]              # N more (Redlock's masters): REDIS_EXTRA_URLS (array)
#   ...                                             # stop_redis runs on exit (EXIT trap), or call it
#
# The server listens on 127.0.0.1 only, on a free port, with persistence off, in a temporary
# directory that stop_redis removes. Passwords are not supported here (the readiness check
# uses a plain PING). The EXIT trap set here replaces any earlier one: a script with its own EXIT
# trap should call stop_redis from it.

# A port below Linux's ephemeral range (32768+), so no outgoing connection holds it, that nothing
# answers on right now. bash's /dev/tcp does the probing: no python, no ss.
_corolock_pick_port() {
  local port
  for _ in {1..100}; do
    port=$((20000 + RANDOM % 12000))
    if ! (: <>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "redis.sh: no free port found" >&2
  return 1
}

start_redis() {
  if [[ -n ${REDIS_PID:-} ]]; then
    echo "redis.sh: a server is already running (pid $REDIS_PID)" >&2
    return 1
  fi
  local server=${COROLOCK_REDIS_SERVER:-redis-server}
  local dir port pid _try _wait
  dir=$(mktemp -d "${TMPDIR:-/tmp}/corolock-redis.XXXXXX")
  REDIS_DIR=$dir
  trap stop_redis EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for _try in {1..10}; do
    port=$(_corolock_pick_port)
    : >"$dir/redis.log"
    # shellcheck disable=SC2094  # the server appends to its log; nothing here reads it
    "$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
      --protected-mode no --dir "$dir" --logfile "$dir/redis.log" "$@" \
      </dev/null >>"$dir/redis.log" 2>&1 &
    pid=$!
    REDIS_PID=$pid  # from now on stop_redis (the EXIT trap) can clean it up
    for _wait in {1..200}; do
      if ! kill -0 "$pid" 2>/dev/null; then
        break  # exited
      fi
      # PONG alone could come from a stranger that won the port; the process_id proves it is ours.
      if [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]] &&
        redis-cli -h 127.0.0.1 -p "$port" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
        REDIS_PORT=$port REDIS_URL=redis://127.0.0.1:$port
        export REDIS_PORT REDIS_PID REDIS_URL REDIS_DIR
        echo "redis.sh: redis-server pid $pid on $REDIS_URL" >&2
        return 0
      fi
      sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset REDIS_PID
    # Another process taking the port between the probe and the bind is worth another try;
    # anything else (a bad argument) is not.
    grep -q "Address already in use" "$dir/redis.log" || break
  done
  echo "redis.sh: could not start $server; its log:" >&2
  tail -n 20 "$dir/redis.log" >&2 || true
  stop_redis
  return 1
}

# _corolock_stop_server PID DIR: TERM, 5 s for a clean shutdown, then KILL; removes DIR.
_corolock_stop_server() {
  if [[ -n $1 ]]; then
    kill -TERM "$1" 2>/dev/null || true
    local _
    for _ in {1..100}; do
      kill -0 "$1" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
  if [[ -n $2 ]]; then
    rm -rf "$2"
  fi
}

stop_redis() {
  stop_redis_extra
  _corolock_stop_server "${REDIS_PID:-}" "${REDIS_DIR:-}"
  unset REDIS_PID REDIS_PORT REDIS_URL REDIS_DIR
}

# More servers beside the first, each as start_redis makes it (loopback, free port, persistence
# off, its own directory); stop_redis (the EXIT trap) stops them too. Appends to the arrays
# REDIS_EXTRA_URLS, REDIS_EXTRA_PIDS, REDIS_EXTRA_DIRS. The first server's variables and the
# caller's EXIT trap are kept.
[[ -v REDIS_EXTRA_PIDS ]] || REDIS_EXTRA_PIDS=() REDIS_EXTRA_DIRS=() REDIS_EXTRA_URLS=()
start_redis_extra() {
  local n=$1 i status=0 keep_trap
  shift
  local keep=("${REDIS_PID:-}" "${REDIS_PORT:-}" "${REDIS_URL:-}" "${REDIS_DIR:-}")
  keep_trap=$(trap -p EXIT)
  for ((i = 0; i < n; i++)); do
    unset REDIS_PID REDIS_PORT REDIS_URL REDIS_DIR
    start_redis "$@" || { status=1; break; }
    REDIS_EXTRA_PIDS+=("$REDIS_PID")
    REDIS_EXTRA_DIRS+=("$REDIS_DIR")
    REDIS_EXTRA_URLS+=("$REDIS_URL")
  done
  unset REDIS_PID REDIS_PORT REDIS_URL REDIS_DIR
  if [[ -n ${keep[0]} ]]; then
    REDIS_PID=${keep[0]} REDIS_PORT=${keep[1]} REDIS_URL=${keep[2]} REDIS_DIR=${keep[3]}
    export REDIS_PID REDIS_PORT REDIS_URL REDIS_DIR
  fi
  if [[ -n $keep_trap ]]; then
    eval "$keep_trap"
  fi
  return "$status"
}

stop_redis_extra() {
  local i
  for i in "${!REDIS_EXTRA_PIDS[@]}"; do
    _corolock_stop_server "${REDIS_EXTRA_PIDS[$i]}" "${REDIS_EXTRA_DIRS[$i]}"
  done
  REDIS_EXTRA_PIDS=() REDIS_EXTRA_DIRS=() REDIS_EXTRA_URLS=()
}
