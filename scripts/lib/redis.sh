# shellcheck shell=bash
# A private redis-server for scripts (demo, benchmarks). Sourced, not run:
#
#   source scripts/lib/redis.sh
#   start_redis [extra redis-server arguments...]   # exports REDIS_URL, REDIS_PORT, REDIS_PID, REDIS_DIR
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

stop_redis() {
  if [[ -n ${REDIS_PID:-} ]]; then
    kill -TERM "$REDIS_PID" 2>/dev/null || true
    local _
    for _ in {1..100}; do  # 5 s for a clean shutdown, then SIGKILL
      kill -0 "$REDIS_PID" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
  fi
  if [[ -n ${REDIS_DIR:-} ]]; then
    rm -rf "$REDIS_DIR"
  fi
  unset REDIS_PID REDIS_PORT REDIS_URL REDIS_DIR
}
