#!/usr/bin/env bash
# Generates the API reference from the public headers with Doxygen (installed by deps.sh --docs)
# into $BUILD_DIR/docs/html. Fails on any Doxygen warning: an undocumented parameter or a broken
# reference in a public header is a bug in the documentation.
# Usage: scripts/docs.sh        then open build/docs/html/index.html
set -euo pipefail
# shellcheck source=lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

"$COROLOCK_ROOT/scripts/deps.sh" --docs
out=$BUILD_DIR/docs
mkdir -p "$out"
warnings=$out/warnings.log
log "doxygen: include/corolock -> $out/html"
# The configuration is here rather than in a Doxyfile: only what differs from Doxygen's defaults.
# The detail namespace is private (Asio's convention) and stays out of the reference; detail/async.hpp
# is read for corolock::default_token, the public default token defined there beside the machinery.
# WARN_IF_UNDOCUMENTED needs EXTRACT_ALL off (with it on Doxygen never warns): every public name
# of include/corolock must carry a comment, and each asynchronous operation its contract.
(
  cd "$COROLOCK_ROOT"
  doxygen - <<CONFIG
PROJECT_NAME           = corolock
PROJECT_BRIEF          = "Distributed locks for Boost.Asio coroutines on Redis"
OUTPUT_DIRECTORY       = $out
INPUT                  = include/corolock README.md bench/README.md
USE_MDFILE_AS_MAINPAGE = $COROLOCK_ROOT/README.md
RECURSIVE              = YES
FILE_PATTERNS          = *.hpp *.md
EXCLUDE_SYMBOLS        = detail detail::* corolock::detail corolock::detail::*
STRIP_FROM_PATH        = $COROLOCK_ROOT
STRIP_FROM_INC_PATH    = $COROLOCK_ROOT/include
FULL_PATH_NAMES        = YES
JAVADOC_AUTOBRIEF      = YES
EXTRACT_ALL            = NO
EXTRACT_PRIVATE        = NO
HIDE_UNDOC_MEMBERS     = NO
WARN_IF_UNDOCUMENTED   = YES
WARN_IF_DOC_ERROR      = YES
WARN_NO_PARAMDOC       = NO
WARN_LOGFILE           = $warnings
QUIET                  = YES
GENERATE_LATEX         = NO
GENERATE_HTML          = YES
HAVE_DOT               = NO
MACRO_EXPANSION        = YES
PREDEFINED             = BOOST_ASIO_HAS_CO_AWAIT=1
CONFIG
)
# The headers of the stores being built now (ZooKeeper, SQL, the testing store) are documented by
# their authors as they settle: until then their undocumented names are listed, not fatal. Every
# other warning fails, theirs included. Remove a folder from here once it is documented.
pending='include/corolock/(zookeeper|mysql|postgresql|sql|testing)/[^:]*:[0-9]+: warning: .* is not documented'
if [[ -s $warnings ]] && grep -Eq "$pending" "$warnings"; then
  log "doxygen: $(grep -Ec "$pending" "$warnings") undocumented names in headers still being written:"
  grep -E "$pending" "$warnings" | sed "s|$COROLOCK_ROOT/||" >&2
  pending_seen=1
fi
if grep -Evq "$pending" "$warnings"; then
  grep -Ev "$pending" "$warnings" >&2
  log "doxygen: $(grep -Evc "$pending" "$warnings") warning lines (see above): failing"
  exit 1
fi
log "doxygen: no warnings${pending_seen:+ (but the undocumented names listed above)}; open $out/html/index.html"
