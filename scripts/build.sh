#!/usr/bin/env bash
# Configures and builds corolock.
# Usage: scripts/build.sh [target...]        (no target: everything)
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
#              CMAKE_ARGS (extra configure arguments, e.g. "-DCOROLOCK_SANITIZE=address,undefined").
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

read -r -a extra_args <<<"${CMAKE_ARGS:-}"
log "configuring $BUILD_DIR ($BUILD_TYPE)"
# COROLOCK_DEVELOPER: tests, examples and benchmarks too (a user's plain configure builds the library).
cmake -S "$COROLOCK_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DCOROLOCK_DEVELOPER=ON \
  "${extra_args[@]}"

targets=()
if (($# > 0)); then
  targets=(--target "$@")
fi
log "building ${*:-all}"
cmake --build "$BUILD_DIR" -j"$(nproc)" "${targets[@]}"
