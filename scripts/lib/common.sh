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
