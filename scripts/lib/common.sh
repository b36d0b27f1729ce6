# shellcheck shell=bash
# Shared by the scripts in scripts/: where the repository and the build directory are.
# Sourced, not run. Environment: BUILD_DIR (default <repo>/build), BUILD_TYPE (default RelWithDebInfo).

COROLOCK_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$COROLOCK_ROOT/build}
case $BUILD_DIR in
  /*) ;;
  *) BUILD_DIR=$PWD/$BUILD_DIR ;;  # relative to where the script was called from, as users expect
esac
BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo}
export COROLOCK_ROOT BUILD_DIR BUILD_TYPE

log() { printf '==> %s\n' "$*" >&2; }

# ccache (picked up by CMake when installed), for build.sh's compiles and for those the tests make
# (install.*: a copy of the sources configured on its own): a fresh clone's headers are newer than
# the cache's entries, which these let it use; pch_defines for a build with COROLOCK_PCH=ON.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths relative to the checkout, so a fresh clone elsewhere (CI) hits the same cache entries; and
# the build directory left out of the hash of a -g compile (ccache puts it in by default, which made
# every debug object of a fresh clone a miss). The objects' debug info then names the directory of
# the build that filled the cache; gdb's `directory` or `set substitute-path` points it elsewhere.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$COROLOCK_ROOT}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
