#!/usr/bin/env bash
# Configures and builds corolock.
# Usage: scripts/build.sh [target...]        (no target: everything)
# Environment: BUILD_DIR (default build), BUILD_TYPE (default RelWithDebInfo),
#              CMAKE_ARGS (extra configure arguments, e.g. "-DCOROLOCK_SANITIZE=address,undefined").
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# ccache (picked up by CMake when installed): a fresh clone's headers are newer than the cache's
# entries, which these let it use; pch_defines for a build with COROLOCK_PCH=ON.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths relative to the checkout, so a fresh clone elsewhere (CI) hits the same cache entries; and
# the build directory left out of the hash of a -g compile (ccache puts it in by default, which made
# every debug object of a fresh clone a miss). The objects' debug info then names the directory of
# the build that filled the cache; gdb's `directory` or `set substitute-path` points it elsewhere.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$COROLOCK_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}

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
