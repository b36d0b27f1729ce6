#!/usr/bin/env bash
# Runs a program against a private redis-server: starts one on a free loopback port (persistence
# off), runs PROGRAM with the server's URL as its first argument, stops the server, and exits with
# the program's status. The examples' ctests use it; so can you:
#
#   scripts/with_redis.sh build/examples/quickstart/quickstart
#
# Usage: scripts/with_redis.sh PROGRAM [ARGS...]   ($COROLOCK_REDIS_SERVER may name the binary)
set -euo pipefail
if (($# < 1)); then
  sed -n '2,8p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
# shellcheck source=lib/redis.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/redis.sh"
start_redis >/dev/null
program=$1
shift
status=0
"$program" "$REDIS_URL" "$@" || status=$?
stop_redis
exit "$status"
