#!/usr/bin/env bash
# Builds and runs the demo against a Redis server: $REDIS_URL if set, else a private redis-server
# started here on a free loopback port and stopped when the demo ends.
# Usage: scripts/demo.sh [demo arguments...]
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# The demo: change these two lines to show another example.
DEMO_TARGET=inventory_race
DEMO_BIN=$BUILD_DIR/examples/inventory_race/inventory_race

"$COROLOCK_ROOT/scripts/deps.sh"
"$COROLOCK_ROOT/scripts/build.sh" "$DEMO_TARGET"

if [[ -z ${REDIS_URL:-} ]]; then
  # shellcheck source=lib/redis.sh
  source "$COROLOCK_ROOT/scripts/lib/redis.sh"
  # shellcheck disable=SC2119 # the demo's arguments are for the demo, not the server
  start_redis
fi
log "running $DEMO_TARGET against $REDIS_URL"
"$DEMO_BIN" "$REDIS_URL" "$@"
